"""``hooks.export``/``hooks.import`` and the save-time SSRF warnings, against a real gateway.

The attacks: secrets leaving in an export, a tenant admin importing into another tenant, a
global hook or host code; a file that moves a webhook with a stored secret to a new URL."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from tests.server.conftest import Keys
from tests.server.gateway_process import GatewayProcess
from tests.server.wsutil import fails, ok, open_ws

SECRET = "Bearer very-secret-token"


def _webhook(name: str, url: str = "http://127.0.0.1:9/hook", **extra: Any) -> dict[str, Any]:
    return {
        "event": "pre_tool_use",
        "handler_type": "http",
        "scope": "tenant",
        "name": name,
        "matcher": "^Bash$",
        "config": {"url": url, "headers": {"Authorization": SECRET}},
        **extra,
    }


def _names(payload: dict[str, Any]) -> dict[str | None, dict[str, Any]]:
    return {entry["name"]: entry for entry in payload["hooks"]}


def test_export_never_carries_a_secret_and_imports_back_unchanged(
    gateway: GatewayProcess, keys: Keys
) -> None:
    with open_ws(gateway.ws_url, keys.a_admin) as ws:
        ok(ws, "hooks.create", _webhook("files-guard"))
        exported = ok(ws, "hooks.export", {})
        assert exported["filename"] == "hooks-tenant-a.yaml" and exported["count"] >= 1
        assert "very-secret" not in exported["content"] and "hgs" not in exported["content"]
        document = yaml.safe_load(exported["content"])
        entry = next(h for h in document["hooks"] if h["name"] == "files-guard")
        assert entry["config"]["headers"] == {"Authorization": None}
        assert "tenant_id" not in entry and "id" not in entry
        # The same file applied back: nothing changes, the stored secret stays.
        report = ok(ws, "hooks.import", {"content": exported["content"]})
        assert report["applied"] is True
        assert _names(report)["files-guard"]["action"] == "unchanged"
        # JSON works too, and the viewer may export.
    with open_ws(gateway.ws_url, keys.a_viewer) as ws:
        as_json = ok(ws, "hooks.export", {"format": "json"})
        assert as_json["filename"].endswith(".json") and "very-secret" not in as_json["content"]
        fails(ws, "hooks.import", {"content": as_json["content"]}, "UNAUTHORIZED")
    with open_ws(gateway.ws_url, keys.a_operator) as ws:
        fails(ws, "hooks.import", {"content": as_json["content"]}, "UNAUTHORIZED")


def test_import_reports_each_hook_and_writes_nothing_when_one_is_invalid(
    gateway: GatewayProcess, keys: Keys
) -> None:
    text = yaml.safe_dump({"hooks": [
        {"event": "pre_tool_use", "handler_type": "http", "name": "files-ok",
         "config": {"url": "http://127.0.0.1:9/x"}},
        {"event": "pre_tool_use", "handler_type": "http", "name": "files-bad",
         "matcher": "([", "timeout_ms": 99999, "config": {"url": "http://127.0.0.1:9/x"}},
        "not a hook",
        {"event": "pre_tool_use", "handler_type": "http", "name": "files-ok",
         "config": {"url": "http://127.0.0.1:9/y"}},
    ]})
    with open_ws(gateway.ws_url, keys.b_admin) as ws:
        report = ok(ws, "hooks.import", {"content": text})
        assert report["applied"] is False and report["error"] is None
        first, bad, junk, twice = report["hooks"]
        assert first["action"] == "create" and first["problems"] == []
        assert {p["field"] for p in bad["problems"]} >= {"matcher", "timeout_ms"}
        assert junk["problems"][0]["message"] == "each hook must be an object"
        assert "twice" in twice["problems"][0]["message"]
        names = {h["name"] for h in ok(ws, "hooks.list", {})["hooks"]}
        assert "files-ok" not in names
        # The whole file is checked, so a broken one says why in one line.
        broken = ok(ws, "hooks.import", {"content": "hooks: [unclosed"})
        assert broken["applied"] is False and "YAML" in broken["error"]
        assert "hooks" in ok(ws, "hooks.import", {"content": "just: a map"})["error"]
        # Aliases could stand for a document far larger than the frame: refused outright.
        bomb = "a: &a [x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]\n"
        bomb += "hooks: [{event: stop, handler_type: http, config: {url: 'http://h', x: *b}}]\n"
        refused = ok(ws, "hooks.import", {"content": bomb})
        assert refused["applied"] is False and "aliases" in refused["error"]


def test_dry_run_then_apply_creates_updates_and_keeps_secrets(
    gateway: GatewayProcess, keys: Keys
) -> None:
    with open_ws(gateway.ws_url, keys.b_admin) as ws:
        ok(ws, "hooks.create", _webhook("files-keep"))
        before = next(h for h in ok(ws, "hooks.list", {})["hooks"] if h["name"] == "files-keep")
        text = yaml.safe_dump({"hooks": [
            {**_webhook("files-keep", priority=7),
             "config": {"url": "http://127.0.0.1:9/hook", "headers": {"Authorization": None}}},
            {"event": "stop", "handler_type": "http", "name": "files-new",
             "config": {"url": "http://127.0.0.1:9/new"}},
        ]})
        dry = ok(ws, "hooks.import", {"content": text, "dryRun": True})
        assert dry["applied"] is False
        assert {n: e["action"] for n, e in _names(dry).items()} == {
            "files-keep": "update", "files-new": "create"}
        assert "files-new" not in {h["name"] for h in ok(ws, "hooks.list", {})["hooks"]}
        applied = ok(ws, "hooks.import", {"content": text})
        assert applied["applied"] is True and _names(applied)["files-new"]["hookId"]
        after = ok(ws, "hooks.get", {"hookId": before["id"]})["hook"]
        assert after["priority"] == 7 and after["version"] == before["version"] + 1
        assert after["config"]["secret_headers"] == ["Authorization"]  # the secret was kept


def test_a_file_cannot_reach_another_tenant_global_scope_or_move_a_secret(
    gateway: GatewayProcess, keys: Keys
) -> None:
    with open_ws(gateway.ws_url, keys.a_admin) as ws:
        ok(ws, "hooks.create", _webhook("files-moved"))
        text = yaml.safe_dump({"hooks": [
            {**_webhook("files-other"), "tenant_id": "tenant-b"},
            {**_webhook("files-global"), "scope": "global"},
            # The stored secret must not follow the hook to a URL the file chose.
            {**_webhook("files-moved", url="http://127.0.0.2:9/attacker"),
             "config": {"url": "http://127.0.0.2:9/attacker", "headers": {"Authorization": None}}},
            {**_webhook("files-fresh"), "config": {"url": "http://127.0.0.1:9/a",
                                                  "headers": {"Authorization": None}}},
        ]})
        report = ok(ws, "hooks.import", {"content": text})
        other, glob, moved, fresh = report["hooks"]
        assert report["applied"] is False
        assert other["problems"][0]["field"] == "tenant_id"
        assert glob["problems"][0]["field"] == "scope"
        # Issue 24, item 15: the secret is dropped (the change is allowed), and said so.
        assert moved["problems"] == [] and moved["action"] == "update", moved
        assert any(
            w["field"] == "config.headers.Authorization" and "dropped" in w["message"]
            for w in moved["warnings"]
        ), moved
        assert fresh["problems"][0]["field"] == "config.headers.Authorization"
        fails(ws, "hooks.import", {"content": text, "tenantId": "tenant-b"}, "UNAUTHORIZED")
        fails(ws, "hooks.export", {"tenantId": "tenant-b"}, "UNAUTHORIZED")
    with open_ws(gateway.ws_url, keys.b_admin) as ws:
        assert "files-other" not in {h["name"] for h in ok(ws, "hooks.list", {})["hooks"]}


def test_master_exports_and_imports_for_a_picked_tenant(
    gateway: GatewayProcess, keys: Keys
) -> None:
    text = yaml.safe_dump({"hooks": [
        {"event": "stop", "handler_type": "http", "name": "files-for-c",
         "config": {"url": "http://127.0.0.1:9/c"}},
    ]})
    with open_ws(gateway.ws_url, keys.master) as ws:
        report = ok(ws, "hooks.import", {"content": text, "tenantId": "tenant-c"})
        assert report["applied"] is True
        exported = ok(ws, "hooks.export", {"tenantId": "tenant-c"})
        assert exported["filename"] == "hooks-tenant-c.yaml"
        assert [h["name"] for h in yaml.safe_load(exported["content"])["hooks"]] == ["files-for-c"]


def test_host_code_in_a_file_follows_the_host_code_rules(tmp_path: Path) -> None:
    served = GatewayProcess(tmp_path / "data").start()  # no --tenant-host-code
    try:
        assert served.master_key is not None
        admin = served.create_key("acme", "admin")
        text = yaml.safe_dump({"hooks": [
            {"event": "pre_tool_use", "handler_type": "command", "name": "files-cmd",
             "config": {"command": "true"}},
        ]})
        with open_ws(served.ws_url, admin) as ws:
            report = ok(ws, "hooks.import", {"content": text})
            assert report["applied"] is False
            problem = report["hooks"][0]["problems"][0]
            assert problem["field"] == "handler_type" and "master" in problem["message"]
        with open_ws(served.ws_url, served.master_key) as ws:
            report = ok(ws, "hooks.import", {"content": text, "tenantId": "acme"})
            assert report["applied"] is True, report
    finally:
        served.stop()


@pytest.mark.parametrize(
    ("url", "expect"),
    [
        ("http://127.0.0.1:9/hook", "loopback"),
        ("http://10.1.2.3/hook", "private"),
        ("https://hooks.invalid/hook", "resolve"),
        ("https://93.184.215.14/hook", None),
    ],
)
def test_a_saved_webhook_is_checked_against_the_ssrf_guard(
    gateway: GatewayProcess, keys: Keys, url: str, expect: str | None
) -> None:
    with open_ws(gateway.ws_url, keys.a_admin) as ws:
        hook = {"event": "stop", "handler_type": "http", "scope": "tenant",
                "config": {"url": url}}
        created = ok(ws, "hooks.create", hook)
        assert created == {"hookId": created["hookId"]}  # the seed's answer, unchanged
        checked = ok(ws, "hooks.check", {"hookId": created["hookId"]})
    if expect is None:
        assert checked["warnings"] == []
        return
    (warning,) = checked["warnings"]
    assert warning["field"] == "config.url" and expect in warning["message"]
    if expect != "resolve":
        assert "HOOKGATE_SSRF_ALLOWLIST" in warning["message"]
    with open_ws(gateway.ws_url, keys.a_operator) as ws:
        fails(ws, "hooks.check", {"hookId": created["hookId"]}, "UNAUTHORIZED")


def test_the_allowlist_silences_the_warning(tmp_path: Path) -> None:
    served = GatewayProcess(
        tmp_path / "data", env={"HOOKGATE_SSRF_ALLOWLIST": "127.0.0.1"}
    ).start()
    try:
        assert served.master_key is not None
        with open_ws(served.ws_url, served.master_key) as ws:
            created = ok(ws, "hooks.create", {
                "event": "stop", "handler_type": "http", "scope": "tenant",
                "config": {"url": "http://127.0.0.1:9/hook"}})
            assert ok(ws, "hooks.check", {"hookId": created["hookId"]})["warnings"] == []
    finally:
        served.stop()
