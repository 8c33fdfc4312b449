"""Per-hook figures and the hook-name filter in a real browser against a real
``hookgate serve``: the hooks list shows each hook's fires, block rate, p95 duration and last
fire (computed by the gateway from the audit rows), and the Audit view finds a hook's
executions by its name."""

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

ISO = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")


@pytest.fixture(scope="module")
def figures_gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    roles = {"admin": "admin", "operator": "operator", "viewer": "viewer"}
    with running_panel_gateway(tmp_path_factory.mktemp("figures-panel"), roles, master="admin",
                               callables=True) as (served, keys):
        ids = {
            name: add_callable_hook(served, keys["admin"], name, fn, f"^{tool}$")
            for name, fn, tool in (("guard", "block", "Bash"), ("passer", "allow", "Read"),
                                   ("idle", "allow", "Never"))
        }
        for n, tool in enumerate(("Bash", "Bash", "Read", "Read", "Read")):
            dispatch_tool(served, keys["operator"], tool, f"s-{n}")
        yield {"gateway": served, "keys": keys, "ids": ids}


def test_figures_are_computed_by_the_gateway(figures_gateway: dict[str, Any]) -> None:
    served: GatewayProcess = figures_gateway["gateway"]
    ids = figures_gateway["ids"]
    viewer = figures_gateway["keys"]["viewer"]
    payload = rest_json(served, "GET", "/hooks/figures?window=1h", viewer)
    assert payload["window"] == "1h" and payload["rows"] == 5 and payload["sampled"] is False
    figures = {f["hook_id"]: f for f in payload["hooks"]}
    assert set(figures) == {ids["guard"], ids["passer"]}  # the idle hook never fired
    assert (figures[ids["guard"]]["fires"], figures[ids["guard"]]["blocks"]) == (2, 2)
    assert figures[ids["guard"]]["block_rate"] == 1.0
    assert (figures[ids["passer"]]["fires"], figures[ids["passer"]]["block_rate"]) == (3, 0.0)
    rows = rest_json(served, "GET", f"/executions?hookId={ids['passer']}",
                     figures_gateway["keys"]["viewer"])["executions"]
    assert figures[ids["passer"]]["p95_ms"] == max(r["duration_ms"] for r in rows)
    assert re.match(r"^\d{4}-\d\d-\d\dT[\d:.]+Z$", figures[ids["passer"]]["last_fired"])
    assert payload["hooks"][0]["hook_id"] == ids["passer"]  # most fires first


def test_hooks_list_shows_figures(page: Any, figures_gateway: dict[str, Any]) -> None:
    from playwright.sync_api import expect

    served: GatewayProcess = figures_gateway["gateway"]
    sign_in(page, served.url, figures_gateway["keys"]["viewer"])
    guard = page.locator('tr[data-hook-name="guard"]')
    expect(guard.locator('td[data-label="Fires"]')).to_have_text("2")
    expect(guard.locator('td[data-label="Block rate"]')).to_have_text("100 %")
    expect(guard.locator('td[data-label="p95"]')).to_have_text(re.compile(r"\d.* ms$"))
    assert ISO.match(guard.locator('td[data-label="Last fired"]').inner_text())
    passer = page.locator('tr[data-hook-name="passer"]')
    expect(passer.locator('td[data-label="Fires"]')).to_have_text("3")
    expect(passer.locator('td[data-label="Block rate"]')).to_have_text("0 %")
    idle = page.locator('tr[data-hook-name="idle"]')
    expect(idle.locator('td[data-label="Fires"]')).to_have_text("0")
    expect(idle.locator('td[data-label="Last fired"]')).to_have_text("—")
    expect(page.locator(".figures-note")).to_contain_text("last 24h")
    shot(page, "hooks-list-figures")
    # The count links to the hook's executions in the Audit view.
    guard.locator('td[data-label="Fires"] a').click()
    expect(page.get_by_role("heading", level=1, name="Audit")).to_be_visible()
    expect(page.locator("tbody.exec")).to_have_count(2)


