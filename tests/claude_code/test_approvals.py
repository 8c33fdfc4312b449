"""The real Claude Code CLI asking a real gateway whose hook asks a person: Claude Code waits
(within its hook timeout) while the person approves or denies through the gateway's API."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from tests.server.conftest import gateway_with_hooks
from tests.server.gateway_process import GatewayProcess
from tests.support.anthropic_server import ScriptedAnthropic, say, use_tool
from tests.support.claude_code_cli import ClaudeProject

from hookgate.client import GatewayClient

pytestmark = pytest.mark.timeout(150)


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[GatewayProcess, str]]:
    with gateway_with_hooks(
        tmp_path_factory.mktemp("cc-approvals"),
        "fleet",
        {
            "event": "pre_tool_use", "handler_type": "callable", "scope": "tenant",
            "tenant_id": "fleet", "name": "ask about Bash", "matcher": "^Bash$",
            "config": {"callable": "tests.server.hookfns:ask"},
        },
    ) as served_and_key:
        yield served_and_key


def decide_when_asked(served: GatewayProcess, key: str, **decision: Any) -> threading.Thread:
    """A person: waits (long-polling approvals.watch) for the approval, then decides."""

    def person() -> None:
        with GatewayClient(served.url, key, timeout=90) as client:
            revision = None
            while True:
                pending = client.list_approvals()["approvals"]
                if pending:
                    break
                revision = client.call(
                    "approvals.watch", {"revision": revision, "timeoutS": 20}
                )["revision"]
            approval_id = pending[0]["id"]
            if decision.pop("approve"):
                client.approve(approval_id, **decision)
            else:
                client.deny(approval_id, **decision)

    thread = threading.Thread(target=person, daemon=True)
    thread.start()
    return thread


@pytest.mark.parametrize("transport", ["curl", "python"])
def test_claude_code_waits_for_a_person_who_approves_with_an_edit(
    transport: str, gateway: tuple[GatewayProcess, str], project: ClaudeProject,
    api: ScriptedAnthropic,
) -> None:
    served, key = gateway
    project.install("--gateway", served.url, "--transport", transport, "--event", "PreToolUse")
    api.script(use_tool("Bash", {"command": "touch ASKED"}), say("done"))
    # The person decides with an approver key of their own: the agent's key asked.
    person = decide_when_asked(
        served, served.create_key("fleet", "approver"), approve=True, comment="make it EDITED",
        updated_input={"command": "touch EDITED"},
    )
    run = project.run("make a file", HOOKGATE_API_KEY=key)
    person.join(timeout=30)
    assert run.returncode == 0, run.stderr
    assert project.exists("EDITED") and not project.exists("ASKED")


def test_claude_code_is_denied_with_the_persons_comment(
    gateway: tuple[GatewayProcess, str], project: ClaudeProject, api: ScriptedAnthropic
) -> None:
    served, key = gateway
    project.install("--gateway", served.url, "--event", "PreToolUse")
    api.script(use_tool("Bash", {"command": "touch DENIED"}), say("ok"))
    person = decide_when_asked(
        served, served.create_key("fleet", "approver"), approve=False, comment="not on a friday"
    )
    run = project.run("make a file", HOOKGATE_API_KEY=key)
    person.join(timeout=30)
    assert run.returncode == 0, run.stderr
    assert not project.exists("DENIED")
    assert "not on a friday" in json.dumps(api.agent_calls[1].tool_results())
