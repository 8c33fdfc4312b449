"""Roles and tenants against a real gateway: who may call what, and who sees whose hooks."""

from __future__ import annotations

import time

import httpx
import pytest
from tests.server.conftest import Keys
from tests.server.gateway_process import GatewayProcess, run_cli
from tests.server.test_ws_protocol import BLOCKER
from tests.server.wsutil import fails, ok, open_ws
from websockets.exceptions import ConnectionClosed

MASTER_MESSAGE = "this action requires master tenant scope"


@pytest.fixture(scope="module")
def a_hook(gateway: GatewayProcess, keys: Keys) -> str:
    with open_ws(gateway.ws_url, keys.a_admin) as ws:
        hook_id: str = ok(ws, "hooks.create", BLOCKER | {"name": "tenant-a hook"})["hookId"]
        return hook_id


class TestRoles:
    @pytest.mark.parametrize(
        ("method", "params"),
        [
            ("hooks.create", BLOCKER | {"name": "viewer-try"}),
            ("hooks.update", {"hookId": "HOOK", "updates": {"priority": 3}}),
            ("hooks.delete", {"hookId": "HOOK"}),
            ("hooks.toggle", {"hookId": "HOOK", "enabled": False}),
            ("hooks.test", {"hookId": "HOOK", "sampleEvent": {"tool_name": "rm"}}),
            ("hooks.simulate", {"event": "pre_tool_use", "sampleEvent": {"tool_name": "rm"}}),
            ("hooks.dispatch", {"event": "pre_tool_use", "input": {"tool_name": "rm"}}),
        ],
    )
    def test_viewer_cannot(
        self, gateway: GatewayProcess, keys: Keys, a_hook: str, method: str, params: dict
    ) -> None:
        """A viewer reads only: writes, tests and dispatches are refused with the role named."""
        params = {k: (a_hook if v == "HOOK" else v) for k, v in params.items()}
        with open_ws(gateway.ws_url, keys.a_viewer) as ws:
            error = fails(ws, method, params, "UNAUTHORIZED")
            assert "viewer" in error["message"]
            hook = ok(ws, "hooks.get", {"hookId": a_hook})["hook"]
            assert hook["version"] == 1 and hook["enabled"] is True

    def test_viewer_reads(self, gateway: GatewayProcess, keys: Keys, a_hook: str) -> None:
        with open_ws(gateway.ws_url, keys.a_viewer) as ws:
            assert a_hook in [h["id"] for h in ok(ws, "hooks.list", {})["hooks"]]
            assert "executions" in ok(ws, "hooks.history", {"hookId": a_hook})

    def test_operator_tests_and_dispatches_but_cannot_write(
        self, gateway: GatewayProcess, keys: Keys, a_hook: str
    ) -> None:
        with open_ws(gateway.ws_url, keys.a_operator) as ws:
            outcome = ok(ws, "hooks.dispatch",
                         {"event": "pre_tool_use", "input": {"tool_name": "rm"}})
            assert outcome["decision"] == "block"
            fails(ws, "hooks.create", BLOCKER | {"name": "op-try"}, "UNAUTHORIZED")
            fails(ws, "hooks.toggle", {"hookId": a_hook, "enabled": False}, "UNAUTHORIZED")
            # A hook that runs code on the gateway host needs an admin even for a dry run.
            error = fails(ws, "hooks.test",
                          {"hookId": a_hook, "sampleEvent": {"tool_name": "rm"}},
                          "UNAUTHORIZED")
            assert "admin" in error["message"]

    def test_admin_tests_a_saved_hook(self, gateway: GatewayProcess, keys: Keys, a_hook: str):
        with open_ws(gateway.ws_url, keys.a_admin) as ws:
            result = ok(ws, "hooks.test",
                        {"hookId": a_hook, "sampleEvent": {"toolName": "rm"}})["result"]
            assert result["decision"] == "block" and result["matched"] is True
            assert result["reason"] == "blocked by test hook on pre_tool_use"
            skipped = ok(ws, "hooks.test",
                         {"hookId": a_hook, "sampleEvent": {"toolName": "ls"}})["result"]
            assert skipped["matched"] is False and skipped["decision"] == "allow"


