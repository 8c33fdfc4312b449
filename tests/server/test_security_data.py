"""Attacks on secrets, the audit log and the gateway's liveness, run against a real
``hookgate serve`` with ordinary tenant keys (issue 10, part B)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.server.conftest import ALLOW_TEST_HOOKS, Keys
from tests.server.gateway_process import GatewayProcess
from tests.server.wsutil import fails, ok, open_ws
from tests.support.webhook_server import Reply, WebhookServer

LOOPBACK = "127.0.0.0/8"


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayProcess]:
    data_dir = tmp_path_factory.mktemp("gw-sec") / "data"
    served = GatewayProcess(
        data_dir, args=ALLOW_TEST_HOOKS, env={"HOOKGATE_SSRF_ALLOWLIST": LOOPBACK}
    ).start()
    try:
        yield served
    finally:
        served.stop()


@pytest.fixture(scope="module")
def keys(gateway: GatewayProcess) -> Keys:
    assert gateway.master_key is not None
    return Keys(
        master=gateway.master_key,
        a_viewer=gateway.create_key("tenant-a", "viewer"),
        a_operator=gateway.create_key("tenant-a", "operator"),
        a_admin=gateway.create_key("tenant-a", "admin"),
        b_admin=gateway.create_key("tenant-b", "admin"),
    )


class TestSecretHeadersFollowTheirHost:
    def test_a_new_host_needs_the_secret_again_and_a_partial_config_keeps_it(
        self, gateway: GatewayProcess, keys: Keys
    ) -> None:
        with (
            WebhookServer(Reply(200, {"decision": "allow"})) as home,
            WebhookServer(Reply(200, {"decision": "allow"}), host="127.0.0.2") as attacker,
            open_ws(gateway.ws_url, keys.a_admin) as ws,
        ):
            hook_id = ok(ws, "hooks.create", {
                "event": "pre_tool_use", "handler_type": "http", "scope": "tenant",
                "name": "notify", "matcher": "^hdr$",
                "config": {"url": home.url("/v1"), "headers": {"Authorization": "Bearer s3cret"}},
            })["hookId"]
            # Moving the hook to another host, keeping the secret (null) or leaving headers
            # out: both refused, with a message that asks for the value again.
            for config in (
                {"url": attacker.url("/steal"), "headers": {"Authorization": None}},
                {"url": attacker.url("/steal")},
            ):
                error = fails(ws, "hooks.update", {"hookId": hook_id, "updates": {
                    "config": config}}, "INVALID_REQUEST")
                assert "give them again" in error["message"], error
                assert "127.0.0.2" in error["message"] and "s3cret" not in error["message"]
            ok(ws, "hooks.dispatch", {"event": "pre_tool_use", "input": {"tool_name": "hdr"}})
            assert attacker.requests == []
            # A partial config update on the same host keeps the sealed header.
            ok(ws, "hooks.update", {"hookId": hook_id, "updates": {
                "config": {"url": home.url("/v2")}}})
            hook = ok(ws, "hooks.get", {"hookId": hook_id})["hook"]
            assert hook["config"]["headers"] == {"Authorization": None}
            ok(ws, "hooks.dispatch", {"event": "pre_tool_use", "input": {"tool_name": "hdr"}})
            assert home.requests[-1].path == "/v2"
            assert home.requests[-1].headers["Authorization"] == "Bearer s3cret"
            # Moving with the value given again is fine: it was given for the new host.
            ok(ws, "hooks.update", {"hookId": hook_id, "updates": {"config": {
                "url": attacker.url("/new"), "headers": {"Authorization": "Bearer other"}}}})
            ok(ws, "hooks.dispatch", {"event": "pre_tool_use", "input": {"tool_name": "hdr"}})
            assert attacker.requests[-1].headers["Authorization"] == "Bearer other"
            ok(ws, "hooks.delete", {"hookId": hook_id})


