"""Shadow hooks in the panel, in a real browser against a real ``hookgate serve``: the list
marks them (badge, Mode column and filter) with their would-block count from the gateway's
figures, a dispatch's trace marks their step, an operator promotes one with the Promote
button (a viewer gets none), and the form sets the mode."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest
from tests.server.gateway_process import GatewayProcess
from tests.server.panel_support import (
    add_callable_hook,
    browser,
    dispatch_tool,
    page,
    rest_json,
    running_panel_gateway,
    shot,
    sign_in,
)

__all__ = ["browser", "page"]  # fixtures used here

pytestmark = [pytest.mark.browser, pytest.mark.timeout(120)]


@pytest.fixture(scope="module")
def shadow_gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    roles = {"admin": "admin", "operator": "operator", "viewer": "viewer"}
    with running_panel_gateway(tmp_path_factory.mktemp("shadow-panel"), roles, master="admin",
                               callables=True) as (served, keys):
        ids = {
            name: add_callable_hook(served, keys["admin"], name, fn, f"^{tool}$", mode=mode)
            for name, fn, tool, mode in (("shadow-rm", "block", "Bash", "shadow"),
                                         ("guard", "allow", "Read", "enforce"))
        }
        dispatches = []
        for n, tool in enumerate(("Bash", "Bash", "Bash", "Read")):
            outcome = dispatch_tool(served, keys["operator"], tool, f"s-{n}")
            assert outcome["decision"] == "allow"
            dispatches.append(outcome["dispatch_id"])
        yield {"gateway": served, "keys": keys, "ids": ids, "dispatches": dispatches}


def test_the_list_shows_shadow_hooks_apart_with_their_would_blocks(
    page: Any, shadow_gateway: dict[str, Any]
) -> None:
    from playwright.sync_api import expect

    served: GatewayProcess = shadow_gateway["gateway"]
    sign_in(page, served.url, shadow_gateway["keys"]["viewer"])
    shadow = page.locator('tr[data-hook-name="shadow-rm"]')
    expect(shadow.locator(".badge-shadow")).to_have_text("shadow")
    expect(shadow.locator('td[data-label="Mode"]')).to_have_text("shadow")
    expect(shadow.locator('td[data-label="Would block"]')).to_have_text("3")
    expect(shadow.locator('td[data-label="Block rate"]')).to_have_text("0 %")
    guard = page.locator('tr[data-hook-name="guard"]')
    expect(guard.locator('td[data-label="Mode"]')).to_have_text("enforce")
    expect(guard.locator('td[data-label="Would block"]')).to_have_text("—")
    expect(guard.locator(".badge-shadow")).to_have_count(0)
    # A viewer changes nothing: no Promote button.
    expect(page.get_by_role("button", name="Promote")).to_have_count(0)
    shot(page, "hooks-list-shadow")
    # The Mode filter.
    page.get_by_label("Mode").select_option("shadow")
    expect(page.locator("tr[data-hook-name]")).to_have_count(1)
    expect(page.locator('tr[data-hook-name="shadow-rm"]')).to_be_visible()


def test_a_dispatch_trace_marks_the_shadow_step(
    page: Any, shadow_gateway: dict[str, Any]
) -> None:
    from playwright.sync_api import expect

    served: GatewayProcess = shadow_gateway["gateway"]
    sign_in(page, served.url, shadow_gateway["keys"]["viewer"])
    page.goto(f"{served.url}/#/audit/dispatches/{shadow_gateway['dispatches'][0]}")
    step = page.locator('li.trace-step[data-mode="shadow"]')
    expect(step).to_have_count(1)
    expect(step.locator(".badge-decision")).to_have_text("would block")
    expect(step.locator(".badge-shadow")).to_be_visible()
    expect(step).to_contain_text("blocked by test hook on pre_tool_use")


def test_an_operator_promotes_a_shadow_hook(page: Any, shadow_gateway: dict[str, Any]) -> None:
    from playwright.sync_api import expect

    served: GatewayProcess = shadow_gateway["gateway"]
    keys, ids = shadow_gateway["keys"], shadow_gateway["ids"]
    sign_in(page, served.url, keys["operator"])
    row = page.locator('tr[data-hook-name="shadow-rm"]')
    # An operator may not edit (no Edit button) but may promote.
    expect(row.get_by_role("link", name="Edit")).to_have_count(0)
    row.get_by_role("button", name="Promote").click()
    page.get_by_role("dialog").get_by_role("button", name="Promote").click()
    expect(page.get_by_text("shadow-rm now enforces")).to_be_visible()
    row = page.locator('tr[data-hook-name="shadow-rm"]')
    expect(row.locator('td[data-label="Mode"]')).to_have_text("enforce")
    expect(row.locator(".badge-shadow")).to_have_count(0)
    expect(row.get_by_role("button", name="Promote")).to_have_count(0)
    stored = rest_json(served, "GET", f"/hooks/{ids['shadow-rm']}", keys["viewer"])["hook"]
    assert stored["mode"] == "enforce"
    blocked = served.rest("POST", "/api/v1/dispatch", keys["operator"], json={
        "event": "pre_tool_use", "input": {"tool_name": "Bash", "tool_input": {}},
    }).json()
    assert blocked["decision"] == "block"


def test_the_form_sets_the_mode(page: Any, shadow_gateway: dict[str, Any]) -> None:
    from playwright.sync_api import expect

    served: GatewayProcess = shadow_gateway["gateway"]
    keys, ids = shadow_gateway["keys"], shadow_gateway["ids"]
    sign_in(page, served.url, keys["admin"])
    page.goto(f"{served.url}/#/hooks/{ids['guard']}/edit")
    mode = page.get_by_label("Mode", exact=True)
    expect(mode).to_have_value("enforce")
    mode.select_option("shadow")
    page.get_by_role("button", name="Save changes").click()
    expect(page.get_by_role("heading", level=1, name="guard", exact=True)).to_be_visible()
    stored = rest_json(served, "GET", f"/hooks/{ids['guard']}", keys["admin"])["hook"]
    assert stored["mode"] == "shadow"
    page.goto(f"{served.url}/#/hooks")
    expect(page.locator('tr[data-hook-name="guard"] .badge-shadow')).to_be_visible()
    assert re.match(r"^\d+$", page.locator(
        'tr[data-hook-name="guard"] td[data-label="Would block"]').inner_text())
