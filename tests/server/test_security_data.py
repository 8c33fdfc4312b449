"""Attacks on secrets, the audit log and the gateway's liveness, run against a real
``hookgate serve`` with ordinary tenant keys (issue 10, part B)."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from tests.server.conftest import ALLOW_TEST_HOOKS, Keys
from tests.server.gateway_process import GatewayProcess
from tests.server.wsutil import fails, ok, open_ws, request, send_raw
from tests.support.webhook_server import Reply, WebhookServer

LOOPBACK = "127.0.0.0/8"
SIGN_IN_S = 1.0


def nested(levels: int) -> str:
    """JSON text of objects nested ``levels`` deep (Python's json module cannot write it)."""
    return '{"a":' * (levels - 1) + "{}" + "}" * (levels - 1)


def dispatch_text(tool_input: str, session: str) -> str:
    return (
        '{"event": "pre_tool_use", "input": {"tool_name": "deep", "session_id": "'
        + session + '", "tool_input": ' + tool_input + "}}"
    )


# Overrides conftest's gateway; conftest's ``keys`` fixture then signs keys on this one.
@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayProcess]:
    data_dir = tmp_path_factory.mktemp("gw-sec") / "data"
    served = GatewayProcess(
        data_dir,
        args=(*ALLOW_TEST_HOOKS, "--connect-timeout", str(SIGN_IN_S)),
        env={"HOOKGATE_SSRF_ALLOWLIST": LOOPBACK},
    ).start()
    try:
        yield served
    finally:
        served.stop()


def history(gateway: GatewayProcess, key: str, session: str, count: int) -> list[dict[str, Any]]:
    """The session's execution rows, once ``count`` of them are committed (async audit)."""
    deadline = time.monotonic() + 10
    with open_ws(gateway.ws_url, key) as ws:
        while True:
            rows: list[dict[str, Any]] = ok(ws, "hooks.history", {"sessionId": session})[
                "executions"
            ]
            if len(rows) >= count or time.monotonic() > deadline:
                assert len(rows) == count, rows
                return rows
            time.sleep(0.05)


