"""The panel's Replay, in a real browser against a real ``hookgate serve`` that recorded
traffic: a hook's Replay tab replays the tenant's records with the edited definition in
place, and the Import page replays a hooks file before it is applied. A viewer gets no
Replay."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.server.panel_support import (
    browser,
    dispatch_tool,
    page,
    rest_json,
    running_panel_gateway,
    shot,
    sign_in,
)
from tests.support.waiting import wait_until

__all__ = ["browser", "page"]  # fixtures used here

pytestmark = [pytest.mark.browser, pytest.mark.timeout(180)]

RULE = {"limit": {"count": 2, "per": "session", "window_s": 2_592_000}}


@pytest.fixture(scope="module")
def replay_gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    roles = {"admin": "admin", "viewer": "viewer"}
    with running_panel_gateway(tmp_path_factory.mktemp("replay-panel"), roles) as (served, keys):
        hook_id = rest_json(served, "POST", "/hooks", keys["admin"], json={
            "event": "pre_tool_use", "handler_type": "rule", "scope": "tenant",
            "name": "exec-budget", "matcher": "^exec$", "config": RULE,
        })["hookId"]
        decisions = [
            dispatch_tool(served, keys["admin"], "exec", "s-1", tool_input={"cmd": c})
            for c in ("ls", "make", "make test", "git status")
        ]
        assert [d["decision"] for d in decisions] == ["allow", "allow", "block", "block"]

        def committed() -> bool:
            page_ = rest_json(served, "GET", "/dispatches?sessionId=s-1", keys["admin"])
            return len(page_["dispatches"]) == 4

        wait_until(committed, "the four dispatch records")
        yield {"gateway": served, "keys": keys, "hook_id": hook_id,
               "ids": [d["dispatch_id"] for d in decisions]}


def test_replay_tab_replays_the_edited_hook(page: Any, replay_gateway: dict[str, Any]) -> None:
    from playwright.sync_api import expect

    served = replay_gateway["gateway"]
    sign_in(page, served.url, replay_gateway["keys"]["admin"])
    page.goto(f"{served.url}/#/hooks/{replay_gateway['hook_id']}/replay")
    box = page.get_by_label("Hook definition (JSON)")
    expect(box).to_be_visible()
    text = box.input_value()
    assert '"count": 2' in text
    box.fill(text.replace('"count": 2', '"count": 3'))
    page.get_by_role("button", name="Replay", exact=True).click()
    report = page.locator(".replay-report")
    expect(report.locator(".replay-summary")).to_have_text(
        "Replayed 4 dispatches: 1 would change, 0 unknown, 0 unreadable.")
    row = report.locator("tbody tr")
    expect(row).to_have_count(1)
    assert row.get_attribute("data-dispatch") == replay_gateway["ids"][2]
    expect(row.locator("td").nth(3)).to_have_text("block")
    expect(row.locator("td").nth(4)).to_have_text("allow")
    shot(page, "replay-tab")
    # Nothing was saved: the hook still allows two.
    hook = rest_json(served, "GET", f"/hooks/{replay_gateway['hook_id']}",
                     replay_gateway["keys"]["admin"])["hook"]
    assert hook["config"]["limit"]["count"] == 2
    # A definition that is not JSON is named, and nothing runs.
    box.fill("{not json")
    page.get_by_role("button", name="Replay", exact=True).click()
    expect(page.locator(".replay-result [role=alert]")).to_contain_text("Not valid JSON")


def test_import_page_replays_a_file(page: Any, replay_gateway: dict[str, Any],
                                    tmp_path: Path) -> None:
    from playwright.sync_api import expect

    served = replay_gateway["gateway"]
    candidate = tmp_path / "candidate.yaml"
    candidate.write_text(
        "hooks:\n  - name: exec-budget\n    event: pre_tool_use\n    handler_type: rule\n"
        "    matcher: \"^exec$\"\n    config: {limit: {count: 4, per: session, "
        "window_s: 2592000}}\n")
    sign_in(page, served.url, replay_gateway["keys"]["admin"])
    page.goto(f"{served.url}/#/hooks/import")
    page.get_by_label("Hooks file").set_input_files(str(candidate))
    page.get_by_role("button", name="Replay this file").click()
    expect(page.locator(".replay-summary")).to_have_text(
        "Replayed 4 dispatches: 2 would change, 0 unknown, 0 unreadable.")
    expect(page.locator(".replay-report tbody tr")).to_have_count(2)
    shot(page, "replay-import")


def test_a_viewer_has_no_replay(page: Any, replay_gateway: dict[str, Any]) -> None:
    from playwright.sync_api import expect

    served = replay_gateway["gateway"]
    sign_in(page, served.url, replay_gateway["keys"]["viewer"])
    page.goto(f"{served.url}/#/hooks/{replay_gateway['hook_id']}/replay")
    expect(page.get_by_text("Testing needs the operator role").first).to_be_visible()
    expect(page.get_by_label("Hook definition (JSON)")).to_have_count(0)