class TestTenants:
    def test_other_tenant_cannot_see_or_touch(
        self, gateway: GatewayProcess, keys: Keys, a_hook: str
    ) -> None:
        """Tenant B gets NOT_FOUND for every method on tenant A's hook, and A's hook does
        not run for B's events."""
        with open_ws(gateway.ws_url, keys.b_admin) as ws:
            assert a_hook not in [h["id"] for h in ok(ws, "hooks.list", {})["hooks"]]
            fails(ws, "hooks.get", {"hookId": a_hook}, "NOT_FOUND")
            fails(ws, "hooks.update", {"hookId": a_hook, "updates": {"priority": 2}},
                  "NOT_FOUND")
            fails(ws, "hooks.toggle", {"hookId": a_hook, "enabled": False}, "NOT_FOUND")
            fails(ws, "hooks.delete", {"hookId": a_hook}, "NOT_FOUND")
            fails(ws, "hooks.test", {"hookId": a_hook, "sampleEvent": {}}, "NOT_FOUND")
            outcome = ok(ws, "hooks.dispatch",
                         {"event": "pre_tool_use", "input": {"tool_name": "rm"}})
            assert outcome["decision"] == "allow"
            # Naming tenant A in the input does not make an agent of B act for A.
            spoof = ok(ws, "hooks.dispatch",
                       {"event": "pre_tool_use",
                        "input": {"tool_name": "rm", "tenant_id": "tenant-a"}})
            assert spoof["decision"] == "allow"
            history = ok(ws, "hooks.history", {"hookId": a_hook})
            assert history["executions"] == []
            fails(ws, "hooks.list", {"tenantId": "tenant-a"}, "UNAUTHORIZED")
            fails(ws, "hooks.create", BLOCKER | {"tenant_id": "tenant-a"}, "UNAUTHORIZED")
        with open_ws(gateway.ws_url, keys.a_admin) as ws:
            assert ok(ws, "hooks.get", {"hookId": a_hook})["hook"]["version"] == 1

    def test_global_hooks_need_master_scope(self, gateway: GatewayProcess, keys: Keys) -> None:
        with open_ws(gateway.ws_url, keys.a_admin) as ws:
            error = fails(ws, "hooks.create", BLOCKER | {"scope": "global"}, "UNAUTHORIZED")
            assert error["message"] == MASTER_MESSAGE
        with open_ws(gateway.ws_url, keys.master) as ws:
            global_id = ok(
                ws,
                "hooks.create",
                BLOCKER | {"scope": "global", "matcher": "^global_rm$", "name": "global"},
            )["hookId"]
            assert ok(ws, "hooks.get", {"hookId": global_id})["hook"]["scope"] == "global"
            assert ok(ws, "hooks.list", {"tenantId": "tenant-b"})["hooks"] is not None
        for key in (keys.a_admin, keys.b_admin):
            with open_ws(gateway.ws_url, key) as ws:
                assert ok(ws, "hooks.get", {"hookId": global_id})["hook"]["scope"] == "global"
                outcome = ok(ws, "hooks.dispatch",
                             {"event": "pre_tool_use", "input": {"tool_name": "global_rm"}})
                assert outcome["decision"] == "block"
                for method, params in (
                    ("hooks.update", {"hookId": global_id, "updates": {"priority": 1}}),
                    ("hooks.toggle", {"hookId": global_id, "enabled": False}),
                    ("hooks.delete", {"hookId": global_id}),
                ):
                    assert fails(ws, method, params, "UNAUTHORIZED")["message"] == MASTER_MESSAGE
        with open_ws(gateway.ws_url, keys.master) as ws:
            ok(ws, "hooks.delete", {"hookId": global_id})


class TestRevocation:
    def test_revoked_key_stops_working(self, gateway: GatewayProcess) -> None:
        """A key revoked with 'hookgate keys revoke' is refused within seconds on an open
        socket (which is then closed) and on REST."""
        key = gateway.create_key("tenant-r", "operator")
        listed = run_cli("keys", "list", "--json", data_dir=gateway.data_dir).stdout
        key_id = next(
            line.split('"id": "')[1].split('"')[0]
            for line in listed.splitlines()
            if '"tenant_id": "tenant-r"' in line
        )
        with open_ws(gateway.ws_url, key) as ws:
            ok(ws, "hooks.list", {})
            run_cli("keys", "revoke", key_id, data_dir=gateway.data_dir)
            deadline = time.monotonic() + 10
            error = None
            while time.monotonic() < deadline:
                try:
                    answer = fails_or_ok(ws)
                except ConnectionClosed:
                    break
                if answer is not None:
                    error = answer
                    break
                time.sleep(0.2)
            assert error is not None and error["code"] == "UNAUTHORIZED"
            assert "revoked" in error["message"]
            with pytest.raises(ConnectionClosed) as closed:
                ws.recv(timeout=5)
            assert closed.value.rcvd is not None and closed.value.rcvd.code == 4401
        response = httpx.get(gateway.url + "/api/v1/hooks", headers=gateway.headers(key))
        assert response.status_code == 401
        assert response.json()["error"]["code"] == "UNAUTHORIZED"


def fails_or_ok(ws) -> dict | None:  # type: ignore[no-untyped-def]
    from tests.server.wsutil import request

    answer = request(ws, "hooks.list", {})
    return None if answer["ok"] else answer["error"]


def test_builtin_hooks_are_read_only_except_enabled(gateway: GatewayProcess, keys: Keys) -> None:
    """A builtin hook (seeded by the store) refuses updates and deletion with READ_ONLY;
    toggling it works."""
    import asyncio

    from hookgate.definition_model import validate_definition
    from hookgate.store import open_store

    builtin = validate_definition({
        "event": "pre_tool_use", "handler_type": "callable", "scope": "global",
        "name": "builtin guard", "source": "builtin", "matcher": "^never$",
        "config": {"callable": "tests.server.hookfns:allow"},
    })

    async def seed() -> None:
        store = await open_store(data_dir=gateway.data_dir)
        try:
            await store.seed_builtins([builtin])
        finally:
            await store.close()

    asyncio.run(seed())
    with open_ws(gateway.ws_url, keys.master) as ws:
        hook = ok(ws, "hooks.get", {"hookId": builtin.id})["hook"]
        assert hook["source"] == "builtin"
        error = fails(ws, "hooks.update", {"hookId": builtin.id, "updates": {"priority": 9}},
                      "READ_ONLY")
        assert "builtin" in error["message"]
        fails(ws, "hooks.delete", {"hookId": builtin.id}, "READ_ONLY")
        assert ok(ws, "hooks.toggle", {"hookId": builtin.id, "enabled": False})["enabled"] is False
        assert ok(ws, "hooks.get", {"hookId": builtin.id})["hook"]["enabled"] is False
