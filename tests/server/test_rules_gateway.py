"""Rule hooks on a real gateway (its SQLite store): a required earlier success recorded from
a post_tool_use dispatch, a sequence, and a dry run (hooks.test) that takes no slot."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.server.gateway_process import GatewayProcess


def dispatch(gateway: GatewayProcess, key: str, event: str, tool: str, **fields: Any
             ) -> dict[str, Any]:
    response = gateway.rest("POST", "/api/v1/dispatch", key, json={
        "event": event, "input": {"tool_name": tool, "session_id": "s1", **fields}})
    assert response.status_code == 200, response.text
    return response.json()  # type: ignore[no-any-return]


def test_rules_on_a_real_gateway(tmp_path: Path) -> None:
    gateway = GatewayProcess(tmp_path / "data").start()
    try:
        admin = gateway.create_key("tenant-a", "admin")
        operator = gateway.create_key("tenant-a", "operator")
        hooks = [
            {"event": "pre_tool_use", "handler_type": "rule", "scope": "tenant",
             "name": "tested-deploy", "matcher": "^deploy$",
             "config": {"require": {"tool": "^run_tests$"}}},
            {"event": "pre_tool_use", "handler_type": "rule", "scope": "tenant",
             "name": "release", "matcher": "^publish$",
             "config": {"sequence": {"tools": ["^build$", "^sign$"], "succeeded": False}}},
        ]
        for hook in hooks:
            created = gateway.rest("POST", "/api/v1/hooks", admin, json=hook)
            assert created.status_code in (200, 201), created.text

        first = dispatch(gateway, operator, "pre_tool_use", "deploy")
        assert first["decision"] == "block" and "tested-deploy" in first["reason"]
        assert dispatch(gateway, operator, "pre_tool_use", "run_tests")["decision"] == "allow"
        assert dispatch(gateway, operator, "pre_tool_use", "deploy")["decision"] == "block"
        # The success arrives as a post_tool_use (not waited for): recorded before the answer.
        dispatch(gateway, operator, "post_tool_use", "run_tests", tool_response="3 passed")
        assert dispatch(gateway, operator, "pre_tool_use", "deploy")["decision"] == "allow"

        assert dispatch(gateway, operator, "pre_tool_use", "sign")["decision"] == "allow"
        assert dispatch(gateway, operator, "pre_tool_use", "build")["decision"] == "allow"
        assert dispatch(gateway, operator, "pre_tool_use", "publish")["decision"] == "block"
        assert dispatch(gateway, operator, "pre_tool_use", "sign")["decision"] == "allow"
        assert dispatch(gateway, operator, "pre_tool_use", "publish")["decision"] == "allow"

        limit = {"event": "pre_tool_use", "handler_type": "rule", "scope": "tenant",
                 "name": "one-wire", "matcher": "^wire$",
                 "config": {"limit": {"count": 1, "window_s": 600}}}
        created = gateway.rest("POST", "/api/v1/hooks", admin, json=limit)
        assert created.status_code in (200, 201), created.text
        hook_id = created.json()["hookId"]

        def dry_run() -> str:
            tested = gateway.rest("POST", "/api/v1/hooks/test", admin, json={
                "hookId": hook_id, "sampleEvent": {"toolName": "wire", "sessionId": "s1"}})
            assert tested.status_code == 200, tested.text
            return str(tested.json()["result"]["decision"])

        assert [dry_run() for _ in range(3)] == ["allow"] * 3  # looks, takes no slot
        assert dispatch(gateway, operator, "pre_tool_use", "wire")["decision"] == "allow"
        assert dry_run() == "block"
        assert dispatch(gateway, operator, "pre_tool_use", "wire")["decision"] == "block"
    finally:
        gateway.stop()
