"""The approval webhook: posted when a hook asks a person, with a link to the panel and
nothing of the tool input; refused by the SSRF guard unless the destination is allowed."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.server.conftest import start_gateway
from tests.support.waiting import wait_until
from tests.support.webhook_server import WebhookServer

pytestmark = pytest.mark.timeout(90)

ASK_HOOK = {
    "event": "pre_tool_use",
    "handler_type": "callable",
    "scope": "tenant",
    "name": "exec guard",
    "config": {"callable": "tests.server.hookfns:ask"},
}
SECRET_INPUT = {"cmd": "deploy --token sk-live-4f9a8b7c6d5e"}


def ask_once(gateway: object) -> str:
    from tests.server.gateway_process import GatewayProcess

    assert isinstance(gateway, GatewayProcess)
    created = gateway.rest("POST", "/api/v1/hooks", json=ASK_HOOK)
    assert created.status_code == 201, created.text
    answer = gateway.rest(
        "POST",
        "/api/v1/dispatch",
        json={
            "event": "pre_tool_use",
            "input": {"tool_name": "exec", "tool_input": SECRET_INPUT, "agent_id": "bot"},
            "approvalWaitS": 0,
        },
    ).json()
    assert answer["approval"]["status"] == "pending"
    return str(answer["approval"]["id"])


def test_new_approvals_are_posted_with_a_link_and_without_the_input(tmp_path: Path) -> None:
    with WebhookServer() as hook:
        gateway = start_gateway(
            tmp_path,
            "--approval-webhook",
            hook.url("/notify"),
            "--public-url",
            "https://hookgate.example.test",
            HOOKGATE_SSRF_ALLOWLIST="127.0.0.1",
        )
        try:
            approval_id = ask_once(gateway)
            wait_until(lambda: hook.requests, "the approval webhook is called", seconds=15)
            [seen] = hook.requests
            body = seen.json
            assert seen.path == "/notify"
            assert body["type"] == "approval.created"
            assert body["approval"]["id"] == approval_id
            assert body["approval"]["tool_name"] == "exec"
            assert body["approval"]["reason"] == "a person should look at exec"
            assert body["link"] == f"https://hookgate.example.test/#/approvals/{approval_id}"
            assert "sk-live" not in seen.body.decode()
            assert "sk-live" not in gateway.log()  # nor in the gateway log
        finally:
            gateway.stop()


def test_a_loopback_webhook_is_refused_without_the_allowlist(tmp_path: Path) -> None:
    with WebhookServer() as hook:
        gateway = start_gateway(tmp_path, "--approval-webhook", hook.url("/notify"))
        try:
            ask_once(gateway)
            wait_until(lambda: "hookgate.approval.notify_failed" in gateway.log(),
                       "the refused notification in the gateway log", seconds=15)
            assert hook.requests == []
            # The approval itself is there, waiting for a person.
            listed = gateway.rest("GET", "/api/v1/approvals").json()
            assert listed["pendingCount"] == 1
        finally:
            gateway.stop()
