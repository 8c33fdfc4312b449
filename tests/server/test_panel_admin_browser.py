"""The panel's admin tools in a real browser against a real ``hookgate serve``: API keys
(create with role and tenant, the secret once, list, revoke), hooks files (export, import with
a per-hook report), the tenant picker of master scope, the save-time SSRF warning, and every
view as a viewer and an operator: a control the role may not use is hidden or disabled with
the reason, never a "Something went wrong" box."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from tests.server.gateway_process import GatewayProcess
from tests.server.panel_support import (
    browser,
    page,
    rest_json,
    running_panel_gateway,
    shot,
    sign_in,
)

__all__ = ["browser", "page"]  # fixtures used here

pytestmark = [pytest.mark.browser, pytest.mark.timeout(120)]

SECRET = "Bearer admin-browser-secret-51c9"
WRONG = "Something went wrong"


def _webhook(name: str, tenant: str, **extra: Any) -> dict[str, Any]:
    return {
        "event": "pre_tool_use", "handler_type": "http", "scope": "tenant", "tenant_id": tenant,
        "name": name, "matcher": "^Bash$",
        "config": {"url": "http://127.0.0.1:9/hook", "headers": {"Authorization": SECRET}},
        **extra,
    }


@pytest.fixture(scope="module")
def admin_gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    roles = {"master": "admin", "admin": "admin", "operator": "operator", "viewer": "viewer"}
    with running_panel_gateway(tmp_path_factory.mktemp("admin-panel"), roles,
                               master="master") as (served, keys):
        master = keys["master"]
        def create(hook: dict[str, Any]) -> str:
            return str(rest_json(served, "POST", "/hooks", master, json=hook)["hookId"])

        ids = {
            "acme": create(_webhook("acme-guard", "acme")),
            "beta": create(_webhook("beta-guard", "beta")),
            # Host code, made by the master: tenant keys may not test it.
            "cmd": create({
                "event": "stop", "handler_type": "command", "scope": "tenant",
                "tenant_id": "acme", "name": "acme-cmd", "config": {"command": "true"},
            }),
        }
        rest_json(served, "POST", "/dispatch", master, json={"event": "pre_tool_use", "input": {
            "tenant_id": "beta", "tool_name": "Bash", "session_id": "beta-session",
            "tool_input": {"command": "ls"}}})
        yield {"gateway": served, "keys": keys, "ids": ids}


def test_admin_creates_a_key_sees_it_once_and_revokes_it(
    page: Any, admin_gateway: dict[str, Any]
) -> None:
    from playwright.sync_api import expect

    served: GatewayProcess = admin_gateway["gateway"]
    sign_in(page, served.url, admin_gateway["keys"]["admin"])
    page.get_by_role("link", name="Keys").click()
    expect(page.get_by_role("heading", level=1, name="API keys")).to_be_visible()
    # A tenant admin: its own tenant only, and no master scope to give.
    expect(page.get_by_label("Tenant")).to_have_value("acme")
    expect(page.get_by_label("Tenant")).to_have_attribute("readonly", "")
    expect(page.get_by_label("Master scope")).to_have_count(0)
    page.get_by_label("Name").fill("ci reader")
    page.get_by_label("Role").select_option("viewer")
    page.get_by_role("button", name="Create key").click()
    secret = page.locator(".secret-value")
    expect(secret).to_have_text(re.compile(r"^hg-"))
    token = secret.inner_text()
    expect(page.locator(".secret-once")).to_contain_text("only time the secret is shown")
    row = page.locator("tr", has_text="ci reader")
    expect(row).to_contain_text("viewer")
    expect(page.locator("tr", has_text="(this key)")).to_have_count(1)
    shot(page, "keys")
    # The secret is in the page once; a reload never brings it back.
    page.get_by_role("button", name="I stored it: hide").click()
    expect(page.locator(".secret-value")).to_have_count(0)
    page.reload()
    expect(row).to_be_visible()
    assert token not in page.content()
    # The new key signs in; revoked, the gateway refuses it.
    assert served.rest("GET", "/api/v1/hooks", token).status_code == 200
    row.get_by_role("button", name="Revoke ci reader").click()
    page.locator("dialog").get_by_role("button", name="Revoke").click()
    expect(page.locator("tr", has_text="ci reader")).to_have_count(0)
    assert served.rest("GET", "/api/v1/hooks", token).status_code == 401
    page.get_by_label("Show revoked keys").check()
    expect(page.locator("tr.is-revoked", has_text="ci reader")).to_have_count(1)


def test_master_picks_a_tenant_and_mints_a_key_for_it(
    page: Any, admin_gateway: dict[str, Any]
) -> None:
    from playwright.sync_api import expect

    served: GatewayProcess = admin_gateway["gateway"]
    sign_in(page, served.url, admin_gateway["keys"]["master"])
    names = page.locator("tbody tr th.hook-name a")
    expect(page.locator("tr", has_text="beta-guard")).to_have_count(1)  # every tenant
    expect(page.locator("tr", has_text="acme-guard")).to_have_count(1)
    picker = page.get_by_label("Viewing")
    picker.fill("beta")
    picker.press("Enter")
    expect(page.get_by_role("heading", level=1, name="Hooks · tenant beta")).to_be_visible()
    expect(names).to_have_text(["beta-guard"])
    shot(page, "tenant-picker")
    # The same tenant everywhere: events, audit, keys.
    page.get_by_role("link", name="Events").click()
    expect(page.get_by_text("For tenant beta")).to_be_visible()
    chain = page.locator('section.event-chain[data-event="pre_tool_use"] ol.chain li')
    expect(chain).to_contain_text("beta-guard")
    page.get_by_role("link", name="Audit").click()
    expect(page.locator("tbody.exec")).to_have_count(1)
    expect(page.locator('td[data-label="Hook"]').first).to_contain_text("beta-guard")
    page.get_by_role("link", name="Keys").click()
    expect(page.get_by_label("Tenant")).to_have_value("beta")
    page.get_by_label("Name").fill("beta operator")
    page.get_by_label("Role").select_option("operator")
    page.get_by_role("button", name="Create key").click()
    expect(page.locator(".secret-once")).to_contain_text("operator of tenant beta")
    minted = page.locator(".secret-value").inner_text()
    assert rest_json(served, "GET", "/info", minted)["tenantId"] == "beta"
    # Back to every tenant.
    page.get_by_label("Viewing").fill("")
    page.get_by_label("Viewing").press("Enter")
    page.get_by_role("link", name="Hooks").first.click()
    expect(page.get_by_role("heading", level=1, name="Hooks")).to_be_visible()
    expect(page.locator("tr", has_text="acme-guard")).to_have_count(1)


def test_export_then_import_with_a_per_hook_report(
    page: Any, admin_gateway: dict[str, Any], tmp_path: Path
) -> None:
    from playwright.sync_api import expect

    served: GatewayProcess = admin_gateway["gateway"]
    sign_in(page, served.url, admin_gateway["keys"]["admin"])
    with page.expect_download() as info:
        page.get_by_role("button", name="Export YAML").click()
    download = info.value
    assert download.suggested_filename == "hooks-acme.yaml"
    text = Path(download.path()).read_text()
    assert SECRET not in text
    exported = yaml.safe_load(text)["hooks"]
    assert {h["name"] for h in exported} >= {"acme-guard", "acme-cmd"}
    # A file with one broken hook: each hook's line, nothing written.
    broken = tmp_path / "broken.yaml"
    broken.write_text(yaml.safe_dump({"hooks": [
        {"event": "stop", "handler_type": "http", "name": "imported-ok",
         "config": {"url": "http://127.0.0.1:9/ok"}},
        {"event": "stop", "handler_type": "http", "name": "imported-bad", "matcher": "([",
         "config": {"url": "http://127.0.0.1:9/bad"}},
    ]}))
    page.get_by_role("link", name="Import…").click()
    expect(page.get_by_role("heading", level=1, name="Import hooks")).to_be_visible()
    page.get_by_label("Hooks file").set_input_files(str(broken))
    report = page.locator(".import-report")
    expect(report).to_contain_text("1 of 2 hooks have problems: nothing was imported")
    expect(report.locator('tr[data-action="invalid"]')).to_contain_text("matcher")
    expect(report.get_by_role("button", name="Apply import")).to_have_count(0)
    shot(page, "import-report")
    # A good file: checked first, then applied.
    good = tmp_path / "good.yaml"
    good.write_text(yaml.safe_dump({"hooks": [
        {"event": "stop", "handler_type": "http", "name": "imported-ok",
         "config": {"url": "http://127.0.0.1:9/ok"}},
    ]}))
    page.get_by_label("Hooks file").set_input_files(str(good))
    expect(report.locator('tr[data-action="create"]')).to_contain_text("will be created")
    report.get_by_role("button", name="Apply import").click()
    expect(report).to_contain_text("Imported good.yaml")
    admin = admin_gateway["keys"]["admin"]
    names = {h["name"] for h in rest_json(served, "GET", "/hooks", admin)["hooks"]}
    assert "imported-ok" in names and "imported-bad" not in names


def test_saving_a_private_webhook_url_warns_with_the_allow_list(
    page: Any, admin_gateway: dict[str, Any]
) -> None:
    from playwright.sync_api import expect

    served: GatewayProcess = admin_gateway["gateway"]
    sign_in(page, served.url, admin_gateway["keys"]["admin"])
    page.get_by_role("link", name="New hook").click()
    page.get_by_label("Name").fill("internal audit sink")
    page.get_by_label("Event").select_option("stop")
    page.get_by_role("radio", name=re.compile(r"^http")).check()
    page.get_by_label("Webhook URL").fill("http://10.20.30.40/hook")
    page.get_by_role("button", name="Create hook").click()
    # Saved, and back in the form as an edit, with the warning at the URL.
    expect(page.get_by_role("heading", level=1, name="Edit internal audit sink")).to_be_visible()
    expect(page.locator(".form-warnings")).to_contain_text("Saved, with a warning")
    warning = page.locator('[data-field="config.url"] .field-warning')
    expect(warning).to_contain_text("private address")
    expect(warning).to_contain_text("HOOKGATE_SSRF_ALLOWLIST")
    shot(page, "ssrf-warning")
    # Fixed to an allowed address: saved without a warning, on to the hook.
    page.get_by_label("Webhook URL").fill("http://127.0.0.1:9/hook")
    page.get_by_role("button", name="Save changes").click()
    saved_page = page.get_by_role("heading", level=1, name="internal audit sink", exact=True)
    expect(saved_page).to_be_visible()


@pytest.mark.parametrize("role", ["viewer", "operator"])
def test_every_view_is_role_aware(page: Any, admin_gateway: dict[str, Any], role: str) -> None:
    from playwright.sync_api import expect

    served: GatewayProcess = admin_gateway["gateway"]
    ids = admin_gateway["ids"]
    sign_in(page, served.url, admin_gateway["keys"][role])
    # The list: export for everyone; no New hook, no Import, no Keys link.
    expect(page.get_by_role("button", name="Export YAML")).to_be_visible()
    expect(page.get_by_role("link", name="New hook")).to_have_count(0)
    expect(page.get_by_role("link", name="Import…")).to_have_count(0)
    expect(page.get_by_role("link", name="Keys")).to_have_count(0)
    expect(page.get_by_label("Viewing")).to_have_count(0)  # no tenant picker without master
    cmd_row = page.locator("tr", has_text="acme-cmd")
    if role == "operator":
        refused = cmd_row.get_by_role("button", name=re.compile("^Test: .*admins only"))
        expect(refused).to_be_disabled()
        guard_row = page.locator("tr", has_text="acme-guard")
        expect(guard_row.get_by_role("link", name="Test")).to_be_visible()
    else:
        expect(cmd_row.get_by_role("link", name="Test")).to_have_count(0)
    # Every route, typed in directly: a reason, never an error box.
    test_reason = "admins only" if role == "operator" else "needs the operator role"
    visits = {
        "#/hooks/new": ("New hook", "Only admins can create or edit hooks"),
        f"#/hooks/{ids['acme']}/edit": ("Edit hook", "Only admins can create or edit hooks"),
        "#/hooks/import": ("Import hooks", "Importing hooks needs the admin role"),
        "#/keys": ("API keys", "Managing API keys needs the admin role"),
        f"#/hooks/{ids['cmd']}/test": ("acme-cmd", test_reason),
    }
    for route, (heading, reason) in visits.items():
        page.goto(f"{served.url}/{route}")
        expect(page.get_by_role("heading", level=1, name=heading)).to_be_visible()
        expect(page.locator(".state-not-allowed")).to_contain_text(reason)
        expect(page.get_by_text(WRONG)).to_have_count(0)
    for route in ("#/hooks", f"#/hooks/{ids['acme']}/overview", f"#/hooks/{ids['acme']}/history",
                  "#/events", "#/audit", "#/approvals"):
        page.goto(f"{served.url}/{route}")
        expect(page.get_by_role("heading", level=1)).to_be_visible()
        expect(page.get_by_text(WRONG)).to_have_count(0)
    page.goto(f"{served.url}/#/hooks/{ids['acme']}")
    expect(page.get_by_role("switch")).to_be_disabled()
    expect(page.get_by_role("link", name="Edit")).to_have_count(0)
    shot(page, f"role-{role}-detail")


def test_form_sets_human_approval(page: Any, admin_gateway: dict[str, Any]) -> None:
    from playwright.sync_api import expect

    served: GatewayProcess = admin_gateway["gateway"]
    master = admin_gateway["keys"]["master"]
    hook_id = admin_gateway["ids"]["acme"]
    sign_in(page, served.url, master)
    page.goto(f"{served.url}/#/hooks/{hook_id}/edit")
    page.get_by_label("Always ask a person").check()
    page.get_by_label("Time to decide (ms)").fill("500")  # under the minimum: refused there
    page.get_by_role("button", name="Save changes").click()
    expect(page.locator('[data-field="approval.timeout_ms"] .field-error')).to_be_visible()
    page.get_by_label("Time to decide (ms)").fill("120000")
    page.get_by_label("If nobody decides").select_option("allow")
    page.get_by_role("button", name="Save changes").click()
    expect(page.get_by_role("heading", level=1, name="acme-guard", exact=True)).to_be_visible()
    expect(page.locator(".facts, dl").first).to_contain_text("always asks a person")
    stored = rest_json(served, "GET", f"/hooks/{hook_id}", master)["hook"]
    assert stored["approval"] == {"required": True, "timeout_ms": 120000, "on_timeout": "allow"}


def test_admin_views_fit_a_phone(browser: Any, admin_gateway: dict[str, Any]) -> None:
    from playwright.sync_api import expect

    served: GatewayProcess = admin_gateway["gateway"]
    context = browser.new_context(viewport={"width": 390, "height": 844}, is_mobile=True)
    try:
        tab = context.new_page()
        sign_in(tab, served.url, admin_gateway["keys"]["master"])
        for route, ready in (("#/keys", ".key-table"), ("#/hooks/import", "#import-file"),
                             ("#/hooks", ".hook-table")):
            tab.goto(f"{served.url}/{route}")
            expect(tab.locator(ready)).to_be_visible()  # the page, loaded
            sideways = tab.evaluate(
                "document.documentElement.scrollWidth - document.documentElement.clientWidth"
            )
            assert sideways <= 0, f"{route} scrolls sideways by {sideways}px on a phone"
        tab.goto(f"{served.url}/#/keys")
        expect(tab.locator(".key-table")).to_be_visible()
        shot(tab, "phone-keys")
    finally:
        context.close()