def test_audit_filters_by_hook_name(page: Any, figures_gateway: dict[str, Any]) -> None:
    from playwright.sync_api import expect

    served: GatewayProcess = figures_gateway["gateway"]
    sign_in(page, served.url, figures_gateway["keys"]["viewer"])
    page.get_by_role("link", name="Audit").click()
    rows = page.locator("tbody.exec")
    expect(rows).to_have_count(5)
    page.get_by_label("Hook name").fill("passer")
    page.get_by_role("button", name="Apply").click()
    expect(rows).to_have_count(3)
    expect(page.locator('td[data-label="Hook"]', has_text="guard")).to_have_count(0)
    page.get_by_label("Hook name").fill("no-such-hook")
    page.get_by_role("button", name="Apply").click()
    expect(page.get_by_text("No executions match")).to_be_visible()


def test_builtin_hooks_say_what_they_do(page: Any, figures_gateway: dict[str, Any]) -> None:
    from playwright.sync_api import expect

    served: GatewayProcess = figures_gateway["gateway"]
    viewer = figures_gateway["keys"]["viewer"]
    hooks = rest_json(served, "GET", "/hooks", viewer)["hooks"]
    builtins = [h for h in hooks if h["source"] == "builtin"]
    assert len(builtins) == 6
    assert all(h["description"] for h in builtins), builtins
    assert len({h["description"] for h in builtins}) == 6
    assert all(h.get("description") is None for h in hooks if h["source"] == "user")

    sign_in(page, served.url, viewer)
    described = page.locator("th.hook-name .hook-description")
    expect(described).to_have_count(6)
    guard = page.locator("tr", has=page.get_by_role("link", name="content-guard", exact=True))
    expect(guard.locator(".hook-description")).to_contain_text("Blocks a tool call")
    expect(page.locator('tr[data-hook-name="guard"] .hook-description')).to_have_count(0)
    page.get_by_role("link", name="content-guard (message_sending)").click()
    expect(page.locator(".summary")).to_contain_text("appends a visible note")


def test_changes_tab_shows_who_changed_what_with_a_diff(
    page: Any, figures_gateway: dict[str, Any]
) -> None:
    from playwright.sync_api import expect

    served: GatewayProcess = figures_gateway["gateway"]
    keys, hook_id = figures_gateway["keys"], figures_gateway["ids"]["idle"]
    rest_json(served, "PATCH", f"/hooks/{hook_id}", keys["admin"],
              json={"matcher": "^Nowhere$", "priority": 7})
    rest_json(served, "POST", f"/hooks/{hook_id}/toggle", keys["admin"], json={"enabled": False})
    revisions = rest_json(served, "GET", f"/hooks/{hook_id}/revisions", keys["viewer"])
    assert [(r["version"], r["action"]) for r in revisions["revisions"]] == [
        (3, "disabled"), (2, "updated"), (1, "created"),
    ]
    assert all(r["changed_by"] and r["changed_by"] != keys["admin"]
               for r in revisions["revisions"])  # the key's name and prefix, never the key

    sign_in(page, served.url, keys["viewer"])
    page.goto(f"{served.url}/#/hooks/{hook_id}/changes")
    rows = page.locator("tr.change-row")
    expect(rows).to_have_count(3)
    expect(rows.nth(1).locator('td[data-label="Change"]')).to_have_text("updated")
    who = rows.nth(1).locator('td[data-label="Who"]').inner_text()
    assert who == revisions["revisions"][1]["changed_by"]
    assert ISO.match(rows.nth(1).locator('td[data-label="When"]').inner_text())
    page.get_by_role("button", name="Diff v2 against the version before").click()
    diff = page.locator("figure.json-diff")
    expect(diff.locator("thead th").first).to_have_text("v1")
    expect(diff.locator("tr.diff-changed")).to_have_count(2)  # matcher and priority
    expect(diff.locator("tr.diff-changed").first).to_contain_text("^Never$")
    expect(diff).to_contain_text("^Nowhere$")
    shot(page, "hook-changes")
