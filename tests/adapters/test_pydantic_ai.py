"""HookgateCapability in real Pydantic AI runs, with FunctionModel calling a tool."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from tests.adapters.support import (
    PROMPT_AND_MODEL_REWRITES,
    add_context_hook,
    closed_port,
    engine_with,
    require_package,
)

require_package("pydantic_ai", "pydantic-ai")

from pydantic_ai import Agent  # noqa: E402
from pydantic_ai.messages import (  # noqa: E402
    ModelMessage,
    ModelRequest,
    ModelResponse,
    RetryPromptPart,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel  # noqa: E402

from hookgate import Engine  # noqa: E402
from hookgate.adapters import HookgateAbort  # noqa: E402
from hookgate.adapters.pydantic_ai import HookgateCapability  # noqa: E402
from hookgate.client import AsyncGatewayClient  # noqa: E402

CALL_ID = "call_pa_1"


class Harness:
    def __init__(self, target: Any, args: dict[str, Any] | None = None) -> None:
        self.received: list[str] = []
        self.seen: list[tuple[list[ModelMessage], AgentInfo]] = []

        def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
            self.seen.append((list(messages), info))
            if len(self.seen) == 1:
                return ModelResponse(
                    parts=[ToolCallPart("shell", args or {"cmd": "rm -rf /"}, tool_call_id=CALL_ID)]
                )
            return ModelResponse(parts=[TextPart("all done")])

        self.agent = Agent(
            FunctionModel(respond),
            name="ops-agent",
            instructions="be careful",
            capabilities=[HookgateCapability(target)],
        )

        @self.agent.tool_plain
        def shell(cmd: str) -> str:
            """Run a shell command."""
            self.received.append(cmd)
            return f"ran {cmd}"

    async def run(self, prompt: str = "clean up") -> Any:
        return await self.agent.run(prompt)

    def tool_result(self) -> ToolReturnPart | RetryPromptPart:
        """The tool result the model read on its second call."""
        last = self.seen[1][0][-1]
        assert isinstance(last, ModelRequest)
        part = last.parts[0]
        assert isinstance(part, ToolReturnPart | RetryPromptPart)
        return part


async def test_block_keeps_the_tool_from_running_and_the_model_reads_the_reason() -> None:
    engine, seen = engine_with(
        {"pre_tool_use": lambda e: {"decision": "block", "reason": "no rm -rf"}}
    )
    harness = Harness(engine)
    result = await harness.run()
    assert harness.received == []
    part = harness.tool_result()
    assert part.tool_call_id == CALL_ID
    assert "no rm -rf" in part.model_response_str()
    assert result.output == "all done"
    pre = seen.payloads("pre_tool_use")[0]
    assert pre["tool_input"] == {"cmd": "rm -rf /"}
    assert pre["tool_use_id"] == CALL_ID
    assert pre["agent_id"] == "ops-agent"
    assert pre["turn_id"] == result.run_id
    assert "post_tool_use" not in seen.names()


async def test_rewritten_arguments_are_what_the_tool_receives() -> None:
    engine, seen = engine_with({"pre_tool_use": lambda e: {"updated_input": {"cmd": "ls"}}})
    harness = Harness(engine)
    await harness.run()
    assert harness.received == ["ls"]
    assert harness.tool_result().content == "ran ls"
    assert seen.payloads("post_tool_use")[0]["tool_input"] == {"cmd": "ls"}


async def test_synthetic_result_replaces_the_call() -> None:
    engine, _ = engine_with({"pre_tool_use": lambda e: {"result": {"files": 3}}})
    harness = Harness(engine)
    await harness.run()
    assert harness.received == []
    assert harness.tool_result().content == {"files": 3}


async def test_context_and_output_rewrite_reach_the_model() -> None:
    engine, _ = engine_with(
        {
            "pre_tool_use": lambda e: {"additional_context": "policy: read-only host"},
            "post_tool_use": lambda e: {"updated_input": "[redacted]"},
        }
    )
    harness = Harness(engine)
    await harness.run()
    assert harness.received == ["rm -rf /"]
    assert harness.tool_result().content == "[redacted]\n\npolicy: read-only host"


async def test_abort_stops_the_run_before_the_tool() -> None:
    engine, _ = engine_with({"pre_tool_use": lambda e: {"abort": "hard", "reason": "halt"}})
    harness = Harness(engine)
    with pytest.raises(HookgateAbort, match="halt"):
        await harness.run()
    assert harness.received == []
    assert len(harness.seen) == 1


async def test_blocked_prompt_never_reaches_the_model() -> None:
    engine, _ = engine_with(
        {"user_prompt_submit": lambda e: {"decision": "block", "reason": "off-topic"}}
    )
    harness = Harness(engine)
    with pytest.raises(HookgateAbort, match="off-topic"):
        await harness.run()
    assert harness.seen == []


async def test_prompt_rewrite_and_model_hooks() -> None:
    engine, seen = engine_with(PROMPT_AND_MODEL_REWRITES)
    harness = Harness(engine)
    result = await harness.run()
    messages, info = harness.seen[0]
    assert info.instructions == "be very careful\n\ntoday is Sunday"
    first = messages[0]
    assert isinstance(first, ModelRequest)
    assert [p.content for p in first.parts if isinstance(p, UserPromptPart)] == ["list files"]
    assert result.output == "ALL DONE"
    request = seen.payloads("before_llm")[0]["request"]
    assert request["system"] == "be careful"
    assert request["tools"] == ["shell"]
    response = seen.payloads("after_llm")[0]["response"]
    assert response["tool_calls"] == [{"name": "shell", "args": {"cmd": "rm -rf /"}, "id": CALL_ID}]
    await engine.drain()
    assert seen.payloads("session_start")[0]["source"] == "pydantic-ai"
    assert seen.payloads("stop")[0]["last_message"] == "ALL DONE"


async def test_a_crashing_hook_blocks() -> None:
    def crash(event: Any) -> None:
        raise RuntimeError("bug in hook")

    engine, _ = engine_with({"pre_tool_use": crash})
    harness = Harness(engine)
    await harness.run()
    assert harness.received == []
    assert "Blocked by hookgate" in harness.tool_result().model_response_str()


async def test_an_unreachable_gateway_blocks_the_run_before_the_model() -> None:
    client = AsyncGatewayClient(f"http://127.0.0.1:{closed_port()}", "hg_key", timeout=2)
    harness = Harness(client)
    with pytest.raises(HookgateAbort, match="GatewayConnectionError"):
        await harness.run()
    assert harness.seen == []
    assert harness.received == []


async def test_a_blocked_model_call_stops_the_run() -> None:
    engine, _ = engine_with({"before_llm": lambda e: {"decision": "block", "reason": "budget"}})
    harness = Harness(engine)
    with pytest.raises(HookgateAbort, match="budget"):
        await harness.run()
    assert harness.seen == []


async def test_a_failing_tool_is_reported() -> None:
    engine, seen = engine_with()

    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        return ModelResponse(parts=[ToolCallPart("broken", {"cmd": "ls"}, tool_call_id=CALL_ID)])

    agent = Agent(FunctionModel(respond), capabilities=[HookgateCapability(engine)])

    @agent.tool_plain
    def broken(cmd: str) -> str:
        """Run a shell command."""
        raise OSError("disk on fire")

    with pytest.raises(OSError, match="disk on fire"):
        await agent.run("go")
    await engine.drain()
    (failure,) = seen.payloads("post_tool_use_failure")
    assert (failure["tool_use_id"], failure["error"]) == (CALL_ID, "OSError")


async def test_with_no_hooks_the_run_is_untouched() -> None:
    harness = Harness(Engine())
    result = await harness.run()
    assert harness.received == ["rm -rf /"]
    assert harness.tool_result().content == "ran rm -rf /"
    assert result.output == "all done"


async def test_a_hook_added_after_the_agent_was_built_fires() -> None:
    engine = Engine()
    harness = Harness(engine)
    seen = add_context_hook(engine)
    await harness.run()
    assert harness.received == ["rm -rf /"]
    assert harness.tool_result().content == "ran rm -rf /\n\npolicy: read-only host"
    assert [e.tool_use_id for e in seen] == [CALL_ID]


async def test_concurrent_runs_with_the_same_call_id_keep_their_own_context() -> None:
    # Models reuse call ids; context kept for one run's call must not reach another run's.
    engine = Engine()

    @engine.hook("pre_tool_use")
    def context_for_a(event: Any) -> dict[str, Any] | None:
        return {"additional_context": "only for a"} if event.tool_input["cmd"] == "a" else None

    a_in_tool, b_done = asyncio.Event(), asyncio.Event()

    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        last = messages[-1]
        assert isinstance(last, ModelRequest)
        part = last.parts[0]
        if isinstance(part, ToolReturnPart):
            return ModelResponse(parts=[TextPart(str(part.content))])
        assert isinstance(part, UserPromptPart)
        return ModelResponse(
            parts=[ToolCallPart("shell", {"cmd": part.content}, tool_call_id="c1")]
        )

    agent = Agent(FunctionModel(respond), capabilities=[HookgateCapability(engine)])

    @agent.tool_plain
    async def shell(cmd: str) -> str:
        """Run a shell command."""
        if cmd == "a":  # run a's call stays in flight while run b runs from start to end
            a_in_tool.set()
            await b_done.wait()
        return f"ran {cmd}"

    run_a = asyncio.create_task(agent.run("a"))
    await a_in_tool.wait()
    run_b = await agent.run("b")
    b_done.set()
    assert run_b.output == "ran b"
    assert (await run_a).output == "ran a\n\nonly for a"
