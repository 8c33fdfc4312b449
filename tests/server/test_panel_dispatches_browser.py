"""The panel's dispatch records in a real browser against a real ``hookgate serve``: the Audit
view lists one record per dispatch (a dispatch no hook matched included), filters them by
decision (``ask`` too), and opens one as a trace: each hook in order with its answer, the
final decision and the approval with who decided and when, as ISO times."""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import datetime
from typing import Any

import pytest
from tests.server.gateway_process import GatewayProcess
from tests.server.panel_support import (
    add_callable_hook,
    browser,
    page,
    rest_json,
    running_panel_gateway,
    shot,
    sign_in,
)

__all__ = ["browser", "page"]  # fixtures used here

pytestmark = [pytest.mark.browser, pytest.mark.timeout(120)]

ISO = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")


def _dispatch(served: GatewayProcess, key: str, tool: str, session: str, **extra: Any) -> Any:
    return rest_json(served, "POST", "/dispatch", key, json={"event": "pre_tool_use", "input": {
        "tool_name": tool, "session_id": session, "agent_id": "agent-7",
        "tool_input": {"path": "/tmp/x"},
    }, **extra})


@pytest.fixture(scope="module")
def dispatch_gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    roles = {"admin": "admin", "operator": "operator", "approver": "approver",
             "viewer": "viewer"}
    with running_panel_gateway(tmp_path_factory.mktemp("dispatch-panel"), roles,
                               master="admin", callables=True) as (served, keys):
        admin, operator = keys["admin"], keys["operator"]
        add_callable_hook(served, admin, "first-allow", "allow", "Write", priority=10)
        add_callable_hook(served, admin, "asker", "ask", "Write", priority=5)
        add_callable_hook(served, admin, "guard", "block", "Bash", priority=0)
        blocked = _dispatch(served, operator, "Bash", "s-block")
        unmatched = _dispatch(served, operator, "Read", "s-none")
        asked = _dispatch(served, operator, "Write", "s-ask", approvalWaitS=0)
        approval_id = asked["approval"]["id"]
        rest_json(served, "POST", f"/approvals/{approval_id}/approve", keys["approver"],
                  json={"comment": "looks fine"})
        yield {
            "gateway": served, "keys": keys, "blocked": blocked["dispatch_id"],
            "unmatched": unmatched["dispatch_id"], "asked": asked["dispatch_id"],
        }


def test_dispatch_list_and_filters(page: Any, dispatch_gateway: dict[str, Any]) -> None:
    from playwright.sync_api import expect

    served: GatewayProcess = dispatch_gateway["gateway"]
    sign_in(page, served.url, dispatch_gateway["keys"]["viewer"])
    page.get_by_role("link", name="Audit").click()
    page.get_by_role("link", name="Dispatches").click()
    rows = page.locator("tr.dispatch-row")
    expect(rows).to_have_count(3)  # the dispatch no hook matched has its record too
    unmatched = page.locator(f'tr[data-dispatch-id="{dispatch_gateway["unmatched"]}"]')
    expect(unmatched.locator('td[data-label="Hooks"]')).to_have_text("0")
    expect(unmatched.locator('td[data-label="Tool"]')).to_have_text("Read")
    expect(unmatched.locator('td[data-label="Agent"]')).to_have_text("agent-7")
    expect(unmatched.locator('td[data-label="Session"]')).to_have_text("s-none")
    when = unmatched.locator('td[data-label="When"]').inner_text()
    assert ISO.match(when), when
    shot(page, "audit-dispatches")

    page.get_by_label("Decision", exact=True).select_option("ask")
    page.get_by_role("button", name="Apply").click()
    expect(rows).to_have_count(1)
    asked = rows.first
    expect(asked.locator('td[data-label="Tool"]')).to_have_text("Write")
    ask_badge = asked.locator(".badge.decision-ask")
    expect(ask_badge).to_have_text("ask")
    # The ask badge has its own style, not the plain fallback of an unknown decision.
    none_bg = page.evaluate(
        "() => { const s = document.createElement('span'); s.className = 'badge decision-none';"
        " document.body.append(s); const c = getComputedStyle(s).backgroundColor; s.remove();"
        " return c; }"
    )
    assert ask_badge.evaluate("el => getComputedStyle(el).backgroundColor") != none_bg

    page.get_by_label("Decision", exact=True).select_option("block")
    page.get_by_label("Session").fill("s-block")
    page.get_by_role("button", name="Apply").click()
    expect(rows).to_have_count(1)
    expect(rows.first).to_have_attribute("data-dispatch-id", dispatch_gateway["blocked"])


