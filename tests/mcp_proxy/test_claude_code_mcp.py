"""The real Claude Code CLI (``claude -p``, offline against a scripted Anthropic API) with
``hookgate mcp-proxy`` in front of an MCP server, configured the documented way (``.mcp.json``).

What the model is offered and what it is told after its call are read from the API requests
Claude Code made; whether the call reached the server is read from the server's call log."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.mcp_proxy.proxy_support import DEMO_SERVER, HOOKGATE, HOOKS, REPO, read_calls
from tests.support.anthropic_server import ScriptedAnthropic, say, use_tool
from tests.support.claude_code_cli import ClaudeProject, require_claude


@pytest.fixture
def api() -> Iterator[ScriptedAnthropic]:
    with ScriptedAnthropic() as server:
        yield server


@pytest.fixture
def project(tmp_path: Path, api: ScriptedAnthropic) -> ClaudeProject:
    project = ClaudeProject(tmp_path, api, require_claude())
    state = tmp_path / "upstream"
    state.mkdir()
    servers = {"mcpServers": {"demo": {
        "type": "stdio",
        "command": HOOKGATE,
        "args": ["mcp-proxy", "--config", HOOKS, "--", sys.executable, DEMO_SERVER,
                 "--state", str(state)],
        "env": {"PYTHONPATH": str(REPO)},
    }}}
    (project.dir / ".mcp.json").write_text(json.dumps(servers))
    # Project servers need approval; a test project approves its own.
    project.settings.write_text(json.dumps({"enableAllProjectMcpServers": True}))
    return project


#: MCP tools in the tool list itself (not behind Claude Code's tool search).
NO_TOOL_SEARCH = {"ENABLE_TOOL_SEARCH": "false"}
#: The model's first steps: wait for the MCP server, which connects while the session starts
#: (each wait is bounded, so on a busy machine it takes a few; once connected they return).
WAIT = [use_tool("WaitForMcpServers", {"servers": ["demo"]})] * 5


def offered_tools(api: ScriptedAnthropic) -> set[str]:
    """The tools offered with the MCP call (the request the scripted call answered)."""
    return {tool["name"] for tool in api.agent_calls[-2].body["tools"]}


def last_tool_result(api: ScriptedAnthropic) -> dict[str, object]:
    """What the model was told about its MCP call (in the last request)."""
    return api.agent_calls[-1].tool_results()[-1]


def test_claude_code_through_the_proxy(project: ClaudeProject, api: ScriptedAnthropic) -> None:
    api.script(*WAIT, use_tool("mcp__demo__add", {"a": 666, "b": 1}), say("understood"))
    run = project.run("add some numbers", allow=("mcp__demo__add", "mcp__demo__echo"),
                      **NO_TOOL_SEARCH)
    assert run.returncode == 0, run.stderr
    offered = offered_tools(api)
    assert {"mcp__demo__add", "mcp__demo__echo"} <= offered
    assert "mcp__demo__secret_info" not in offered  # hidden by the list_tools hook
    result = last_tool_result(api)
    assert result["is_error"] is True
    assert "666 is not allowed here" in json.dumps(result)
    assert "add" not in read_calls(project.dir.parent / "upstream")


def test_claude_code_gets_rewritten_output(project: ClaudeProject, api: ScriptedAnthropic) -> None:
    api.script(*WAIT, use_tool("mcp__demo__echo", {"text": "my password is hunter2"}),
               say("ok"))
    run = project.run("echo something", allow=("mcp__demo__echo",), **NO_TOOL_SEARCH)
    assert run.returncode == 0, run.stderr
    result = json.dumps(last_tool_result(api))
    assert "[redacted by hookgate]" in result and "hunter2" not in result
    assert read_calls(project.dir.parent / "upstream") == ["echo"]
