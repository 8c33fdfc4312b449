"""Builtin hooks are seeded at start, read-only except ``enabled``, and keep their toggle."""

from __future__ import annotations

from pathlib import Path

from tests.server.conftest import start_gateway

from hookgate.builtins import builtin_definitions


def test_builtins_seeded_toggle_kept_across_restarts(tmp_path: Path) -> None:
    gateway = start_gateway(tmp_path)
    master_key = gateway.master_key
    try:
        hooks = gateway.rest("GET", "/api/v1/hooks").json()["hooks"]
        builtins = {h["event"]: h for h in hooks
                    if h["source"] == "builtin" and h["name"].startswith("pii-redactor")}
        assert set(builtins) == {"pre_tool_use", "user_prompt_submit"}
        prompt_hook = builtins["user_prompt_submit"]
        assert prompt_hook["enabled"] is False and prompt_hook["scope"] == "global"

        refused = gateway.rest("PATCH", f"/api/v1/hooks/{prompt_hook['id']}",
                               json={"updates": {"priority": 1}})
        assert refused.status_code >= 400

        toggled = gateway.rest("POST", f"/api/v1/hooks/{prompt_hook['id']}/toggle",
                               json={"enabled": True})
        assert toggled.status_code == 200, toggled.text
        outcome = gateway.rest("POST", "/api/v1/dispatch", json={
            "event": "user_prompt_submit", "input": {"prompt": "write to eve@example.com"}}).json()
        assert outcome["updated_input"] == "write to [EMAIL]"
    finally:
        gateway.stop()

    restarted = start_gateway(tmp_path)
    restarted.master_key = master_key  # printed on the first start only
    try:
        hooks = restarted.rest("GET", "/api/v1/hooks").json()["hooks"]
        again = [h for h in hooks if h["source"] == "builtin"]
        assert len(again) == len(builtin_definitions())  # seeding twice creates nothing new
        assert {h["event"]: h["enabled"] for h in again
                if h["name"].startswith("pii-redactor")} == {
            "pre_tool_use": False, "user_prompt_submit": True}
    finally:
        restarted.stop()