def test_dispatch_trace_shows_hooks_decision_and_approval(
    page: Any, dispatch_gateway: dict[str, Any]
) -> None:
    from playwright.sync_api import expect

    served: GatewayProcess = dispatch_gateway["gateway"]
    sign_in(page, served.url, dispatch_gateway["keys"]["viewer"])
    page.goto(served.url + "/#/audit/dispatches")
    asked = dispatch_gateway["asked"]
    page.get_by_role("link", name=f"Trace of dispatch {asked}").click()
    expect(page.get_by_role("heading", level=1)).to_have_text(f"Dispatch {asked[:8]}")
    steps = page.locator("ol.trace-steps li")
    # Chain order: the higher priority first, each with its answer.
    expect(steps).to_have_count(2)
    expect(steps.nth(0)).to_contain_text("first-allow")
    expect(steps.nth(0).locator(".badge-decision")).to_have_text("allow")
    expect(steps.nth(1)).to_contain_text("asker")
    expect(steps.nth(1).locator(".badge-decision")).to_have_text("ask")
    # The agent was answered before anyone decided (approvalWaitS 0): block, still pending
    # then; the record shows the approval as it stands now.
    expect(page.locator(".trace-final .badge-decision")).to_have_text("block")
    approval = page.locator("section.trace-approval")
    expect(approval).to_contain_text("approved")
    expect(approval).to_contain_text("looks fine")
    decided_by = approval.locator("dt:has-text('Decided by') + dd").inner_text()
    assert decided_by and decided_by != "—"
    decided_at = approval.locator("dt:has-text('Decided at') + dd").inner_text()
    assert ISO.match(decided_at), decided_at
    record = rest_json(served, "GET", f"/dispatches/{asked}", dispatch_gateway["keys"]["viewer"])
    stored = datetime.fromisoformat(record["dispatch"]["approval"]["decided_at"])
    shown = datetime.fromisoformat(decided_at.replace("Z", "+00:00"))
    assert abs((shown - stored).total_seconds()) < 0.001
    shot(page, "dispatch-trace")

    # A dispatch no hook matched says so; a blocked one names the hook and its reason.
    page.goto(served.url + f"/#/audit/dispatches/{dispatch_gateway['unmatched']}")
    expect(page.get_by_text("No hook matched this dispatch.")).to_be_visible()
    page.goto(served.url + f"/#/audit/dispatches/{dispatch_gateway['blocked']}")
    expect(steps).to_have_count(1)
    expect(steps.first).to_contain_text("blocked by test hook on pre_tool_use")
    expect(page.locator(".trace-final .badge-decision")).to_have_text("block")


def test_history_filter_offers_ask(page: Any, dispatch_gateway: dict[str, Any]) -> None:
    from playwright.sync_api import expect

    served: GatewayProcess = dispatch_gateway["gateway"]
    sign_in(page, served.url, dispatch_gateway["keys"]["viewer"])
    page.get_by_role("link", name="asker").click()
    page.get_by_role("tab", name="History").click()
    page.get_by_label("Decision", exact=True).select_option("ask")
    rows = page.locator("tbody.exec")
    expect(rows).to_have_count(1)
    expect(rows.first.locator(".badge.decision-ask")).to_have_text("ask")
