"""Hook state on real gateways: tenant-scoped, and shared by replicas through Redis."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from tests.conftest import require_service
from tests.server.gateway_process import GatewayProcess
from tests.server.test_replicas_redis import REDIS_URL, _redis_up
from tests.support.webhook_server import Reply, WebhookServer

ALLOW = ("--allow-callable", "tests.state.statefns")
HOOK = {"event": "pre_tool_use", "handler_type": "callable", "scope": "global",
        "name": "remember", "config": {"callable": "tests.state.statefns:remember",
                                       "state": {"namespace": "memo"}}}


def dispatch(gateway: GatewayProcess, key: str, **payload: Any) -> dict[str, Any]:
    answer = gateway.rest("POST", "/api/v1/dispatch", key,
                          json={"event": "pre_tool_use", "input": {"tool_name": "x", **payload}})
    assert answer.status_code == 200, answer.text
    return answer.json()  # type: ignore[no-any-return]


def context(outcome: dict[str, Any]) -> list[str]:
    return list(outcome.get("additional_context") or outcome.get("additionalContext") or [])


def test_tenant_b_cannot_read_tenant_a_state(tmp_path: Path) -> None:
    gateway = GatewayProcess(tmp_path / "data", args=ALLOW).start()
    try:
        created = gateway.rest("POST", "/api/v1/hooks", json=HOOK)
        assert created.status_code in (200, 201), created.text
        a_key = gateway.create_key("tenant-a", "operator")
        b_key = gateway.create_key("tenant-b", "operator")
        stored = dispatch(gateway, a_key, session_id="s1", tool_input={"remember": "a-only"})
        assert context(stored) == ["note=a-only"]
        assert context(dispatch(gateway, a_key, session_id="s1", tool_input={})) == [
            "note=a-only"]
        # Same session id, same namespace, another tenant: nothing to read ...
        assert context(dispatch(gateway, b_key, session_id="s1", tool_input={})) == []
        # ... and naming tenant A in the event does not help: the key's tenant wins.
        spoofed = dispatch(gateway, b_key, session_id="s1", tenant_id="tenant-a", tool_input={})
        assert context(spoofed) == []
        dispatch(gateway, b_key, session_id="s1", tool_input={"remember": "b-only"})
        assert context(dispatch(gateway, a_key, session_id="s1", tool_input={})) == [
            "note=a-only"]
    finally:
        gateway.stop()


def test_a_tenant_hook_cannot_read_or_rewrite_a_global_hook_state(tmp_path: Path) -> None:
    with WebhookServer(default=Reply(200, {"state": {"session": {"note": "forged"}}})) as web:
        gateway = GatewayProcess(tmp_path / "data", args=ALLOW,
                                 env={"HOOKGATE_SSRF_ALLOWLIST": "127.0.0.1/32"}).start()
        try:
            gateway.rest("POST", "/api/v1/hooks", json=HOOK).raise_for_status()
            a_admin = gateway.create_key("tenant-a", "admin")
            own = gateway.rest("POST", "/api/v1/hooks", a_admin, json={
                "event": "pre_tool_use", "handler_type": "http", "scope": "tenant",
                "name": "tenant hook", "priority": -10,
                "config": {"url": web.url(), "state": {"namespace": "memo"}}})
            assert own.status_code in (200, 201), own.text
            dispatch(gateway, a_admin, session_id="s1", tool_input={"remember": "operator's"})
            again = dispatch(gateway, a_admin, session_id="s1", tool_input={})
            assert context(again) == ["note=operator's"]  # the forged note did not land
            seen = [request.json["state"] for request in web.requests]
            assert seen == [{"session": {}}, {"session": {"note": "forged"}}]
        finally:
            gateway.stop()


@pytest.mark.redis
def test_replicas_share_state_through_redis(tmp_path: Path) -> None:
    require_service("Redis", *_redis_up())
    args = (*ALLOW, "--redis-url", REDIS_URL)
    first = GatewayProcess(tmp_path / "a", args=args).start()
    second = None
    try:
        session = f"s-{time.time_ns()}"
        assert first.master_key is not None
        first.rest("POST", "/api/v1/hooks", json=HOOK).raise_for_status()
        dispatch(first, first.master_key, session_id=session, tool_input={"remember": "shared"})
        # The second replica has its own SQLite store: give it the same hook, nothing else.
        second = GatewayProcess(tmp_path / "b", args=args).start()
        assert second.master_key is not None
        second.rest("POST", "/api/v1/hooks", json=HOOK).raise_for_status()
        assert context(dispatch(second, second.master_key, session_id=session,
                                tool_input={})) == ["note=shared"]
    finally:
        if second is not None:
            second.stop()
        first.stop()
