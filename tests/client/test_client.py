"""The Python gateway clients (async and sync) against a real ``hookgate serve``."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.server.conftest import start_gateway
from tests.server.gateway_process import GatewayProcess

from hookgate.client import (
    AsyncGatewayClient,
    GatewayClient,
    GatewayConnectionError,
    GatewayError,
)

GUARD = {
    "event": "pre_tool_use",
    "handler_type": "callable",
    "scope": "tenant",
    "name": "guard",
    "matcher": "^rm$",
    "config": {"callable": "tests.server.hookfns:block"},
}


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayProcess]:
    gateway = start_gateway(tmp_path_factory.mktemp("client"))
    try:
        yield gateway
    finally:
        gateway.stop()


class TestSyncClient:
    def test_methods_round_trip(self, served: GatewayProcess) -> None:
        assert served.master_key is not None
        with GatewayClient(served.url, served.master_key) as gateway:
            assert gateway.info()["edition"] == "lite"
            hook_id = gateway.create_hook(GUARD)["hookId"]
            assert gateway.get_hook(hook_id)["hook"]["name"] == "guard"
            assert hook_id in [h["id"] for h in gateway.list_hooks(event="pre_tool_use")["hooks"]]
            assert gateway.update_hook(hook_id, {"priority": 3})["version"] == 2
            blocked = gateway.dispatch("pre_tool_use", {"tool_name": "rm"})
            assert blocked["decision"] == "block"
            tested = gateway.test_hook({"tool_name": "rm"}, hook_id=hook_id)
            assert tested["result"]["decision"] == "block"
            assert gateway.toggle_hook(hook_id, False) == {"hookId": hook_id, "enabled": False}
            assert gateway.dispatch("pre_tool_use", {"tool_name": "rm"})["decision"] == "allow"
            assert "executions" in gateway.history(hookId=hook_id)
            gateway.delete_hook(hook_id)
            with pytest.raises(GatewayError) as missing:
                gateway.get_hook(hook_id)
            assert missing.value.code == "NOT_FOUND"

    def test_keys_and_hooks_files(self, served: GatewayProcess) -> None:
        assert served.master_key is not None
        with GatewayClient(served.url, served.master_key) as gateway:
            made = gateway.create_key("viewer", name="client", tenant_id="files")
            assert made["key"]["tenant_id"] == "files" and made["secret"].startswith("hg-")
            listed = gateway.list_keys(tenant_id="files")["keys"]
            assert [k["name"] for k in listed] == ["client"]
            assert gateway.revoke_key(made["key"]["id"])["key"]["revoked_at"] is not None
            text = (
                "hooks:\n- {event: stop, handler_type: http, name: sink,\n"
                "   config: {url: 'http://127.0.0.1:9/'}}\n"
            )
            checked = gateway.import_hooks(text, dry_run=True, tenant_id="files")
            assert checked["applied"] is False and checked["hooks"][0]["action"] == "create"
            applied = gateway.import_hooks(text, tenant_id="files")
            hook_id = applied["hooks"][0]["hookId"]
            assert "loopback" in gateway.check_hook(hook_id)["warnings"][0]["message"]
            exported = gateway.export_hooks(format="json", tenant_id="files")
            assert exported["count"] == 1 and '"sink"' in exported["content"]

    def test_validation_error_carries_problems(self, served: GatewayProcess) -> None:
        assert served.master_key is not None
        with GatewayClient(served.url, served.master_key) as gateway:
            with pytest.raises(GatewayError) as refused:
                gateway.create_hook({"event": "stop"})
            assert refused.value.code == "INVALID_REQUEST"
            assert refused.value.message == "handler_type, event, and scope are required"
            assert refused.value.details["problems"]

    def test_bad_key_and_unreachable(self, served: GatewayProcess, tmp_path: Path) -> None:
        with pytest.raises(GatewayError) as refused:
            GatewayClient(served.url, "hg-nope").connect()
        assert refused.value.code == "UNAUTHORIZED"
        with pytest.raises(GatewayConnectionError):
            GatewayClient("http://127.0.0.1:9", "hg-nope", timeout=2).connect()


class TestAsyncClient:
    async def test_concurrent_dispatches(self, served: GatewayProcess) -> None:
        """Many coroutines share one client and one socket; answers are matched by id."""
        assert served.master_key is not None
        async with AsyncGatewayClient(served.url, served.master_key) as gateway:
            hook_id = (await gateway.create_hook(GUARD | {"name": "async guard"}))["hookId"]
            outcomes = await asyncio.gather(
                *(
                    gateway.dispatch("pre_tool_use", {"tool_name": "rm" if n % 2 else "ls"})
                    for n in range(40)
                )
            )
            decisions = [o["decision"] for o in outcomes]
            assert decisions == ["allow" if n % 2 == 0 else "block" for n in range(40)]
            await gateway.delete_hook(hook_id)

    async def test_errors_and_reconnect(self, served: GatewayProcess) -> None:
        assert served.master_key is not None
        gateway = AsyncGatewayClient(served.url, served.master_key)
        try:
            with pytest.raises(GatewayError) as unknown:
                await gateway.call("hooks.nope", {})
            assert unknown.value.code == "METHOD_NOT_FOUND"
            await gateway.aclose()
            # The next call connects again.
            assert (await gateway.info())["role"] == "admin"
        finally:
            await gateway.aclose()

    async def test_refused_key(self, served: GatewayProcess) -> None:
        with pytest.raises(GatewayError) as refused:
            async with AsyncGatewayClient(served.url, "hg-nope"):
                pass
        assert refused.value.code == "UNAUTHORIZED"
