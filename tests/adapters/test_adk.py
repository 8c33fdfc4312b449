"""HookgatePlugin in real Google ADK runs (App + InMemoryRunner), with a BaseLlm subclass
scripted to call a tool."""

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

require_package("google.adk", "adk")

from google.adk.agents import LlmAgent  # noqa: E402
from google.adk.apps import App  # noqa: E402
from google.adk.models.base_llm import BaseLlm  # noqa: E402
from google.adk.models.llm_request import LlmRequest  # noqa: E402
from google.adk.models.llm_response import LlmResponse  # noqa: E402
from google.adk.runners import InMemoryRunner  # noqa: E402
from google.genai import types  # noqa: E402

from hookgate import Engine  # noqa: E402
from hookgate.adapters import HookgateAbort  # noqa: E402
from hookgate.adapters.adk import HookgatePlugin  # noqa: E402
from hookgate.client import AsyncGatewayClient  # noqa: E402

CALL_ID = "call_adk_1"


def _call(name: str, args: dict[str, Any], call_id: str) -> LlmResponse:
    call = types.FunctionCall(name=name, args=args, id=call_id)
    return LlmResponse(content=types.Content(role="model", parts=[types.Part(function_call=call)]))


def _say(text: str) -> LlmResponse:
    return LlmResponse(content=types.Content(role="model", parts=[types.Part(text=text)]))


class ScriptedLlm(BaseLlm):
    """An offline model: answers from a script and records every request."""

    model: str = "scripted"
    script: list[LlmResponse] = []
    seen: list[LlmRequest] = []

    async def generate_content_async(self, llm_request: LlmRequest, stream: bool = False) -> Any:
        self.seen.append(llm_request.model_copy(deep=True))
        yield self.script[len(self.seen) - 1]


def _function_response(request: LlmRequest) -> types.FunctionResponse:
    for content in reversed(request.contents):
        for part in content.parts or []:
            if part.function_response is not None:
                return part.function_response
    raise AssertionError("the model saw no tool result")


class Harness:
    def __init__(self, target: Any, args: dict[str, Any] | None = None) -> None:
        self.received: list[str] = []
        self.model = ScriptedLlm(
            script=[_call("shell", args or {"cmd": "rm -rf /"}, CALL_ID), _say("all done")],
            seen=[],
        )

        def shell(cmd: str) -> dict[str, Any]:
            """Run a shell command."""
            self.received.append(cmd)
            return {"output": f"ran {cmd}"}

        self.agent = LlmAgent(
            name="ops_agent", model=self.model, instruction="be careful", tools=[shell]
        )
        app = App(name="ops_app", root_agent=self.agent, plugins=[HookgatePlugin(target)])
        self.runner = InMemoryRunner(app=app)

    async def run(self, prompt: str = "clean up") -> list[Any]:
        session = await self.runner.session_service.create_session(
            app_name="ops_app", user_id="u1", session_id="session-7"
        )
        message = types.Content(role="user", parts=[types.Part(text=prompt)])
        return [
            event
            async for event in self.runner.run_async(
                user_id="u1", session_id=session.id, new_message=message
            )
        ]

    def tool_result(self) -> dict[str, Any]:
        """The tool result the model read on its second call."""
        response = _function_response(self.model.seen[1])
        assert response.id == CALL_ID
        return dict(response.response or {})


def _final_text(events: list[Any]) -> str:
    texts = [p.text for e in events if e.content for p in e.content.parts or [] if p.text]
    return texts[-1]


async def test_block_keeps_the_tool_from_running_and_the_model_reads_the_reason() -> None:
    engine, seen = engine_with(
        {"pre_tool_use": lambda e: {"decision": "block", "reason": "no rm -rf"}}
    )
    harness = Harness(engine)
    events = await harness.run()
    assert harness.received == []
    assert "no rm -rf" in harness.tool_result()["error"]
    assert _final_text(events) == "all done"
    pre = seen.payloads("pre_tool_use")[0]
    assert pre["tool_input"] == {"cmd": "rm -rf /"}
    assert pre["tool_use_id"] == CALL_ID
    assert pre["agent_id"] == "ops_agent"
    assert pre["session_id"] == "session-7"
    assert pre["turn_id"].startswith("e-")
    assert "post_tool_use" not in seen.names()


async def test_rewritten_arguments_are_what_the_tool_receives() -> None:
    engine, seen = engine_with({"pre_tool_use": lambda e: {"updated_input": {"cmd": "ls"}}})
    harness = Harness(engine)
    await harness.run()
    assert harness.received == ["ls"]
    assert harness.tool_result() == {"output": "ran ls"}
    assert seen.payloads("post_tool_use")[0]["tool_input"] == {"cmd": "ls"}


@pytest.mark.parametrize("result", [{"files": 3}, {}, "pretend"])
async def test_synthetic_result_replaces_the_call(result: Any) -> None:
    engine, _ = engine_with({"pre_tool_use": lambda e: {"result": result}})
    harness = Harness(engine)
    await harness.run()
    assert harness.received == []
    expected = result if isinstance(result, dict) else {"result": result}
    assert harness.tool_result() == expected


