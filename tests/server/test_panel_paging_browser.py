"""Paging by cursor in a real browser against a real ``hookgate serve``: the Audit views
(hook executions, dispatch records) and a hook's History tab show one page, go Older to the
rest and Newer back to the same first page, and a new filter starts again at page 1."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from tests.server.gateway_process import GatewayProcess
from tests.server.panel_support import (
    add_callable_hook,
    browser,
    dispatch_tool,
    page,
    running_panel_gateway,
    sign_in,
)

__all__ = ["browser", "page"]  # fixtures used here

pytestmark = [pytest.mark.browser, pytest.mark.timeout(180)]

#: One more than the Audit views' page (25), six more than the History tab's (20).
DISPATCHES = 26


@pytest.fixture(scope="module")
def paging_gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    roles = {"admin": "admin", "viewer": "viewer"}
    with running_panel_gateway(tmp_path_factory.mktemp("paging-panel"), roles, master="admin",
                               callables=True) as (served, keys):
        hook_id = add_callable_hook(served, keys["admin"], "guard", "block", "^Bash$")
        for n in range(DISPATCHES):  # sync audit mode: each answer comes once it is committed
            dispatch_tool(served, keys["admin"], "Bash", f"s-{n:02d}")
        yield {"gateway": served, "keys": keys, "hook_id": hook_id}


def _walk(page: Any, rows: Any, first: int, rest: int) -> None:
    """Page 1 holds ``first`` rows, Older shows ``rest`` (none of page 1), Newer page 1 again."""
    from playwright.sync_api import expect

    older = page.get_by_role("button", name="Older")
    newer = page.get_by_role("button", name="Newer")
    expect(rows).to_have_count(first)
    expect(newer).to_be_disabled()
    page_one = rows.evaluate_all("els => els.map(e => e.textContent)")
    older.click()
    expect(page.get_by_text("Page 2")).to_be_visible()
    expect(rows).to_have_count(rest)
    expect(older).to_be_disabled()
    page_two = rows.evaluate_all("els => els.map(e => e.textContent)")
    assert not set(page_one) & set(page_two)
    newer.click()
    expect(page.get_by_text("Page 1")).to_be_visible()
    expect(rows).to_have_count(first)
    assert rows.evaluate_all("els => els.map(e => e.textContent)") == page_one


def test_dispatch_records_page_older_and_newer(
    page: Any, paging_gateway: dict[str, Any]
) -> None:
    from playwright.sync_api import expect

    served: GatewayProcess = paging_gateway["gateway"]
    sign_in(page, served.url, paging_gateway["keys"]["viewer"])
    page.goto(served.url + "/#/audit/dispatches")
    rows = page.locator("tr.dispatch-row")
    _walk(page, rows, 25, DISPATCHES - 25)
    # A filter applied on page 2 starts again at page 1.
    page.get_by_role("button", name="Older").click()
    expect(page.get_by_text("Page 2")).to_be_visible()
    page.get_by_label("Session").fill("s-03")
    page.get_by_role("button", name="Apply").click()
    expect(page.get_by_text("Page 1")).to_be_visible()
    expect(rows).to_have_count(1)


def test_audit_executions_page_older_and_newer(
    page: Any, paging_gateway: dict[str, Any]
) -> None:
    served: GatewayProcess = paging_gateway["gateway"]
    sign_in(page, served.url, paging_gateway["keys"]["viewer"])
    page.goto(served.url + "/#/audit")
    _walk(page, page.locator("tbody.exec"), 25, DISPATCHES - 25)


def test_history_tab_pages_by_twenty(page: Any, paging_gateway: dict[str, Any]) -> None:
    served: GatewayProcess = paging_gateway["gateway"]
    sign_in(page, served.url, paging_gateway["keys"]["viewer"])
    page.goto(f"{served.url}/#/hooks/{paging_gateway['hook_id']}/history")
    _walk(page, page.locator("tbody.exec"), 20, DISPATCHES - 20)
