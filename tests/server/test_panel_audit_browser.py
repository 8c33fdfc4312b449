"""The panel's Audit view in a real browser against a real ``hookgate serve``: rows across
hooks (a deleted hook's included) say tool and reason; filters narrow them; the export
downloads the filtered rows; a viewer reads and exports too."""

from __future__ import annotations

import csv
import io
from collections.abc import Iterator
from pathlib import Path
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

pytestmark = [pytest.mark.browser, pytest.mark.timeout(90)]


@pytest.fixture(scope="module")
def audit_gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    roles = {"admin": "admin", "viewer": "viewer"}
    with running_panel_gateway(tmp_path_factory.mktemp("audit-panel"), roles, master="admin",
                               callables=True) as (served, keys):
        admin = keys["admin"]
        ids = {
            name: add_callable_hook(served, admin, name, fn, tool)
            for name, fn, tool in (("guard", "block", "Bash"), ("asker", "ask", "Write"))
        }
        for n, tool in enumerate(("Bash", "Write", "Bash")):
            rest_json(served, "POST", "/dispatch", admin, json={"event": "pre_tool_use", "input": {
                "tenant_id": "acme", "tool_name": tool, "session_id": f"sess-{n}",
                "agent_id": "agent-1", "tool_input": {"path": f"/tmp/f{n}"},
            }, "approvalWaitS": 0})  # the asker's dispatch answers pending, not after 60 s
        rest_json(served, "DELETE", f"/hooks/{ids['asker']}", admin)
        yield {"gateway": served, "keys": keys, "ids": ids}


def test_audit_view_filters_and_exports(page: Any, audit_gateway: dict[str, Any]) -> None:
    from playwright.sync_api import expect

    served: GatewayProcess = audit_gateway["gateway"]
    sign_in(page, served.url, audit_gateway["keys"]["viewer"])
    page.get_by_role("link", name="Audit").click()
    expect(page.get_by_role("heading", level=1, name="Audit")).to_be_visible()
    rows = page.locator("tbody.exec")
    expect(rows).to_have_count(3)
    # Across hooks: the hook and event columns are there; the deleted hook is marked.
    expect(page.locator('td[data-label="Hook"]', has_text="(deleted)")).to_have_count(1)
    expect(page.locator('td[data-label="Event"]').first).to_have_text("pre_tool_use")
    shot(page, "audit")

    page.get_by_label("Tool").fill("Bash")
    page.get_by_role("button", name="Apply").click()
    expect(rows).to_have_count(2)
    expect(page.locator('td[data-label="Reason"]').first).to_contain_text("blocked by test hook")
    page.get_by_label("Session").fill("sess-2")
    page.get_by_role("button", name="Apply").click()
    expect(rows).to_have_count(1)

    with page.expect_download() as info:
        page.get_by_role("button", name="Export CSV").click()
    text = Path(info.value.path()).read_text()
    table = list(csv.DictReader(io.StringIO(text)))
    assert [(r["tool_name"], r["session_id"]) for r in table] == [("Bash", "sess-2")]

    # A deleted hook's history by its id.
    page.get_by_label("Tool").fill("")
    page.get_by_label("Session").fill("")
    page.get_by_label("Hook id").fill(audit_gateway["ids"]["asker"])
    page.get_by_role("button", name="Apply").click()
    expect(rows).to_have_count(1)
    expect(rows.first.locator('td[data-label="Tool"]')).to_have_text("Write")
    with page.expect_download() as info:
        page.get_by_role("button", name="Export JSON").click()
    assert '"Write"' in Path(info.value.path()).read_text()


def test_events_view_and_simulation(page: Any, audit_gateway: dict[str, Any]) -> None:
    from playwright.sync_api import expect

    served: GatewayProcess = audit_gateway["gateway"]
    sign_in(page, served.url, audit_gateway["keys"]["admin"])
    page.get_by_role("link", name="Events").click()
    expect(page.get_by_role("heading", level=1, name="Events")).to_be_visible()
    section = page.locator('section.event-chain[data-event="pre_tool_use"]')
    expect(section.locator("ol.chain li")).to_have_count(1)  # the deleted hook is gone
    expect(section.locator("ol.chain li")).to_contain_text("matcher Bash")
    section.get_by_role("button", name="Simulate pre_tool_use").click()
    section.get_by_label("Sample event for pre_tool_use").fill(
        '{"tool_name": "Bash", "tool_input": {"command": "ls"}}'
    )
    section.get_by_role("button", name="Simulate pre_tool_use").click()
    result = section.locator(".simulation-result")
    expect(result).to_contain_text("Outcome: block")
    expect(result.locator("tbody tr")).to_have_count(1)
    expect(result.locator('td[data-label="Reason or skip"]')).to_have_text(
        "blocked by test hook on pre_tool_use"
    )
    shot(page, "events-simulation")
    # A simulation writes no audit row: still the three dispatches.
    rows = rest_json(served, "GET", "/executions?limit=50", audit_gateway["keys"]["admin"])
    assert len(rows["executions"]) == 3


def test_viewer_cannot_simulate_and_sees_why(page: Any, audit_gateway: dict[str, Any]) -> None:
    from playwright.sync_api import expect

    served: GatewayProcess = audit_gateway["gateway"]
    sign_in(page, served.url, audit_gateway["keys"]["viewer"])
    page.goto(served.url + "/#/events")
    section = page.locator('section.event-chain[data-event="pre_tool_use"]')
    expect(section.get_by_role("button", name="Simulate pre_tool_use")).to_be_disabled()
    expect(section).to_contain_text("needs the operator or admin role")
    expect(page.get_by_text("Something went wrong")).to_have_count(0)


def test_form_sets_on_error(page: Any, audit_gateway: dict[str, Any]) -> None:
    from playwright.sync_api import expect

    served: GatewayProcess = audit_gateway["gateway"]
    admin = audit_gateway["keys"]["admin"]
    hook_id = audit_gateway["ids"]["guard"]
    sign_in(page, served.url, admin)
    page.goto(f"{served.url}/#/hooks/{hook_id}/edit")
    page.get_by_label("On error").select_option("allow")
    page.get_by_role("button", name="Save changes").click()
    expect(page.get_by_role("heading", level=1, name="guard", exact=True)).to_be_visible()
    assert rest_json(served, "GET", f"/hooks/{hook_id}", admin)["hook"]["on_error"] == "allow"