async def test_an_allowing_hook_lets_the_tool_run() -> None:
    # The adapter answers None, not {}: ADK would take {} as the tool's result.
    engine, _ = engine_with({"pre_tool_use": lambda e: {"decision": "allow"}})
    harness = Harness(engine)
    await harness.run()
    assert harness.received == ["rm -rf /"]
    assert harness.tool_result() == {"output": "ran rm -rf /"}


async def test_context_and_output_rewrite_reach_the_model() -> None:
    engine, _ = engine_with(
        {
            "pre_tool_use": lambda e: {"additional_context": "policy: read-only host"},
            "post_tool_use": lambda e: {"updated_input": {"output": "[redacted]"}},
        }
    )
    harness = Harness(engine)
    await harness.run()
    assert harness.received == ["rm -rf /"]
    assert harness.tool_result() == {
        "output": "[redacted]",
        "additional_context": ["policy: read-only host"],
    }


async def test_abort_stops_the_run_before_the_tool() -> None:
    engine, _ = engine_with({"pre_tool_use": lambda e: {"abort": "turn", "reason": "halt"}})
    harness = Harness(engine)
    with pytest.raises(RuntimeError) as caught:
        await harness.run()
    assert isinstance(caught.value.__cause__, HookgateAbort)
    assert caught.value.__cause__.reason == "halt"
    assert harness.received == []
    assert len(harness.model.seen) == 1


async def test_blocked_prompt_never_reaches_the_model() -> None:
    engine, _ = engine_with(
        {"user_prompt_submit": lambda e: {"decision": "block", "reason": "off-topic"}}
    )
    harness = Harness(engine)
    with pytest.raises(RuntimeError) as caught:
        await harness.run()
    assert isinstance(caught.value.__cause__, HookgateAbort)
    assert harness.model.seen == []


async def test_prompt_rewrite_and_model_hooks() -> None:
    engine, seen = engine_with(PROMPT_AND_MODEL_REWRITES)
    harness = Harness(engine)
    events = await harness.run()
    first = harness.model.seen[0]
    assert first.config.system_instruction == "be very careful\n\ntoday is Sunday"
    assert first.contents[0].parts[0].text == "list files"
    assert _final_text(events) == "ALL DONE"
    request = seen.payloads("before_llm")[0]["request"]
    assert request["system"].startswith("be careful")  # ADK appends the agent's identity
    assert request["tools"] == ["shell"]
    response = seen.payloads("after_llm")[0]["response"]
    assert response["tool_calls"] == [{"name": "shell", "args": {"cmd": "rm -rf /"}, "id": CALL_ID}]
    await engine.drain()
    assert seen.payloads("session_start")[0]["source"] == "adk"
    assert seen.payloads("stop")[0]["last_message"] == "ALL DONE"


async def test_sub_agent_block_skips_it_and_stop_reports_it() -> None:
    engine, seen = engine_with(
        {
            "subagent_start": lambda e: (
                {"decision": "block", "reason": "not now"} if e.target_agent == "blocked" else None
            )
        }
    )
    helper_model = ScriptedLlm(script=[_say("helped")], seen=[])
    blocked_model = ScriptedLlm(script=[_say("should not run")], seen=[])
    helper = LlmAgent(name="helper", model=helper_model)
    blocked = LlmAgent(name="blocked", model=blocked_model)
    root_model = ScriptedLlm(
        script=[_call("transfer_to_agent", {"agent_name": "blocked"}, "call_t1")], seen=[]
    )
    root = LlmAgent(name="root", model=root_model, sub_agents=[helper, blocked])
    runner = InMemoryRunner(app=App(name="subs", root_agent=root, plugins=[HookgatePlugin(engine)]))
    session = await runner.session_service.create_session(app_name="subs", user_id="u1")
    message = types.Content(role="user", parts=[types.Part(text="go")])
    events = [
        e async for e in runner.run_async(user_id="u1", session_id=session.id, new_message=message)
    ]
    assert blocked_model.seen == []
    assert "Blocked: not now" in _final_text(events)
    start = seen.payloads("subagent_start")[0]
    assert (start["source_agent"], start["target_agent"]) == ("root", "blocked")

    root_model2 = ScriptedLlm(
        script=[_call("transfer_to_agent", {"agent_name": "helper"}, "call_t2")], seen=[]
    )
    root2 = LlmAgent(
        name="root",
        model=root_model2,
        sub_agents=[LlmAgent(name="helper", model=ScriptedLlm(script=[_say("helped")], seen=[]))],
    )
    runner2 = InMemoryRunner(
        app=App(name="subs", root_agent=root2, plugins=[HookgatePlugin(engine)])
    )
    session2 = await runner2.session_service.create_session(app_name="subs", user_id="u1")
    [e async for e in runner2.run_async(user_id="u1", session_id=session2.id, new_message=message)]
    await engine.drain()
    stop = seen.payloads("subagent_stop")[-1]
    assert (stop["target_agent"], stop["output"]) == ("helper", "helped")


