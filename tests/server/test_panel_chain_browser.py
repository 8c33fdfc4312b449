"""The panel's Audit integrity view in a real browser against a real ``hookgate serve``: an
admin sees each chain's verdict, records, hook rows and head, downloads the head in the form
``hookgate audit verify --anchor`` reads, and sees a hook row altered in the database named;
a viewer gets no link and a refusal."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
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

from hookgate.store.location import SQLITE_FILE_NAME

__all__ = ["browser", "page"]  # fixtures used here

pytestmark = [pytest.mark.browser, pytest.mark.timeout(120)]


@pytest.fixture(scope="module")
def chain_gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    roles = {"master": "admin", "admin": "admin", "viewer": "viewer"}
    with running_panel_gateway(tmp_path_factory.mktemp("chain-panel"), roles, master="master",
                               callables=True) as (served, keys):
        add_callable_hook(served, keys["master"], "guard", "block", "Bash")
        for n in range(3):  # sync audit mode: each answer comes once its rows are committed
            dispatch_tool(served, keys["admin"], "Bash", f"s-{n}", tool_input={"n": n})
        yield {"gateway": served, "keys": keys}


def test_admin_sees_the_chain_downloads_its_head_and_a_broken_hook_row(
    page: Any, chain_gateway: dict[str, Any]
) -> None:
    from playwright.sync_api import expect

    served: GatewayProcess = chain_gateway["gateway"]
    sign_in(page, served.url, chain_gateway["keys"]["admin"])
    page.get_by_role("link", name="Audit").click()
    page.get_by_role("link", name="Integrity").click()
    expect(page.get_by_role("heading", level=1, name="Audit integrity")).to_be_visible()
    row = page.locator('tr.chain-row[data-tenant="acme"]')
    expect(row.locator('td[data-label="Verdict"]')).to_have_text("intact")
    expect(row.locator('td[data-label="Records"]')).to_have_text("3")
    expect(row.locator('td[data-label="Hook rows"]')).to_have_text("3")
    expect(row.locator('td[data-label="Places"]')).to_have_text("1–3")
    shot(page, "audit-integrity")

    with page.expect_download() as info:
        page.get_by_role("button", name="Download head").click()
    (head,) = orjson.loads(Path(info.value.path()).read_bytes())["heads"]
    api = rest_json(served, "GET", "/audit/verify", chain_gateway["keys"]["admin"])
    assert head == api["tenants"][0]["head"] and head["seq"] == 3

    with sqlite3.connect(served.data_dir / SQLITE_FILE_NAME, timeout=30) as db:
        victim, dispatch_id = db.execute(
            "SELECT id, dispatch_id FROM hook_executions ORDER BY seq LIMIT 1 OFFSET 1"
        ).fetchone()
        db.execute("UPDATE hook_executions SET decision = 'allow' WHERE id = ?", (victim,))
    page.get_by_role("button", name="Check again").click()
    expect(row.locator('td[data-label="Verdict"]')).to_have_text("BROKEN")
    expect(row.locator('td[data-label="Problem"]')).to_contain_text(
        f"place 2: altered: hook row {victim} of record {dispatch_id}"
    )
    expect(page.get_by_role("status").filter(has_text="BROKEN")).to_be_visible()


def test_viewer_has_no_integrity_link_and_is_refused(
    page: Any, chain_gateway: dict[str, Any]
) -> None:
    from playwright.sync_api import expect

    served: GatewayProcess = chain_gateway["gateway"]
    sign_in(page, served.url, chain_gateway["keys"]["viewer"])
    page.get_by_role("link", name="Audit").click()
    expect(page.get_by_role("link", name="Dispatches")).to_be_visible()
    expect(page.get_by_role("link", name="Integrity")).to_have_count(0)
    page.goto(served.url + "/#/audit/chain")
    expect(page.get_by_text("Checking the audit chain needs the admin role")).to_be_visible()
