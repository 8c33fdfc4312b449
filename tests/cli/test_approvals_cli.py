"""``hookgate approvals list|approve|deny`` (the real CLI, in a subprocess) against a real
gateway while an agent waits on a dispatch."""

from __future__ import annotations

import subprocess
import threading
from pathlib import Path
from typing import Any

import pytest
from tests.server.conftest import start_gateway
from tests.server.gateway_process import HOOKGATE, REPO, GatewayProcess, gateway_env

from hookgate.client import GatewayClient

pytestmark = pytest.mark.timeout(120)


def cli(gateway: GatewayProcess, key: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*HOOKGATE, "approvals", *args, "--gateway", gateway.url],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=REPO,
        env=gateway_env(HOOKGATE_API_KEY=key),
    )


def waiting_agent(
    gateway: GatewayProcess, key: str, cmd: str
) -> tuple[threading.Thread, dict[str, Any]]:
    outcome: dict[str, Any] = {}

    def run() -> None:
        with GatewayClient(gateway.url, key, timeout=90) as client:
            outcome.update(
                client.dispatch(
                    "pre_tool_use", {"tool_name": "exec", "tool_input": {"cmd": cmd}}
                )
            )

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread, outcome


def pending_id(gateway: GatewayProcess, key: str) -> str:
    # Long-poll on approvals.watch until the agent's approval exists (no fixed sleep).
    with GatewayClient(gateway.url, key, timeout=60) as client:
        revision = None
        while True:
            listed = client.list_approvals()
            if listed["approvals"]:
                return str(listed["approvals"][0]["id"])
            answer = client.call("approvals.watch", {"revision": revision, "timeoutS": 10})
            revision = answer["revision"]


def test_list_approve_with_edited_input_and_deny(tmp_path: Path) -> None:
    gateway = start_gateway(tmp_path)
    try:
        agent = gateway.create_key("default", "operator")
        # A person decides: never the agent's key (it asked), so another one.
        operator = gateway.create_key("default", "operator")
        viewer = gateway.create_key("default", "viewer")
        created = gateway.rest(
            "POST",
            "/api/v1/hooks",
            json={
                "event": "pre_tool_use",
                "handler_type": "callable",
                "scope": "tenant",
                "tenant_id": "default",
                "name": "exec guard",
                "config": {"callable": "tests.server.hookfns:ask"},
            },
        )
        assert created.status_code == 201, created.text

        thread, outcome = waiting_agent(gateway, agent, "rm -rf build")
        approval_id = pending_id(gateway, operator)
        listed = cli(gateway, viewer, "list")
        assert listed.returncode == 0, listed.stderr
        assert approval_id in listed.stdout and "rm -rf build" in listed.stdout
        assert "a person should look at exec" in listed.stdout

        refused = cli(gateway, viewer, "approve", approval_id)
        assert refused.returncode != 0 and "UNAUTHORIZED" in refused.stderr
        bad = cli(gateway, operator, "approve", approval_id, "--input", "{oops")
        assert bad.returncode != 0 and "not JSON" in bad.stderr
        assert thread.is_alive()

        approved = cli(
            gateway, operator, "approve", approval_id, "-m", "only build", "--input",
            '{"cmd": "rm -rf build/tmp"}',
        )
        assert approved.returncode == 0, approved.stderr
        assert "with an edited input" in approved.stdout
        thread.join(timeout=30)
        assert outcome["decision"] == "allow"
        assert outcome["updated_input"] == {"cmd": "rm -rf build/tmp"}
        assert outcome["reason"].endswith(": only build")

        again = cli(gateway, operator, "deny", approval_id)
        assert again.returncode != 0 and "already approved" in again.stderr

        thread, outcome = waiting_agent(gateway, agent, "curl x | sh")
        second = pending_id(gateway, operator)
        denied = cli(gateway, operator, "deny", second, "--comment", "no pipes")
        assert denied.returncode == 0, denied.stderr
        thread.join(timeout=30)
        assert outcome["decision"] == "block" and "no pipes" in outcome["reason"]

        history = cli(gateway, viewer, "list", "--status", "all")
        assert "approved by" in history.stdout and "input edited" in history.stdout
        assert "denied by" in history.stdout and "no pipes" in history.stdout
    finally:
        gateway.stop()


def test_without_a_key_the_cli_says_what_to_set(tmp_path: Path) -> None:
    result = subprocess.run(
        [*HOOKGATE, "approvals", "list", "--gateway", "http://127.0.0.1:9"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=REPO,
        env={k: v for k, v in gateway_env().items() if k != "HOOKGATE_API_KEY"},
    )
    assert result.returncode != 0 and "HOOKGATE_API_KEY" in result.stderr
