"""The Hooks web panel in a real browser against a real ``hookgate serve``.

Headless Chromium (Debian's package, driven by Playwright) signs in, creates a command and an
http hook, meets the gateway's validation messages at their fields, toggles a hook, runs the
test panel (decision, stdout, status code, the JSON diff of ``updatedInput``), watches history
rows appear after dispatches, and sees the host-code handlers (``command``, ``process``)
disabled on the standard edition and for tenant admins. Each screen is saved under
``artifacts/screenshots/``; with ``HOOKGATE_DOC_SCREENSHOTS=1`` a few are also copied to
``docs/screenshots/`` for the README.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.server.gateway_process import GatewayProcess, run_cli
from tests.server.panel_support import (
    browser,
    page,
    panel_gateway,
    require_chromium,
    rest_json,
    shot,
    sign_in,
)
from tests.support.webhook_server import Reply, Seen, WebhookServer

from hookgate.builtins import builtin_definitions

__all__ = ["browser", "page"]  # fixtures used here

pytestmark = [pytest.mark.browser, pytest.mark.timeout(90)]

PHONE = {"width": 390, "height": 844}
#: The command hook's script: it answers a rewrite of the tool input on stdout.
REWRITE_COMMAND = (
    "cat >/dev/null; echo 'checked by panel test' >&2; "
    'echo \'{"decision": "allow", "reason": "listing pinned", '
    '"updatedInput": {"cmd": "ls -la /workspace", "color": "never"}}\''
)
SECRET_TOKEN = "Bearer panel-test-secret-7f3a"

# Hooks every fresh gateway seeds (hookgate.builtins): one row per builtin and event.
BUILTINS = len(builtin_definitions())


# --- fixtures -----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def webhook() -> Iterator[WebhookServer]:
    def respond(seen: Seen) -> Reply:
        if seen.path.startswith("/block"):
            return Reply(200, {"decision": "block", "reason": "writes to /etc are not allowed"})
        if seen.path.startswith("/broken"):
            return Reply(400, {"error": "bad request from panel-test@example.com"})
        return Reply(200, {"decision": "allow"})

    server = WebhookServer()
    server.respond = respond
    with server:
        yield server


@pytest.fixture(scope="module")
def lite(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    require_chromium()  # no gateway either when the browser is missing
    gateway = panel_gateway(tmp_path_factory.mktemp("lite"), edition="lite")
    keys = {
        "admin": gateway.create_key("acme", "admin", master=True),
        "viewer": gateway.create_key("acme", "viewer"),
        "operator": gateway.create_key("acme", "operator"),
    }
    gateway.start()
    try:
        yield {"gateway": gateway, "keys": keys, "hooks": {}}
    finally:
        gateway.stop()


def hook_id_from(page: Any) -> str:
    match = re.search(r"#/hooks/([^/]+)", page.url)
    assert match, page.url
    return match.group(1)


# --- the journey ----------------------------------------------------------------------------------
# The tests share one gateway and run in file order: the hooks made early are used later.


def test_sign_in_shows_the_gateway_error_then_the_role(page: Any, lite: dict[str, Any]) -> None:
    from playwright.sync_api import expect

    url = lite["gateway"].url
    page.goto(url + "/")
    shot(page, "sign-in")
    page.get_by_label("API key").fill("hg-not-a-real-key")
    page.get_by_role("button", name="Sign in").click()
    error = page.locator('[data-field="apiKey"] .field-error')
    expect(error).to_contain_text("invalid or revoked API key")
    expect(page.get_by_label("API key")).to_have_attribute("aria-invalid", "true")
    shot(page, "sign-in-error")

    page.get_by_label("API key").fill(lite["keys"]["admin"])
    page.get_by_role("button", name="Sign in").click()
    expect(page.get_by_role("heading", level=1, name="Hooks")).to_be_visible()
    expect(page.locator(".chip-role")).to_have_text("admin")
    expect(page.locator(".chip-master")).to_be_visible()
    expect(page.locator(".chip-edition")).to_have_text("lite edition")
    # A fresh gateway holds only the seeded builtins: read-only, marked, and switched off.
    builtin_rows = page.locator("tr[data-hook-id]").filter(has=page.locator(".badge-builtin"))
    expect(builtin_rows).to_have_count(BUILTINS)
    expect(builtin_rows.filter(has_text="pii-redactor")).to_have_count(2)
    expect(builtin_rows.filter(has_text="content-guard")).to_have_count(4)
    shot(page, "hooks-builtins-only")


def test_create_command_hook_shows_field_errors_then_saves(page: Any, lite: dict[str, Any]) -> None:
    from playwright.sync_api import expect

    gateway: GatewayProcess = lite["gateway"]
    sign_in(page, gateway.url, lite["keys"]["admin"])
    page.get_by_role("link", name="New hook").click()
    expect(page.get_by_role("heading", level=1, name="New hook")).to_be_visible()
    page.get_by_label("Name").fill("Pin directory listings")
    page.get_by_label("Event").select_option("pre_tool_use")
    page.get_by_role("radio", name=re.compile(r"^command")).check()
    page.get_by_label("Command", exact=True).fill(REWRITE_COMMAND)
    page.get_by_label("Matcher").fill("^(exec")  # unbalanced: RE2 refuses it
    page.get_by_label("if_expr").fill("tool_name ==")  # not CEL
    page.get_by_label("Timeout (ms)").fill("60000")  # over the 10 s maximum
    page.get_by_role("button", name="Create hook").click()

    matcher_error = page.locator('[data-field="matcher"] > .field-error')
    expect(matcher_error).to_be_visible()
    expect(matcher_error).not_to_be_empty()
    expect(page.locator('[data-field="if_expr"] > .field-error')).to_be_visible()
    expect(page.locator('[data-field="timeout_ms"] > .field-error')).to_contain_text("10000")
    expect(page.get_by_label("Matcher")).to_have_attribute("aria-invalid", "true")
    # Nothing was created.
    listed = rest_json(gateway, "GET", "/hooks", lite["keys"]["admin"])["hooks"]
    assert [h for h in listed if h["source"] != "builtin"] == []
    shot(page, "hook-form-errors")

    page.get_by_label("Matcher").fill("^exec$")
    page.get_by_label("if_expr").fill("")
    page.get_by_label("Timeout (ms)").fill("3000")
    page.get_by_role("button", name="Create hook").click()
    expect(page.get_by_role("heading", level=1, name="Pin directory listings")).to_be_visible()
    hook_id = hook_id_from(page)
    lite["hooks"]["command"] = hook_id

    stored = rest_json(gateway, "GET", f"/hooks/{hook_id}", lite["keys"]["admin"])["hook"]
    assert stored["handler_type"] == "command"
    assert stored["matcher"] == "^exec$"
    assert stored["timeout_ms"] == 3000
    assert stored["config"]["command"] == REWRITE_COMMAND
    summary = page.locator(".summary-card")
    expect(summary).to_contain_text("pre_tool_use")
    expect(summary).to_contain_text("^exec$")
    # The card says who made the hook and who last changed it: another key edits it.
    editor = run_cli(
        # master scope: the hook runs a command on the host, which tenant keys may not change
        "keys", "create", "--tenant", "acme", "--role", "admin", "--name", "ops-editor", "--master",
        data_dir=gateway.data_dir,
    ).stdout.strip().splitlines()[-1]
    patch = {"priority": stored["priority"]}
    rest_json(gateway, "PATCH", f"/hooks/{hook_id}", editor, json=patch)
    changed = rest_json(gateway, "GET", f"/hooks/{hook_id}", editor)["hook"]
    assert changed["updated_by"].startswith("ops-editor (")
    page.reload()
    expect(summary).to_contain_text(
        f"created by {stored['created_by']} · changed by {changed['updated_by']} at "
    )
    shot(page, "hook-overview")


def test_create_http_hook_keeps_the_secret_header_write_only(
    page: Any, lite: dict[str, Any], webhook: WebhookServer
) -> None:
    from playwright.sync_api import expect

    gateway: GatewayProcess = lite["gateway"]
    sign_in(page, gateway.url, lite["keys"]["admin"])
    page.get_by_role("link", name="New hook").click()
    page.get_by_label("Name").fill("Guard /etc writes")
    page.get_by_label("Event").select_option("pre_tool_use")
    page.get_by_role("radio", name=re.compile(r"^http")).check()
    page.get_by_label("Matcher").fill("^write_file$")
    page.get_by_label("Webhook URL").fill(webhook.url("/block"))
    page.get_by_role("button", name="Add header").click()
    row = page.locator(".header-row").last
    row.get_by_label("Header name").fill("Authorization")
    row.get_by_label("Header value").fill(SECRET_TOKEN)
    # Authorization is always secret: the box is ticked and cannot be unticked.
    expect(row.get_by_label("secret")).to_be_checked()
    expect(row.get_by_label("secret")).to_be_disabled()
    expect(row.get_by_label("Header value")).to_have_attribute("type", "password")
    page.get_by_label("Priority").fill("50")
    page.get_by_role("button", name="Create hook").click()
    expect(page.get_by_role("heading", level=1, name="Guard /etc writes")).to_be_visible()
    hook_id = hook_id_from(page)
    lite["hooks"]["http"] = hook_id

    # The read API and the page never carry the secret value.
    raw = json.dumps(rest_json(gateway, "GET", f"/hooks/{hook_id}", lite["keys"]["admin"]))
    assert "panel-test-secret" not in raw
    expect(page.locator(".config-card")).to_contain_text("Authorization")
    assert "panel-test-secret" not in page.content()
    page.get_by_role("link", name="Edit").click()
    expect(page.get_by_label("Header value")).to_have_value("")
    expect(page.get_by_label("Header value")).to_have_attribute("placeholder", re.compile("stored"))
    shot(page, "hook-edit-http")
    # Saving without touching the header keeps the stored secret (checked at dispatch below).
    page.get_by_label("Priority").fill("60")
    # Every definition field is in the form, on_error included (it stays "block" here).
    expect(page.get_by_label("On error")).to_have_value("block")
    page.get_by_role("button", name="Save changes").click()
    saved_page = page.get_by_role("heading", level=1, name="Guard /etc writes", exact=True)
    expect(saved_page).to_be_visible()
    saved = rest_json(gateway, "GET", f"/hooks/{hook_id}", lite["keys"]["admin"])["hook"]
    assert saved["priority"] == 60 and saved["version"] == 2 and saved["on_error"] == "block"


def test_prompt_form_places_handler_rules_at_their_fields(page: Any, lite: dict[str, Any]) -> None:
    from playwright.sync_api import expect

    gateway: GatewayProcess = lite["gateway"]
    sign_in(page, gateway.url, lite["keys"]["admin"])
    page.get_by_role("link", name="New hook").click()
    page.get_by_role("radio", name=re.compile(r"^prompt")).check()
    expect(page.get_by_label("Per-turn cap")).to_be_visible()
    page.get_by_label("Prompt template").fill("Is this tool call safe?")
    page.get_by_label("Model").fill("haiku")
    page.get_by_label("Other settings (JSON)").fill("{not json")
    page.get_by_role("button", name="Create hook").click()
    # Caught in the browser: the extra settings box must hold a JSON object.
    extra_error = page.locator('[data-field="config.extra"] > .field-error')
    expect(extra_error).to_contain_text("not valid JSON")
    page.get_by_label("Other settings (JSON)").fill("")
    page.get_by_role("button", name="Create hook").click()
    # The gateway's rule: a prompt hook needs a matcher or an if_expr.
    expect(page.locator('[data-field="matcher"] > .field-error')).to_contain_text("if_expr")
    assert rest_json(gateway, "GET", "/hooks?handler_type=prompt", lite["keys"]["admin"]) == {
        "hooks": []
    }

    # The agent reviewer's sub-form writes the keys the agent handler accepts.
    page.get_by_role("radio", name=re.compile(r"^agent")).check()
    page.get_by_label("Event").select_option("subagent_stop")
    page.get_by_label("Name").fill("Review delegated work")
    page.get_by_role("textbox", name="Reviewer agent").fill("reviewer")
    page.get_by_label("Reviewer model").fill("sonnet")
    page.get_by_label("Reviewer instructions").fill("Approve only finished work.")
    page.get_by_role("button", name="Create hook").click()
    expect(page.get_by_role("heading", level=1, name="Review delegated work")).to_be_visible()
    agent_hook = rest_json(gateway, "GET", f"/hooks/{hook_id_from(page)}", lite["keys"]["admin"])
    assert agent_hook["hook"]["config"] == {
        "agent": "reviewer",
        "model": "sonnet",
        "prompt": "Approve only finished work.",
    }
    page.get_by_role("button", name="Delete").click()
    page.get_by_role("dialog").get_by_role("button", name="Delete").click()
    expect(page.get_by_role("heading", level=1, name="Hooks")).to_be_visible()


def test_list_filters_and_toggle(page: Any, lite: dict[str, Any]) -> None:
    from playwright.sync_api import expect

    gateway: GatewayProcess = lite["gateway"]
    key = lite["keys"]["admin"]
    sign_in(page, gateway.url, key)
    rows = page.locator("tbody tr[data-hook-id]")
    expect(rows).to_have_count(2 + BUILTINS)
    http_row = page.locator(f'tr[data-hook-id="{lite["hooks"]["http"]}"]')
    expect(http_row.locator(".badge-handler")).to_have_text("http")
    expect(http_row.locator(".badge-event")).to_have_text("pre_tool_use")
    expect(http_row.locator(".badge-breaker")).to_have_text("closed")
    shot(page, "hooks-list")

    page.get_by_label("Handler").select_option("command")
    expect(rows).to_have_count(1)
    expect(rows.first).to_contain_text("Pin directory listings")
    page.get_by_label("Handler").select_option("")
    page.get_by_label("Search").fill("etc writes")
    expect(rows).to_have_count(1)
    expect(rows.first).to_contain_text("Guard /etc writes")
    page.get_by_label("Search").fill("")
    expect(rows).to_have_count(2 + BUILTINS)

    switch = http_row.get_by_role("switch")
    expect(switch).to_have_attribute("aria-checked", "true")
    switch.click()
    expect(switch).to_have_attribute("aria-checked", "false")
    expect(switch).to_be_enabled()
    assert (
        rest_json(gateway, "GET", f"/hooks/{lite['hooks']['http']}", key)["hook"]["enabled"]
        is False
    )
    page.get_by_label("Enabled").select_option("off")
    expect(rows).to_have_count(1 + BUILTINS)  # builtins ship switched off
    shot(page, "hooks-list-disabled-filter")
    page.get_by_label("Enabled").select_option("")
    http_row.get_by_role("switch").click()
    expect(http_row.get_by_role("switch")).to_have_attribute("aria-checked", "true")
    expect(http_row.get_by_role("switch")).to_be_enabled()
    assert (
        rest_json(gateway, "GET", f"/hooks/{lite['hooks']['http']}", key)["hook"]["enabled"] is True
    )


def test_test_panel_shows_decision_stdout_and_diff(
    page: Any, lite: dict[str, Any], webhook: WebhookServer
) -> None:
    from playwright.sync_api import expect

    gateway: GatewayProcess = lite["gateway"]
    sign_in(page, gateway.url, lite["keys"]["admin"])
    page.goto(f"{gateway.url}/#/hooks/{lite['hooks']['command']}/test")
    page.get_by_label("Tool").select_option("exec")
    sample = json.loads(page.get_by_label("Event JSON (editable)").input_value())
    assert sample["tool_name"] == "exec" and "cmd" in sample["tool_input"]
    page.get_by_role("button", name="Run dry test").click()
    result = page.locator(".result-card")
    expect(result.locator(".badge-decision")).to_have_text("allow")
    expect(result).to_contain_text("listing pinned")
    expect(result.locator("pre.stdout")).to_contain_text('"updatedInput"')
    expect(result.locator("pre.stderr")).to_contain_text("checked by panel test")
    diff = result.locator(".json-diff")
    expect(diff).to_be_visible()
    expect(diff.locator(".diff-cell.is-add")).to_contain_text(['"color": "never"'])
    assert int(diff.get_attribute("data-changed-lines") or "0") >= 1
    shot(page, "test-panel-diff")

    # An edited sample: invalid JSON is caught at the field, before any request.
    page.get_by_label("Event JSON (editable)").fill("{not json")
    page.get_by_role("button", name="Run dry test").click()
    expect(page.locator('[data-field="sample"] > .field-error')).to_contain_text("Not valid JSON")

    # The http hook: the webhook's block, its reason and status code.
    page.goto(f"{gateway.url}/#/hooks/{lite['hooks']['http']}/test")
    page.get_by_label("Tool").select_option("write_file")
    page.get_by_role("button", name="Run dry test").click()
    result = page.locator(".result-card")
    expect(result.locator(".badge-decision")).to_have_text("block")
    expect(result.locator(".status-code")).to_have_text("200")
    expect(result).to_contain_text("writes to /etc are not allowed")
    # The gateway opened the sealed header for the call: the webhook got the real value.
    assert webhook.requests[-1].headers.get("Authorization") == SECRET_TOKEN
    shot(page, "test-panel-http-block")
    # A dry run writes no history.
    history = rest_json(
        gateway, "GET", f"/executions?hookId={lite['hooks']['http']}", lite["keys"]["admin"]
    )
    assert history["executions"] == []


def test_history_rows_appear_after_dispatches(
    page: Any, lite: dict[str, Any], webhook: WebhookServer
) -> None:
    from playwright.sync_api import expect

    gateway: GatewayProcess = lite["gateway"]
    admin, operator = lite["keys"]["admin"], lite["keys"]["operator"]
    hook_id = lite["hooks"]["http"]
    sign_in(page, gateway.url, admin)
    page.goto(f"{gateway.url}/#/hooks/{hook_id}/history")
    expect(page.get_by_text("No executions yet")).to_be_visible()

    for n in range(3):
        outcome = rest_json(
            gateway,
            "POST",
            "/dispatch",
            operator,
            json={
                "event": "pre_tool_use",
                "input": {
                    "session_id": f"s-{n}",
                    "tool_name": "write_file",
                    "tool_input": {"path": "/etc/hosts", "content": "x"},
                },
            },
        )
        assert outcome["decision"] == "block"
    page.get_by_role("button", name="Refresh").click()
    expect(page.locator("tbody.exec")).to_have_count(3)
    # One failing call: the webhook answers 400, so the hook errors (and fails closed).
    rest_json(
        gateway,
        "PATCH",
        f"/hooks/{hook_id}",
        admin,
        json={"config": {"url": webhook.url("/broken")}},
    )
    failed = rest_json(
        gateway,
        "POST",
        "/dispatch",
        operator,
        json={"event": "pre_tool_use", "input": {"tool_name": "write_file", "tool_input": {}}},
    )
    assert failed["decision"] == "block"

    page.get_by_role("button", name="Refresh").click()
    rows = page.locator("tbody.exec")
    expect(rows).to_have_count(4)
    expect(page.locator('tbody.exec[data-decision="block"]')).to_have_count(3)
    expect(page.locator('tbody.exec[data-decision="error"]')).to_have_count(1)
    # Each row says what and why; the per-hook tab has no Event column (it is the hook's).
    headers = page.locator(".history-table thead th").all_text_contents()
    assert "Event" not in headers and {"Tool", "Reason", "Agent", "Session"} <= set(headers)
    blocked = page.locator('tbody.exec[data-decision="block"]').first
    expect(blocked.locator('td[data-label="Tool"]')).to_have_text("write_file")
    expect(blocked.locator('td[data-label="Reason"]')).to_have_text(
        "writes to /etc are not allowed"
    )
    blocked.get_by_role("button", name=re.compile("Details of the execution")).click()
    expect(blocked.locator("pre.input-summary")).to_contain_text("/etc/hosts")
    blocked.get_by_role("button", name=re.compile("Details of the execution")).click()
    shot(page, "history")

    page.get_by_label("Time").select_option("1h")  # sent as an ISO 8601 `since`
    expect(rows).to_have_count(4)
    page.get_by_label("Decision", exact=True).select_option("error")
    expect(rows).to_have_count(1)
    error_row = rows.first
    error_row.get_by_role("button", name=re.compile("Details of the execution")).click()
    detail = error_row.locator(".exec-detail")
    expect(detail).to_be_visible()
    expect(detail.locator("pre.metadata")).to_contain_text("http_status")
    expect(detail.locator("pre.input-summary")).to_have_text("—")  # the call had no input
    # The admin sees the decrypted full error; the redacted short one hides the address.
    expect(detail.locator("pre.error-detail")).to_contain_text("400")
    shot(page, "history-expanded")

    page.get_by_role("tab", name="Overview").click()
    chart = page.locator(".decision-chart")
    expect(chart).to_have_attribute("data-total", "4")
    expect(chart.locator('[data-decision="block"] .legend-count')).to_have_text("3")
    expect(chart.locator('[data-decision="error"] .legend-count')).to_have_text("1")
    shot(page, "overview-chart")


def test_viewer_sees_no_write_controls(page: Any, lite: dict[str, Any]) -> None:
    from playwright.sync_api import expect

    gateway: GatewayProcess = lite["gateway"]
    sign_in(page, gateway.url, lite["keys"]["viewer"])
    expect(page.locator(".chip-role")).to_have_text("viewer")
    expect(page.get_by_role("link", name="New hook")).to_have_count(0)
    switches = page.get_by_role("switch")
    expect(switches).to_have_count(2 + BUILTINS)
    for i in range(2):
        expect(switches.nth(i)).to_be_disabled()
    expect(page.get_by_role("link", name="Edit")).to_have_count(0)
    page.goto(f"{gateway.url}/#/hooks/{lite['hooks']['http']}")
    expect(page.get_by_role("tab", name="Test")).to_have_attribute("aria-disabled", "true")
    expect(page.get_by_role("tab", name="History")).to_be_visible()
    shot(page, "viewer-detail")
    # A hook that does not exist (or another tenant's): a clear state, not a broken page.
    page.goto(f"{gateway.url}/#/hooks/00000000-0000-0000-0000-000000000000")
    expect(page.get_by_role("heading", level=1, name="Hook not found")).to_be_visible()
    expect(page.get_by_role("link", name="Back to hooks")).to_be_visible()


def test_keyboard_and_phone_width(browser: Any, lite: dict[str, Any]) -> None:
    from playwright.sync_api import expect

    gateway: GatewayProcess = lite["gateway"]
    context = browser.new_context(viewport=PHONE, is_mobile=True, has_touch=True)
    page = context.new_page()
    try:
        sign_in(page, gateway.url, lite["keys"]["admin"])
        overflow = page.evaluate(
            "document.documentElement.scrollWidth - document.documentElement.clientWidth"
        )
        assert overflow <= 1, f"the list scrolls sideways at phone width ({overflow}px)"
        expect(page.locator('td[data-label="Event"]').first).to_be_visible()
        shot(page, "phone-hooks-list")

        # Keyboard: arrow keys move along the tabs, Enter opens one.
        page.goto(f"{gateway.url}/#/hooks/{lite['hooks']['command']}")
        page.get_by_role("tab", name="Overview").focus()
        page.keyboard.press("ArrowRight")
        expect(page.get_by_role("tab", name="Test")).to_be_focused()
        page.keyboard.press("ArrowRight")
        expect(page.get_by_role("tab", name="Replay")).to_be_focused()
        page.keyboard.press("ArrowRight")
        page.keyboard.press("Enter")
        expect(page.get_by_role("tab", name="History")).to_have_attribute("aria-selected", "true")
        overflow = page.evaluate(
            "document.documentElement.scrollWidth - document.documentElement.clientWidth"
        )
        assert overflow <= 1, f"the detail page scrolls sideways at phone width ({overflow}px)"
        shot(page, "phone-history")
    finally:
        context.close()


def test_host_code_types_greyed_out_on_standard(page: Any, tmp_path: Path) -> None:
    from playwright.sync_api import expect

    data_dir = tmp_path / "standard"
    data_dir.mkdir()
    gateway = panel_gateway(data_dir, edition="standard")
    key = gateway.create_key("acme", "admin")
    gateway.start()
    try:
        sign_in(page, gateway.url, key)
        expect(page.locator(".chip-edition")).to_have_text("standard edition")
        page.get_by_role("link", name="New hook").click()
        command = page.get_by_role("radio", name=re.compile(r"^command"))
        expect(command).to_be_disabled()
        reason = page.locator(".radio-option.is-disabled", has=command).locator(".disabled-reason")
        expect(reason).to_contain_text("standard edition")
        # Every handler that runs code on the host, not only command.
        process = page.get_by_role("radio", name=re.compile(r"^process"))
        expect(process).to_be_disabled()
        expect(page.locator(".radio-option.is-disabled", has=process)
               .locator(".disabled-reason")).to_contain_text("standard edition")
        expect(page.get_by_role("radio", name=re.compile(r"^http"))).to_be_enabled()
        # Tenant keys without master scope cannot pick global either.
        expect(page.get_by_role("radio", name=re.compile(r"^Global"))).to_be_disabled()
        shot(page, "standard-edition-form")
        # The gateway goes away: the panel says so and keeps trying to reconnect.
        gateway.stop()
        expect(page.locator(".banner")).to_contain_text("Reconnecting")
        shot(page, "gateway-lost")
    finally:
        gateway.stop()


def test_host_code_types_greyed_out_for_tenant_admins(page: Any, lite: dict[str, Any]) -> None:
    """On a gateway without --tenant-host-code, a tenant admin sees the host-code handlers
    disabled with the reason; the master admin of the other tests may pick them."""
    from playwright.sync_api import expect

    gateway = lite["gateway"]
    # A command hook the master admin made for this tenant: the tenant admin may not test it.
    made = rest_json(gateway, "POST", "/hooks", lite["keys"]["admin"], json={
        "event": "pre_tool_use", "handler_type": "command", "scope": "tenant",
        "name": "master-made command", "config": {"command": "exit 0"}})
    sign_in(page, gateway.url, gateway.create_key("acme", "admin"))
    page.goto(f"{gateway.url}/#/hooks/{made['hookId']}")
    test_tab = page.get_by_role("tab", name="Test")
    expect(test_tab).to_have_attribute("aria-disabled", "true")
    expect(test_tab).to_have_attribute("title", re.compile("needs master scope"))
    page.goto(f"{gateway.url}/#/hooks")
    page.get_by_role("link", name="New hook").click()
    for name in ("command", "process"):
        radio = page.get_by_role("radio", name=re.compile(rf"^{name}"))
        expect(radio).to_be_disabled()
        expect(page.locator(".radio-option.is-disabled", has=radio)
               .locator(".disabled-reason")).to_contain_text("needs master scope")
    expect(page.get_by_role("radio", name=re.compile(r"^http"))).to_be_enabled()
    expect(page.get_by_role("radio", name=re.compile(r"^prompt"))).to_be_enabled()


def test_diff_and_error_parsing_modules(page: Any, lite: dict[str, Any]) -> None:
    """The panel's own logic, run as the browser loads it: the line diff and error mapping."""
    page.goto(lite["gateway"].url + "/")
    got = page.evaluate(
        """async () => {
          const diff = await import('./js/ui/json-diff.js');
          const problems = await import('./js/problems.js');
          const rows = (a, b) => diff.sideBySide(diff.diffLines(a, b)).map((r) => r.kind);
          const fromDetails = problems.fieldProblems({message: 'x', details: {problems: [
            {field: 'matcher', message: 'bad regex'}, {field: 'config', message: 'need url'},
            {field: 'weird', message: 'elsewhere'}]}});
          const form = await import('./js/views/hook-form.js');
          const edit = form.changedFields(
            {name: 'a', priority: 0, matcher: null, config: {url: 'u', headers: {A: null}}},
            {name: 'a', priority: 5, matcher: null, config: {url: 'u', headers: {A: null}}});
          const fromText = problems.fieldProblems({message:
            "hook 'n': timeout_ms: must be between 1 and 10000 ms; something else broke"});
          return {
            same: rows(['{', '"a": 1', '}'], ['{', '"a": 1', '}']),
            added: rows(['{', '  "a": 1', '}'], ['{', '  "a": 1,', '  "b": 2', '}']),
            changed: rows(['{', '  "a": 1', '}'], ['{', '  "a": 2', '}']),
            removed: rows(['[', '  1,', '  2', ']'], ['[', '  2', ']']),
            detailFields: [...fromDetails.fields.keys()],
            detailGeneral: fromDetails.general,
            textFields: Object.fromEntries(fromText.fields),
            textGeneral: fromText.general,
            edit,
          };
        }"""
    )
    assert got["same"] == ["same", "same", "same"]
    # A trailing comma added by the new key does not mark "a" as changed.
    assert got["added"] == ["same", "same", "added", "same"]
    assert got["changed"] == ["same", "changed", "same"]
    assert got["removed"] == ["same", "removed", "same", "same"]
    assert got["detailFields"] == ["matcher", "config"]
    assert got["detailGeneral"] == ["weird: elsewhere"]
    assert got["textFields"] == {"timeout_ms": ["must be between 1 and 10000 ms"]}
    assert got["textGeneral"] == ["something else broke"]
    # An edit sends only what changed: an untouched config (with its kept secrets) stays out.
    assert got["edit"] == {"priority": 5}