async def test_a_crashing_hook_blocks() -> None:
    def crash(event: Any) -> None:
        raise RuntimeError("bug in hook")

    engine, _ = engine_with({"pre_tool_use": crash})
    harness = Harness(engine)
    await harness.run()
    assert harness.received == []
    assert "Blocked by hookgate" in harness.tool_result()["error"]


async def test_an_unreachable_gateway_blocks_the_run_before_the_model() -> None:
    client = AsyncGatewayClient(f"http://127.0.0.1:{closed_port()}", "hg_key", timeout=2)
    harness = Harness(client)
    with pytest.raises(RuntimeError) as caught:
        await harness.run()
    assert isinstance(caught.value.__cause__, HookgateAbort)
    assert harness.model.seen == []
    assert harness.received == []


async def test_a_blocked_model_call_stops_the_run() -> None:
    engine, _ = engine_with({"before_llm": lambda e: {"decision": "block", "reason": "budget"}})
    harness = Harness(engine)
    with pytest.raises(RuntimeError) as caught:
        await harness.run()
    assert isinstance(caught.value.__cause__, HookgateAbort)
    assert caught.value.__cause__.reason == "budget"
    assert harness.model.seen == []


async def test_a_failing_tool_is_reported() -> None:
    engine, seen = engine_with()
    model = ScriptedLlm(script=[_call("broken", {"cmd": "ls"}, CALL_ID), _say("done")], seen=[])

    def broken(cmd: str) -> dict[str, Any]:
        """Run a shell command."""
        raise OSError("disk on fire")

    agent = LlmAgent(name="ops_agent", model=model, tools=[broken])
    runner = InMemoryRunner(
        app=App(name="ops_app", root_agent=agent, plugins=[HookgatePlugin(engine)])
    )
    session = await runner.session_service.create_session(app_name="ops_app", user_id="u1")
    message = types.Content(role="user", parts=[types.Part(text="go")])
    with pytest.raises(OSError, match="disk on fire"):
        [
            e
            async for e in runner.run_async(
                user_id="u1", session_id=session.id, new_message=message
            )
        ]
    await engine.drain()
    (failure,) = seen.payloads("post_tool_use_failure")
    assert (failure["tool_use_id"], failure["error"]) == (CALL_ID, "OSError")


async def test_with_no_hooks_the_run_is_untouched() -> None:
    harness = Harness(Engine())
    events = await harness.run()
    assert harness.received == ["rm -rf /"]
    assert harness.tool_result() == {"output": "ran rm -rf /"}
    assert _final_text(events) == "all done"


async def test_a_hook_added_after_the_agent_was_built_fires() -> None:
    engine = Engine()
    harness = Harness(engine)
    seen = add_context_hook(engine)
    await harness.run()
    assert harness.received == ["rm -rf /"]
    assert harness.tool_result() == {
        "output": "ran rm -rf /",
        "additional_context": ["policy: read-only host"],
    }
    assert [e.tool_use_id for e in seen] == [CALL_ID]


class EchoLlm(BaseLlm):
    """Calls ``shell`` with the user's text as ``cmd`` (always call id ``c1``), then says the
    tool's result."""

    model: str = "echo"

    async def generate_content_async(self, llm_request: LlmRequest, stream: bool = False) -> Any:
        last = llm_request.contents[-1].parts or []
        if last and last[0].function_response is not None:
            yield _say(repr(last[0].function_response.response))
        else:
            yield _call("shell", {"cmd": last[0].text if last else ""}, "c1")


async def test_concurrent_invocations_with_the_same_call_id_keep_their_own_state() -> None:
    # Models reuse call ids; what the plugin keeps for one invocation's call (context, "a
    # hook answered it") must not reach another's.
    engine = Engine()

    @engine.hook("pre_tool_use")
    def context_for_a(event: Any) -> dict[str, Any] | None:
        return {"additional_context": "only for a"} if event.tool_input["cmd"] == "a" else None

    a_in_tool, b_done = asyncio.Event(), asyncio.Event()

    async def shell(cmd: str) -> dict[str, Any]:
        """Run a shell command."""
        if cmd == "a":  # a's call stays in flight while b runs from start to end
            a_in_tool.set()
            await b_done.wait()
        return {"output": f"ran {cmd}"}

    agent = LlmAgent(name="ops_agent", model=EchoLlm(), tools=[shell])
    runner = InMemoryRunner(
        app=App(name="ops_app", root_agent=agent, plugins=[HookgatePlugin(engine)])
    )

    async def run(text: str) -> str:
        session = await runner.session_service.create_session(app_name="ops_app", user_id="u1")
        message = types.Content(role="user", parts=[types.Part(text=text)])
        events = [
            e
            async for e in runner.run_async(
                user_id="u1", session_id=session.id, new_message=message
            )
        ]
        return _final_text(events)

    run_a = asyncio.create_task(run("a"))
    await a_in_tool.wait()
    assert await run("b") == repr({"output": "ran b"})
    b_done.set()
    assert await run_a == repr({"output": "ran a", "additional_context": ["only for a"]})
