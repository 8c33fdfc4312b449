"""hook_matchers in real Claude Agent SDK runs: the SDK drives the Claude Code CLI it bundles,
which talks to a scripted Anthropic API on loopback and runs a real Bash tool call in a
throw-away project folder."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from tests.adapters.support import closed_port, engine_with, require_package
from tests.support.anthropic_server import Reply, ScriptedAnthropic

require_package("claude_agent_sdk", "claude-agent-sdk")

from claude_agent_sdk import ClaudeAgentOptions, ResultMessage, query  # noqa: E402

from hookgate import Engine  # noqa: E402
from hookgate.adapters.claude_agent_sdk import (  # noqa: E402
    EVENTS,
    HookgateAbort,
    HookgateMatchers,
    hook_matchers,
)
from hookgate.client import AsyncGatewayClient  # noqa: E402

COMMAND = "echo original > marker.txt"


class Session:
    """One ``query()`` in its own project and home folders."""

    def __init__(
        self, root: Path, target: Any, *replies: Reply, by_task: dict[str, Reply] | None = None
    ) -> None:
        self.project = root / "project"
        self.home = root / "home"
        self.project.mkdir()
        (self.home / ".claude").mkdir(parents=True)
        self.target = target
        self.replies = replies or (
            Reply(tool="Bash", tool_input={"command": COMMAND}),
            Reply(text="all done"),
        )
        self.by_task = by_task
        self.api: ScriptedAnthropic
        self.messages: list[Any] = []
        #: Matchers built beforehand (else built for the run).
        self.matchers: HookgateMatchers | None = None

    async def run(self, prompt: str = "clean up", *, submit: bool = False) -> ResultMessage | None:
        """``submit``: send the prompt through ``HookgateMatchers.submit`` first."""
        with ScriptedAnthropic(*self.replies, by_task=self.by_task) as api:
            self.api = api
            env = {
                "HOME": str(self.home),
                "CLAUDE_CONFIG_DIR": str(self.home / ".claude"),
                "ANTHROPIC_BASE_URL": api.url,
                "ANTHROPIC_API_KEY": "sk-ant-offline",
                "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
                "DISABLE_AUTOUPDATER": "1",
                "DISABLE_TELEMETRY": "1",
                "DISABLE_ERROR_REPORTING": "1",
                "NO_PROXY": "127.0.0.1,localhost",
            }
            matchers = self.matchers or hook_matchers(self.target, agent_name="ops")
            if submit:
                prompt = await matchers.submit(prompt)
            options = ClaudeAgentOptions(
                hooks=matchers,
                cwd=str(self.project),
                env=env,
                allowed_tools=["Bash", "Agent"],
            )
            async for message in query(prompt=prompt, options=options):
                self.messages.append(message)
        results = [m for m in self.messages if isinstance(m, ResultMessage)]
        return results[-1] if results else None

    def marker(self) -> str | None:
        path = self.project / "marker.txt"
        return path.read_text().strip() if path.exists() else None

    def tool_result(self) -> dict[str, Any]:
        """The tool result the model was shown on its second turn."""
        (result,) = self.api.agent_calls[1].tool_results()
        return result


def _text(block: dict[str, Any]) -> str:
    content = block.get("content")
    if isinstance(content, list):
        return "".join(part.get("text", "") for part in content)
    return str(content)


async def test_block_keeps_the_tool_from_running_and_the_model_reads_the_reason(
    tmp_path: Path,
) -> None:
    engine, seen = engine_with(
        {"pre_tool_use": lambda e: {"decision": "block", "reason": "no writes here"}}
    )
    session = Session(tmp_path, engine)
    await session.run()
    assert session.marker() is None
    result = session.tool_result()
    assert result["is_error"] is True
    assert "no writes here" in _text(result)
    pre = seen.payloads("pre_tool_use")[0]
    assert pre["tool_name"] == "Bash"
    assert pre["tool_input"]["command"] == COMMAND
    assert pre["tool_use_id"] == result["tool_use_id"] == "toolu_0001"
    assert pre["agent_id"] == "ops"
    assert pre["session_id"]
    assert "post_tool_use" not in seen.names()


async def test_rewritten_input_is_the_command_that_runs(tmp_path: Path) -> None:
    # updatedInput replaces the whole input: the hook sends it complete.
    engine, seen = engine_with(
        {"pre_tool_use": lambda e: {"updated_input": {"command": "echo rewritten > marker.txt"}}}
    )
    session = Session(tmp_path, engine)
    await session.run()
    assert session.marker() == "rewritten"
    assert seen.payloads("post_tool_use")[0]["tool_input"]["command"] == (
        "echo rewritten > marker.txt"
    )


async def test_synthetic_result_is_read_by_the_model_and_the_tool_never_runs(
    tmp_path: Path,
) -> None:
    engine, _ = engine_with({"pre_tool_use": lambda e: {"result": "3 files removed"}})
    session = Session(tmp_path, engine)
    await session.run()
    assert session.marker() is None
    assert "3 files removed" in _text(session.tool_result())


async def test_context_and_output_rewrite_reach_the_model(tmp_path: Path) -> None:
    # Bash's output is an object ({stdout, stderr, ...}): the rewrite keeps its shape.
    engine, seen = engine_with(
        {
            "pre_tool_use": lambda e: {"additional_context": "policy: read-only host"},
            "post_tool_use": lambda e: {
                "updated_input": {**e.tool_response, "stdout": "[redacted]"}
            },
        }
    )
    session = Session(
        tmp_path,
        engine,
        Reply(tool="Bash", tool_input={"command": "echo token-1234"}),
        Reply(text="all done"),
    )
    await session.run()
    assert seen.payloads("post_tool_use")[0]["tool_response"]["stdout"] == "token-1234"
    assert _text(session.tool_result()) == "[redacted]"
    assert "policy: read-only host" in session.api.agent_calls[1].text()


async def test_abort_stops_the_tool_and_the_run(tmp_path: Path) -> None:
    engine, _ = engine_with({"pre_tool_use": lambda e: {"abort": "turn", "reason": "halt"}})
    session = Session(tmp_path, engine)
    await session.run()
    assert session.marker() is None
    assert len(session.api.agent_calls) == 1


async def test_blocked_prompt_never_reaches_the_model(tmp_path: Path) -> None:
    engine, seen = engine_with(
        {"user_prompt_submit": lambda e: {"decision": "block", "reason": "off-topic"}}
    )
    session = Session(tmp_path, engine)
    await session.run()
    assert session.api.agent_calls == []
    assert seen.payloads("user_prompt_submit")[0]["prompt"] == "clean up"


async def test_a_prompt_rewrite_cannot_be_applied_so_the_prompt_is_blocked(
    tmp_path: Path,
) -> None:
    engine, _ = engine_with({"user_prompt_submit": lambda e: {"updated_input": "list files"}})
    session = Session(tmp_path, engine)
    await session.run()
    assert session.api.agent_calls == []


async def test_a_submitted_prompt_is_rewritten_and_fired_once(tmp_path: Path) -> None:
    engine, seen = engine_with(
        {
            "user_prompt_submit": lambda e: {
                "updated_input": "list files",
                "additional_context": "today is Sunday",
            }
        }
    )
    session = Session(tmp_path, engine)
    await session.run(submit=True)
    first = session.api.agent_calls[0].text()
    assert "list files" in first
    assert "today is Sunday" in first
    assert "clean up" not in first
    assert session.marker() == "original"  # the run went on: the model's Bash call ran
    (submitted,) = seen.payloads("user_prompt_submit")
    assert submitted["prompt"] == "clean up"
    assert submitted["agent_id"] == "ops"
    await engine.drain()
    assert len(seen.payloads("session_start")) == 1


async def test_a_prompt_blocked_at_submit_is_never_sent(tmp_path: Path) -> None:
    engine, _ = engine_with(
        {"user_prompt_submit": lambda e: {"decision": "block", "reason": "off-topic"}}
    )
    session = Session(tmp_path, engine)
    with pytest.raises(HookgateAbort, match="off-topic"):
        await session.run(submit=True)
    assert session.api.agent_calls == []


async def test_a_failing_gateway_at_submit_blocks_the_prompt(tmp_path: Path) -> None:
    client = AsyncGatewayClient(f"http://127.0.0.1:{closed_port()}", "hg_key", timeout=2)
    session = Session(tmp_path, client)
    with pytest.raises(HookgateAbort, match="could not decide"):
        await session.run(submit=True)
    assert session.api.agent_calls == []


async def test_prompt_context_session_and_stop_events(tmp_path: Path) -> None:
    engine, seen = engine_with(
        {"user_prompt_submit": lambda e: {"additional_context": "today is Sunday"}}
    )
    session = Session(tmp_path, engine)
    await session.run()
    assert session.marker() == "original"
    assert "today is Sunday" in session.api.agent_calls[0].text()
    await engine.drain()
    (start,) = seen.payloads("session_start")
    assert start["source"] == "claude-agent-sdk"
    stop = seen.payloads("stop")[0]
    assert stop["last_message"] == "all done"
    assert start["session_id"] == stop["session_id"]


async def test_an_unreachable_gateway_blocks(tmp_path: Path) -> None:
    client = AsyncGatewayClient(f"http://127.0.0.1:{closed_port()}", "hg_key", timeout=2)
    session = Session(tmp_path, client)
    await session.run()
    assert session.api.agent_calls == []
    assert session.marker() is None


SPAWN = Reply(
    tool="Agent",
    tool_input={"description": "list", "prompt": "list files", "subagent_type": "general-purpose"},
)


def _sub_agent_asked(session: Session, task: str) -> bool:
    return any(
        message.get("role") == "user" and task in json.dumps(message.get("content"))
        for call in session.api.agent_calls
        for message in call.messages[:1]
    )


async def test_a_blocked_sub_agent_never_starts(tmp_path: Path) -> None:
    engine, seen = engine_with(
        {"subagent_start": lambda e: {"decision": "block", "reason": "no delegation"}}
    )
    session = Session(
        tmp_path,
        engine,
        SPAWN,
        Reply(text="all done"),
        by_task={"list files": Reply(text="helped")},
    )
    await session.run()
    assert not _sub_agent_asked(session, "list files")
    result = session.tool_result()
    assert result["is_error"] is True
    assert "no delegation" in _text(result)
    start = seen.payloads("subagent_start")[0]
    assert (start["source_agent"], start["target_agent"], start["task"]) == (
        "ops",
        "general-purpose",
        "list files",
    )
    await engine.drain()
    assert "subagent_stop" not in seen.names()


async def test_a_sub_agent_task_rewrite_is_what_it_runs(tmp_path: Path) -> None:
    engine, seen = engine_with(
        {"subagent_start": lambda e: {"updated_input": "list only the docs folder"}}
    )
    session = Session(
        tmp_path,
        engine,
        SPAWN,
        Reply(text="all done"),
        by_task={"list only the docs folder": Reply(text="helped")},
    )
    await session.run()
    assert _sub_agent_asked(session, "list only the docs folder")
    assert not _sub_agent_asked(session, "list files")
    await engine.drain()
    stop = seen.payloads("subagent_stop")[0]
    assert (stop["target_agent"], stop["output"]) == ("general-purpose", "helped")


# -- which events are registered ------------------------------------------------------------
# Each registered event costs every run a control-protocol round trip per occurrence.


def test_an_engine_registers_the_events_its_hooks_need_plus_the_two_checkpoints() -> None:
    engine = Engine()
    assert set(hook_matchers(engine)) == {"UserPromptSubmit", "PreToolUse"}
    engine.hook("post_tool_use")(lambda e: None)
    engine.hook("stop")(lambda e: None)
    assert set(hook_matchers(engine)) == {"UserPromptSubmit", "PreToolUse", "PostToolUse", "Stop"}


def test_a_gateway_client_registers_every_event() -> None:
    client = AsyncGatewayClient(f"http://127.0.0.1:{closed_port()}", "hg_key", timeout=2)
    # SubagentStart is decided at the spawning tool call: nothing is ever asked there.
    assert set(hook_matchers(client)) == set(EVENTS) - {"SubagentStart"}


async def test_only_a_tool_hook_blocks_with_two_events_registered(tmp_path: Path) -> None:
    engine = Engine()
    engine.hook("pre_tool_use", matcher="^Bash$")(
        lambda e: {"decision": "block", "reason": "no writes here"}
    )
    session = Session(tmp_path, engine)
    await session.run()
    assert session.marker() is None
    assert "no writes here" in _text(session.tool_result())


async def test_a_hook_added_later_for_an_unregistered_event_refuses_the_tool_call(
    tmp_path: Path,
) -> None:
    # The matchers were built without PostToolUse; a post_tool_use hook added during the run
    # (after its prompt was checked), say one that redacts output, would never fire: the
    # tool call is refused instead.
    engine = Engine()

    def add_redaction(event: Any) -> None:
        engine.hook("post_tool_use")(lambda e: {"updated_input": "[redacted]"})

    engine.hook("user_prompt_submit")(add_redaction)
    session = Session(tmp_path, engine)
    session.matchers = hook_matchers(engine)
    assert "PostToolUse" not in session.matchers
    await session.run()
    assert session.marker() is None
    result = session.tool_result()
    assert result["is_error"] is True
    assert "post_tool_use" in _text(result)
    assert "build the matchers again" in _text(result)


async def test_a_hook_added_later_is_noticed_at_the_prompt(tmp_path: Path) -> None:
    engine = Engine()
    session = Session(tmp_path, engine)
    session.matchers = hook_matchers(engine)
    engine.hook("stop")(lambda e: None)
    await session.run()
    assert session.api.agent_calls == []  # the prompt never reached the model
    assert session.marker() is None


async def test_a_lone_sub_agent_hook_still_blocks_at_the_spawning_call(tmp_path: Path) -> None:
    # No pre_tool_use hook: PreToolUse is registered anyway, and subagent_start fires there.
    engine = Engine()
    engine.hook("subagent_start")(lambda e: {"decision": "block", "reason": "no delegation"})
    session = Session(
        tmp_path,
        engine,
        SPAWN,
        Reply(text="all done"),
        by_task={"list files": Reply(text="helped")},
    )
    await session.run()
    assert not _sub_agent_asked(session, "list files")
    assert "no delegation" in _text(session.tool_result())