class TestSecretHeadersFollowTheirHost:
    def test_a_new_url_drops_the_secret_and_a_partial_config_keeps_it(
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
            # A partial config update at the same URL keeps the sealed header.
            ok(ws, "hooks.update", {"hookId": hook_id, "updates": {
                "config": {"url": home.url("/v1"), "method": "POST"}}})
            hook = ok(ws, "hooks.get", {"hookId": hook_id})["hook"]
            assert hook["config"]["headers"] == {"Authorization": None}
            ok(ws, "hooks.dispatch", {"event": "pre_tool_use", "input": {"tool_name": "hdr"}})
            assert home.requests[-1].path == "/v1"
            assert home.requests[-1].headers["Authorization"] == "Bearer s3cret"
            # Moving the hook to another URL, keeping the secret (null) or leaving headers
            # out: the update is applied and says which secret was dropped (issue 24, item
            # 15; before, a move to another host was refused and a new path kept it).
            changed = ok(ws, "hooks.update", {"hookId": hook_id, "updates": {
                "config": {"url": attacker.url("/steal"), "headers": {"Authorization": None}}}})
            assert changed["droppedSecretHeaders"] == ["Authorization"]
            ok(ws, "hooks.dispatch", {"event": "pre_tool_use", "input": {"tool_name": "hdr"}})
            assert "Authorization" not in attacker.requests[-1].headers
            # Moving with the value given again is fine: it was given for the new URL.
            ok(ws, "hooks.update", {"hookId": hook_id, "updates": {"config": {
                "url": attacker.url("/new"), "headers": {"Authorization": "Bearer other"}}}})
            ok(ws, "hooks.dispatch", {"event": "pre_tool_use", "input": {"tool_name": "hdr"}})
            assert attacker.requests[-1].headers["Authorization"] == "Bearer other"
            assert all(r.headers.get("Authorization") != "Bearer s3cret" for r in attacker.requests)
            ok(ws, "hooks.delete", {"hookId": hook_id})


class TestInputLimits:
    def test_input_nested_a_thousand_deep_is_invalid_and_audited(
        self, gateway: GatewayProcess, keys: Keys
    ) -> None:
        with open_ws(gateway.ws_url, keys.a_admin) as ws:
            hook_id = ok(ws, "hooks.create", {
                "event": "pre_tool_use", "handler_type": "callable", "scope": "tenant",
                "name": "deep guard", "matcher": "^deep$", "if_expr": "tool_name == 'deep'",
                "config": {"callable": "tests.server.hookfns:allow"},
            })["hookId"]
            session = f"deep-{time.monotonic_ns()}"
            frame = '{"type": "req", "id": "deep-1", "method": "hooks.dispatch", "params": '
            answer = send_raw(ws, frame + dispatch_text(nested(1000), session) + "}")
            assert answer["ok"] is False and answer["error"]["code"] == "INVALID_INPUT", answer
            assert "nested deeper than 255 levels" in answer["error"]["message"]
            # Over REST as well, with the same code.
            reply = gateway.rest("POST", "/api/v1/dispatch", keys.a_operator,
                                 content=dispatch_text(nested(1000), session),
                                 headers={**gateway.headers(keys.a_operator),
                                          "Content-Type": "application/json"})
            assert reply.status_code == 400 and reply.json()["error"]["code"] == "INVALID_INPUT"
            ok(ws, "hooks.delete", {"hookId": hook_id})
        rows = history(gateway, keys.a_viewer, session, count=2)
        assert {row["decision"] for row in rows} == {"block"}
        assert all("nested deeper" in row["error"] for row in rows)
        assert all(row["tenant_id"] == "tenant-a" for row in rows)


class TestSignInDeadline:
    def test_an_unauthenticated_socket_is_closed_whatever_it_sends(
        self, gateway: GatewayProcess
    ) -> None:
        with open_ws(gateway.ws_url, None) as ws:
            # Keep sending frames (each answered with an error) until the gateway hangs up:
            # only its sign-in deadline ends this loop (else the test's timeout fails it).
            while True:
                try:
                    answer = request(ws, "hooks.list", {})
                except Exception:  # the close arrives as the next read
                    break
                assert answer["ok"] is False
            assert ws.close_code == 4401


class TestCommandAnswers:
    def test_a_truncated_json_answer_blocks(self, gateway: GatewayProcess, keys: Keys) -> None:
        with open_ws(gateway.ws_url, keys.master) as ws:
            hook_id = ok(ws, "hooks.create", {
                "event": "pre_tool_use", "handler_type": "command", "scope": "tenant",
                "name": "truncated", "matcher": "^cut$",
                "config": {"command": "printf '{\"decision\": \"allow\", \"reason\": \"ok'"},
            })["hookId"]
            outcome = ok(ws, "hooks.dispatch", {"event": "pre_tool_use",
                                                "input": {"tool_name": "cut"}})
            ok(ws, "hooks.delete", {"hookId": hook_id})
        assert outcome["decision"] == "block", outcome
        assert "not valid JSON" in outcome["trace"][0]["error"]


LEAKY_STDERR = (
    "failed: token=hunter2-pass mail alice@example.com Authorization: Bearer abc.def.ghi "
    "key sk-live-0123456789abcdef " + "x" * 300 + " tail token=second-secret"
)
SECRETS = ("hunter2", "alice@example.com", "abc.def.ghi", "sk-live", "second-secret")


class TestAuditKeepsNoSecret:
    def test_command_stderr_is_redacted_in_metadata_and_sealed_in_full(
        self, gateway: GatewayProcess, keys: Keys
    ) -> None:
        session = f"leak-{time.monotonic_ns()}"
        with open_ws(gateway.ws_url, keys.master) as ws:
            hook_id = ok(ws, "hooks.create", {
                "event": "pre_tool_use", "handler_type": "command", "scope": "tenant",
                "tenant_id": "tenant-a", "name": "leaky", "matcher": "^leak$",
                "config": {"command": f"echo '{LEAKY_STDERR}' >&2; exit 1"},
            })["hookId"]
            outcome = ok(ws, "hooks.dispatch", {"event": "pre_tool_use", "input": {
                "tool_name": "leak", "session_id": session, "tenant_id": "tenant-a"}})
            assert outcome["decision"] == "block"
            ok(ws, "hooks.delete", {"hookId": hook_id})
        [row] = history(gateway, keys.a_viewer, session, count=1)
        readable = json.dumps({k: v for k, v in row.items() if k != "error_detail"})
        for secret in SECRETS:
            assert secret not in readable, secret
        assert "[REDACTED]" in row["metadata"]["stderr"]
        assert len(row["metadata"]["stderr"]) <= 256
        assert row["error_detail"] is None  # viewers never get the sealed text
        [full] = history(gateway, keys.a_admin, session, count=1)
        assert "token=hunter2-pass" in full["error_detail"]
        assert "second-secret" in full["error_detail"]

    def test_a_webhook_error_body_is_scrubbed_before_it_is_cut(
        self, gateway: GatewayProcess, keys: Keys
    ) -> None:
        secret = "QWxhZGRpbjpvcGVuIHNlc2FtZQ-0123456789"
        # The credential straddles the 200-character excerpt: cutting first kept its prefix.
        body = "e" * 185 + f" {secret} back"
        session = f"echo-{time.monotonic_ns()}"
        with (
            WebhookServer(Reply(400, body)) as server,
            open_ws(gateway.ws_url, keys.a_admin) as ws,
        ):
            hook_id = ok(ws, "hooks.create", {
                "event": "pre_tool_use", "handler_type": "http", "scope": "tenant",
                "name": "echoing", "matcher": "^echo$",
                "config": {"url": server.url(), "headers": {"X-Api-Key": secret},
                           "secret_headers": ["X-Api-Key"]},
            })["hookId"]
            outcome = ok(ws, "hooks.dispatch", {"event": "pre_tool_use", "input": {
                "tool_name": "echo", "session_id": session}})
            ok(ws, "hooks.delete", {"hookId": hook_id})
        assert server.requests[0].headers["X-Api-Key"] == secret
        assert outcome["decision"] == "block"
        assert secret[:10] not in json.dumps(outcome)
        [row] = history(gateway, keys.a_viewer, session, count=1)
        assert secret[:10] not in json.dumps(row), row


class TestNothingFreezesTheLoop:
    def test_a_stalling_plain_callable_times_out_and_the_gateway_keeps_serving(
        self, gateway: GatewayProcess, keys: Keys
    ) -> None:
        with open_ws(gateway.ws_url, keys.a_admin) as ws:
            hook_id = ok(ws, "hooks.create", {
                "event": "pre_tool_use", "handler_type": "callable", "scope": "tenant",
                "name": "stall", "matcher": "^stall$", "timeout_ms": 300,
                "config": {"callable": "tests.server.hookfns:stall"},
            })["hookId"]
        answered: dict[str, Any] = {}

        def dispatch() -> None:
            with open_ws(gateway.ws_url, keys.a_operator) as ws:
                answered["outcome"] = ok(ws, "hooks.dispatch", {"event": "pre_tool_use",
                    "input": {"tool_name": "stall", "tool_input": {"seconds": 60}}})

        caller = threading.Thread(target=dispatch)
        caller.start()
        try:
            # While the function sleeps (60 s), the gateway answers other requests.
            assert httpx.get(gateway.url + "/healthz", timeout=10).status_code == 200
        finally:
            caller.join(30)
        outcome = answered["outcome"]
        assert outcome["decision"] == "block" and "timed out" in outcome["reason"], outcome
        # The function is still running (stuck) after the answer: the 300 ms timeout held,
        # the gateway did not wait for it.
        metrics = gateway.rest("GET", "/metrics", keys.master).text
        assert "hookgate_hook_threads_stuck 1.0" in metrics
        assert "hookgate_hook_threads_abandoned_total 1.0" in metrics
        with open_ws(gateway.ws_url, keys.a_admin) as ws:
            ok(ws, "hooks.delete", {"hookId": hook_id})

    def test_costly_filters_are_refused_when_defined(
        self, gateway: GatewayProcess, keys: Keys
    ) -> None:
        long_expr = " || ".join(f"tool_input.s.contains('x{i}')" for i in range(3000))
        nested = "tool_input.a.all(k, tool_input.b.exists(j, j == k))"
        with open_ws(gateway.ws_url, keys.a_admin) as ws:
            for expr, message in ((long_expr, "longer than 2048"), (nested, "nest")):
                hook = {"event": "pre_tool_use", "handler_type": "callable", "scope": "tenant",
                        "name": "filtered", "if_expr": expr,
                        "config": {"callable": "tests.server.hookfns:allow"}}
                error = fails(ws, "hooks.create", hook, "INVALID_REQUEST")
                assert message in error["message"], error
                error = fails(ws, "hooks.test", {"config": hook, "sampleEvent": {
                    "tool_name": "x"}}, "INVALID_REQUEST")
                assert message in error["message"], error
