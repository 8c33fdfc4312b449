"""The real Claude Code CLI asking a real ``hookgate serve`` through each transport that
``hookgate claude-code install --gateway URL --transport …`` writes: ``curl`` (a command
hook, the default), ``http`` (Claude Code's own http hook) and ``python`` (the bridge).

Also what happens when the gateway is down: every transport fails closed (the tool does not
run); Claude Code's http hook does so through the ``onFailure: "block"`` install writes."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.server.conftest import gateway_with_hooks, history_rows
from tests.server.gateway_process import GatewayProcess, free_port
from tests.support.anthropic_server import ScriptedAnthropic, say, use_tool
from tests.support.claude_code_cli import ClaudeProject


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[GatewayProcess, str]]:
    with gateway_with_hooks(
        tmp_path_factory.mktemp("cc-gateway"),
        "fleet",
        {
            "event": "pre_tool_use", "handler_type": "callable", "scope": "tenant",
            "tenant_id": "fleet", "name": "no rm -rf", "matcher": "^Bash$",
            "if_expr": 'tool_input.command.contains("rm -rf")',
            "config": {"callable": "tests.server.hookfns:block"},
        },
    ) as served_and_key:
        yield served_and_key


@pytest.mark.parametrize("transport", ["curl", "http", "python"])
def test_gateway_blocks_through_each_transport(
    transport: str, gateway: tuple[GatewayProcess, str], project: ClaudeProject,
    api: ScriptedAnthropic,
) -> None:
    served, key = gateway
    project.install("--gateway", served.url, "--transport", transport,
                    "--event", "PreToolUse")
    api.script(use_tool("Bash", {"command": "touch MARKER && rm -rf junk"}), say("ok"),
               use_tool("Bash", {"command": "touch SAFE"}), say("done"))
    run = project.run("clean up", HOOKGATE_API_KEY=key)
    assert run.returncode == 0, run.stderr
    assert not project.exists("MARKER")
    assert "blocked by test hook on pre_tool_use" in json.dumps(
        api.agent_calls[1].tool_results())
    # The session's audit rows are in the gateway, under the key's tenant.
    session = run.result["session_id"]
    decisions = [row["decision"] for row in history_rows(served, key, session)]
    assert "block" in decisions


@pytest.mark.parametrize("transport", ["curl", "python"])
def test_gateway_down_fails_closed(transport: str, project: ClaudeProject,
                                   api: ScriptedAnthropic) -> None:
    down = f"http://127.0.0.1:{free_port()}"
    project.install("--gateway", down, "--transport", transport, "--event", "PreToolUse")
    api.script(use_tool("Bash", {"command": "touch MARKER"}), say("ok"))
    project.run("go", HOOKGATE_API_KEY="hg-any")
    assert not project.exists("MARKER")
    assert "hookgate" in json.dumps(api.agent_calls[1].tool_results())


def test_refused_key_fails_closed_with_curl(gateway: tuple[GatewayProcess, str],
                                           project: ClaudeProject,
                                           api: ScriptedAnthropic) -> None:
    served, _ = gateway
    project.install("--gateway", served.url, "--event", "PreToolUse")
    api.script(use_tool("Bash", {"command": "touch MARKER"}), say("ok"))
    project.run("go", HOOKGATE_API_KEY="hg-not-a-key")
    assert not project.exists("MARKER")


def test_http_transport_fails_closed_when_the_gateway_is_down(
    project: ClaudeProject, api: ScriptedAnthropic, tmp_path: Path
) -> None:
    # Claude Code's own http hook lets the tool run when the gateway is down, unless the
    # hook says onFailure: "block" (Claude Code 2.1.295+), which install writes on the
    # events that can be stopped. (Until issue 28 this test asserted the fail-open.)
    down = f"http://127.0.0.1:{free_port()}"
    project.install("--gateway", down, "--transport", "http", "--event", "PreToolUse")
    hook = json.loads(project.settings.read_text())["hooks"]["PreToolUse"][0]["hooks"][0]
    assert hook["onFailure"] == "block"
    api.script(use_tool("Bash", {"command": "touch MARKER"}), say("ok"))
    project.run("go", HOOKGATE_API_KEY="hg-any")
    assert not project.exists("MARKER")
    assert "onFailure" in json.dumps(api.agent_calls[1].tool_results())
