"""HookgateMiddleware in real LangChain v1 agents, sync (invoke) and async (ainvoke) paths,
with LangChain's own fake chat model scripted to call a tool."""

from __future__ import annotations

import asyncio
import inspect
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from pydantic import BaseModel
from tests.adapters.support import (
    PROMPT_AND_MODEL_REWRITES,
    add_context_hook,
    closed_port,
    engine_with,
    require_package,
)

require_package("langchain", "langchain")

from langchain.agents import create_agent  # noqa: E402
from langchain.agents.structured_output import ToolStrategy  # noqa: E402
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel  # noqa: E402
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage  # noqa: E402
from langchain_core.tools import tool  # noqa: E402
from langgraph.checkpoint.memory import InMemorySaver  # noqa: E402
from langsmith import tracing_context  # noqa: E402

from hookgate import Engine  # noqa: E402
from hookgate.adapters import HookgateAbort  # noqa: E402
from hookgate.adapters.langchain import HookgateMiddleware  # noqa: E402
from hookgate.client import GatewayClient  # noqa: E402

CALL_ID = "call_lc_1"


class ScriptedChat(GenericFakeChatModel):
    """LangChain's fake model that records every request and accepts bind_tools."""

    seen: list[list[BaseMessage]] = []

    def bind_tools(self, tools: Any, **kwargs: Any) -> ScriptedChat:
        return self

    def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> Any:
        self.seen.append(list(messages))
        return super()._generate(messages, *args, **kwargs)


class Harness:
    def __init__(
        self,
        target: Any,
        mode: str,
        args: dict[str, Any] | None = None,
        checkpointer: Any = None,
    ) -> None:
        self.mode = mode
        self.target = target
        self.received: list[str] = []
        self.model = ScriptedChat(
            messages=iter(
                [
                    AIMessage(
                        content="",
                        tool_calls=[
                            {"name": "shell", "args": args or {"cmd": "rm -rf /"}, "id": CALL_ID}
                        ],
                    ),
                    AIMessage(content="all done"),
                ]
            ),
            seen=[],
        )

        @tool
        def shell(cmd: str) -> str:
            """Run a shell command."""
            self.received.append(cmd)
            return f"ran {cmd}"

        self.shell = shell
        self.agent = create_agent(
            self.model,
            [shell],
            system_prompt="be careful",
            middleware=[HookgateMiddleware(target)],
            name="ops-agent",
            checkpointer=checkpointer,
        )

    def run(self, prompt: str = "clean up") -> dict[str, Any]:
        state = {"messages": [{"role": "user", "content": prompt}]}
        config = {"configurable": {"thread_id": "thread-7"}}
        if self.mode == "sync":
            return self.agent.invoke(state, config)
        return asyncio.run(self._ainvoke(state, config))

    async def _ainvoke(self, state: dict[str, Any], config: dict[str, Any]) -> dict[str, Any]:
        try:
            return await self.agent.ainvoke(state, config)
        finally:
            # Non-blocking events queued on this loop run before asyncio.run closes it.
            if isinstance(self.target, Engine):
                await self.target.drain()

    def tool_message(self) -> ToolMessage:
        """The tool result the model read on its second call."""
        second = self.model.seen[1]
        return next(m for m in second if isinstance(m, ToolMessage))


MODES = pytest.mark.parametrize("mode", ["sync", "async"])


def _drain(engine: Engine) -> None:
    engine.drain_sync()


@MODES
def test_block_keeps_the_tool_from_running_and_the_model_reads_the_reason(mode: str) -> None:
    engine, seen = engine_with(
        {"pre_tool_use": lambda e: {"decision": "block", "reason": "no rm -rf"}}
    )
    harness = Harness(engine, mode)
    result = harness.run()
    assert harness.received == []
    message = harness.tool_message()
    assert message.status == "error"
    assert "no rm -rf" in message.text
    assert message.tool_call_id == CALL_ID
    assert result["messages"][-1].text == "all done"
    pre = seen.payloads("pre_tool_use")[0]
    assert pre["tool_name"] == "shell"
    assert pre["tool_input"] == {"cmd": "rm -rf /"}
    assert pre["tool_use_id"] == CALL_ID
    assert pre["agent_id"] == "ops-agent"
    assert pre["session_id"] == "thread-7"
    assert "post_tool_use" not in seen.names()


@MODES
def test_rewritten_arguments_are_what_the_tool_receives(mode: str) -> None:
    engine, seen = engine_with({"pre_tool_use": lambda e: {"updated_input": {"cmd": "ls"}}})
    harness = Harness(engine, mode)
    harness.run()
    assert harness.received == ["ls"]
    assert harness.tool_message().text == "ran ls"
    post = seen.payloads("post_tool_use")[0]
    assert post["tool_input"] == {"cmd": "ls"}
    assert post["tool_response"] == "ran ls"


@MODES
def test_synthetic_result_replaces_the_call(mode: str) -> None:
    engine, _ = engine_with({"pre_tool_use": lambda e: {"result": "pretend it ran"}})
    harness = Harness(engine, mode)
    harness.run()
    assert harness.received == []
    message = harness.tool_message()
    assert message.text == "pretend it ran"
    assert message.status == "success"


@MODES
def test_context_and_output_rewrite_reach_the_model(mode: str) -> None:
    engine, _ = engine_with(
        {
            "pre_tool_use": lambda e: {"additional_context": "policy: read-only host"},
            "post_tool_use": lambda e: {
                "updated_input": e.tool_response.replace("rm -rf /", "[redacted]"),
                "additional_context": "output was filtered",
            },
        }
    )
    harness = Harness(engine, mode)
    harness.run()
    assert harness.received == ["rm -rf /"]
    assert harness.tool_message().text == (
        "ran [redacted]\n\npolicy: read-only host\n\noutput was filtered"
    )


@MODES
def test_abort_stops_the_run_before_the_tool(mode: str) -> None:
    engine, _ = engine_with({"pre_tool_use": lambda e: {"abort": "turn", "reason": "halt"}})
    harness = Harness(engine, mode)
    with pytest.raises(HookgateAbort, match="halt"):
        harness.run()
    assert harness.received == []
    assert len(harness.model.seen) == 1


@MODES
def test_blocked_prompt_never_reaches_the_model(mode: str) -> None:
    engine, seen = engine_with(
        {"user_prompt_submit": lambda e: {"decision": "block", "reason": "off-topic"}}
    )
    harness = Harness(engine, mode)
    with pytest.raises(HookgateAbort, match="off-topic"):
        harness.run()
    assert harness.model.seen == []
    assert seen.payloads("user_prompt_submit")[0]["prompt"] == "clean up"


@MODES
def test_prompt_rewrite_and_model_hooks(mode: str) -> None:
    engine, seen = engine_with(PROMPT_AND_MODEL_REWRITES)
    harness = Harness(engine, mode)
    result = harness.run()
    first, second = harness.model.seen
    assert first[0].text == "be very careful\n\ntoday is Sunday"
    assert first[1].text == "list files"
    # The rewritten prompt replaced the original in the state: later calls and the
    # history have it, once.
    assert second[1].text == "list files"
    humans = [m.text for m in result["messages"] if isinstance(m, HumanMessage)]
    assert humans == ["list files"]
    assert result["messages"][-1].text == "ALL DONE"
    request = seen.payloads("before_llm")[0]["request"]
    assert request["system"] == "be careful"
    assert request["tools"] == ["shell"]
    response = seen.payloads("after_llm")[0]["response"]
    assert response["tool_calls"] == [{"name": "shell", "args": {"cmd": "rm -rf /"}, "id": CALL_ID}]
    _drain(engine)
    names = seen.names()
    assert names[0] == "session_start" or "session_start" in names
    assert "stop" in names
    stop = seen.payloads("stop")[0]
    assert stop["last_message"] == "ALL DONE"
    assert seen.payloads("session_start")[0]["source"] == "langchain"


@MODES
def test_a_crashing_hook_blocks(mode: str) -> None:
    def crash(event: Any) -> None:
        raise RuntimeError("bug in hook")

    engine, _ = engine_with({"pre_tool_use": crash})
    harness = Harness(engine, mode)
    harness.run()
    assert harness.received == []
    assert harness.tool_message().status == "error"


@MODES
def test_an_unreachable_gateway_blocks_the_run_before_the_model(mode: str) -> None:
    client = GatewayClient(f"http://127.0.0.1:{closed_port()}", "hg_key", timeout=2)
    harness = Harness(client, mode)
    with pytest.raises(HookgateAbort, match="GatewayConnectionError"):
        harness.run()
    assert harness.model.seen == []
    assert harness.received == []


@MODES
def test_a_rewrite_the_adapter_cannot_apply_blocks(mode: str) -> None:
    # Tool arguments must be an object: a hook answering a string gets a block, not a run.
    engine, _ = engine_with({"pre_tool_use": lambda e: {"updated_input": "ls"}})
    harness = Harness(engine, mode)
    harness.run()
    assert harness.received == []
    message = harness.tool_message()
    assert message.status == "error"
    assert "TypeError" in message.text


@MODES
def test_a_blocked_model_call_stops_the_run(mode: str) -> None:
    engine, _ = engine_with({"before_llm": lambda e: {"decision": "block", "reason": "budget"}})
    harness = Harness(engine, mode)
    with pytest.raises(HookgateAbort, match="budget"):
        harness.run()
    assert harness.model.seen == []


@MODES
def test_one_run_id_per_invocation(mode: str) -> None:
    engine, seen = engine_with()
    harness = Harness(engine, mode)
    harness.run()
    _drain(engine)
    run_ids = {name: payload["turn_id"] for name, payload in seen.events}
    assert len(set(run_ids.values())) == 1
    assert set(run_ids) >= {"session_start", "before_llm", "pre_tool_use", "post_tool_use", "stop"}
    harness.model.messages = iter([AIMessage(content="again")])
    harness.run()
    _drain(engine)
    assert seen.events[-1][1]["turn_id"] not in run_ids.values()


@MODES
def test_with_no_hooks_the_run_is_untouched(mode: str) -> None:
    harness = Harness(Engine(), mode)
    result = harness.run()
    assert harness.received == ["rm -rf /"]
    assert harness.tool_message().text == "ran rm -rf /"
    assert result["messages"][-1].text == "all done"


@MODES
def test_a_hook_added_after_the_agent_was_built_fires(mode: str) -> None:
    engine = Engine()
    harness = Harness(engine, mode)
    seen = add_context_hook(engine)
    harness.run()
    assert harness.received == ["rm -rf /"]
    assert harness.tool_message().text == "ran rm -rf /\n\npolicy: read-only host"
    assert [e.tool_use_id for e in seen] == [CALL_ID]


@MODES
def test_each_invocation_on_a_checkpointed_thread_is_a_new_run(mode: str) -> None:
    # The run id lives in an untracked state key: a second invocation on the same thread
    # must not find the first one's and skip its start (its prompt would go unchecked).
    engine, seen = engine_with(
        {"user_prompt_submit": lambda e: {"updated_input": e.prompt.upper()}}
    )
    harness = Harness(engine, mode, checkpointer=InMemorySaver())
    harness.run("first task")
    harness.model.messages = iter([AIMessage(content="again")])
    result = harness.run("second task")
    _drain(engine)
    prompts = [p["prompt"] for p in seen.payloads("user_prompt_submit")]
    assert prompts == ["first task", "second task"]
    assert len({p["turn_id"] for p in seen.payloads("session_start")}) == 2
    humans = [m.text for m in result["messages"] if isinstance(m, HumanMessage)]
    assert humans == ["FIRST TASK", "SECOND TASK"]
    assert harness.model.seen[-1][-1].text == "SECOND TASK"


# -- stop without an after_agent graph step ------------------------------------------------


def test_the_middleware_adds_no_graph_step() -> None:
    # before_agent/after_agent would each be a LangGraph step per invocation: the adapter's
    # largest cost. The run's start and stop are taken inside the model and tool calls.
    harness = Harness(Engine(), "sync")
    nodes = set(harness.agent.get_graph().nodes)
    assert not any(node.startswith("HookgateMiddleware") for node in nodes), nodes


class CountingExecutor(ThreadPoolExecutor):
    """The event loop's default executor, counting what is handed to it."""

    def __init__(self) -> None:
        super().__init__(max_workers=2)
        self.handed = 0

    def submit(self, fn: Any, /, *args: Any, **kwargs: Any) -> Any:
        self.handed += 1
        return super().submit(fn, *args, **kwargs)


def _executor_hops(harness: Harness) -> int:
    executor = CountingExecutor()

    async def run() -> None:
        asyncio.get_running_loop().set_default_executor(executor)
        state = {"messages": [{"role": "user", "content": "clean up"}]}
        await harness.agent.ainvoke(state, {"configurable": {"thread_id": "thread-7"}})

    asyncio.run(run())
    return executor.handed


def test_ainvoke_hands_nothing_more_to_the_loop_executor() -> None:
    # LangChain wraps each middleware hook in LangSmith's traceable, which starts and ends
    # the span of a coroutine function on the loop's executor, tracing on or off: four
    # thread hops per run. The middleware's async hooks are plain functions returning their
    # coroutine, so they cost none (the sync tool itself runs there either way).
    engine, seen = engine_with()
    with_hooks = Harness(engine, "async")
    plain = Harness(engine, "async")
    plain.agent = create_agent(plain.model, [plain.shell], name="ops-agent")
    assert _executor_hops(with_hooks) == _executor_hops(plain)
    assert with_hooks.received == plain.received == ["rm -rf /"]
    assert {"session_start", "pre_tool_use", "post_tool_use"} <= set(seen.names())


@MODES
def test_made_while_tracing_its_async_hooks_are_coroutine_functions(mode: str) -> None:
    # LangSmith times a span of a coroutine function for as long as it runs, with the spans
    # of what it calls inside; a middleware made while tracing is on keeps that.
    engine, _ = engine_with(
        {"pre_tool_use": lambda e: {"decision": "block", "reason": "no rm -rf"}}
    )
    with tracing_context(enabled=True):
        traced = HookgateMiddleware(engine)
    untraced = HookgateMiddleware(engine)
    assert isinstance(traced, HookgateMiddleware)
    assert traced.name == untraced.name == "HookgateMiddleware"
    for hook in ("awrap_model_call", "awrap_tool_call"):
        assert inspect.iscoroutinefunction(getattr(traced, hook))
        assert not inspect.iscoroutinefunction(getattr(untraced, hook))
    harness = Harness(engine, mode)
    harness.agent = create_agent(harness.model, [harness.shell], middleware=[traced])
    with tracing_context(enabled=False):  # nothing sent anywhere
        harness.run()
    assert harness.received == []
    assert "no rm -rf" in harness.tool_message().text


@MODES
@pytest.mark.parametrize("answer", [None, {"decision": "block", "reason": "no"}])
def test_stop_fires_once_per_run_at_the_final_answer(mode: str, answer: Any) -> None:
    # A run whose tool call is blocked ends like any other: the model answers, stop fires.
    engine, seen = engine_with(
        {
            "pre_tool_use": lambda e: answer,
            "after_llm": lambda e: {"updated_input": e.response["text"].upper()},
        }
    )
    harness = Harness(engine, mode)
    harness.run()
    _drain(engine)
    names = seen.names()
    assert names.count("stop") == 1
    # After the final model call (non-blocking events such as session_start are queued, so
    # their place among the others is not fixed).
    assert names.index("stop") > max(i for i, name in enumerate(names) if name == "after_llm")
    stop = seen.payloads("stop")[0]
    assert stop["last_message"] == "ALL DONE"
    assert stop["turn_id"] == seen.payloads("session_start")[0]["turn_id"]
    # A second invocation is a second run: one more stop.
    harness.model.messages = iter([AIMessage(content="again")])
    harness.run()
    _drain(engine)
    assert [p["last_message"] for p in seen.payloads("stop")] == ["ALL DONE", "AGAIN"]


@MODES
@pytest.mark.parametrize("event", ["pre_tool_use", "before_llm"])
def test_an_aborted_run_fires_no_stop(mode: str, event: str) -> None:
    # As in every adapter: stop reports a run that ended; an abort raises out of it.
    engine, seen = engine_with({event: lambda e: {"abort": "turn", "reason": "halt"}})
    harness = Harness(engine, mode)
    with pytest.raises(HookgateAbort, match="halt"):
        harness.run()
    _drain(engine)
    assert "stop" not in seen.names()


class DirectHarness(Harness):
    """The model calls a return_direct tool twice at once (the run ends after them), or
    once beside ``shell`` (the model is called again)."""

    def __init__(self, target: Any, mode: str, second: str = "fetch") -> None:
        super().__init__(target, mode)
        second_args = {"key": "b"} if second == "fetch" else {"cmd": "b"}
        self.model.messages = iter(
            [
                AIMessage(
                    content="",
                    tool_calls=[
                        {"name": "fetch", "args": {"key": "a"}, "id": "call_a"},
                        {"name": second, "args": second_args, "id": "call_b"},
                    ],
                ),
                AIMessage(content="all done"),
            ]
        )

        @tool(return_direct=True)
        def fetch(key: str) -> str:
            """Fetch a value."""
            self.received.append(key)
            return f"value of {key}"

        self.agent = create_agent(
            self.model,
            [fetch, self.shell],
            middleware=[HookgateMiddleware(target)],
            name="ops-agent",
        )


@MODES
def test_a_run_ended_by_return_direct_tools_fires_stop_once(mode: str) -> None:
    engine, seen = engine_with()
    harness = DirectHarness(engine, mode)
    result = harness.run()
    _drain(engine)
    assert sorted(harness.received) == ["a", "b"]
    assert len(harness.model.seen) == 1  # no model call after the tools
    assert isinstance(result["messages"][-1], ToolMessage)
    stops = seen.payloads("stop")
    assert len(stops) == 1
    assert stops[0]["last_message"] == "value of b"
    assert stops[0]["turn_id"] == seen.payloads("session_start")[0]["turn_id"]


@MODES
def test_a_return_direct_tool_beside_another_ends_nothing_early(mode: str) -> None:
    engine, seen = engine_with()
    harness = DirectHarness(engine, mode, second="shell")
    result = harness.run()
    _drain(engine)
    assert sorted(harness.received) == ["a", "b"]
    assert len(harness.model.seen) == 2
    assert [p["last_message"] for p in seen.payloads("stop")] == ["all done"]
    assert result["messages"][-1].text == "all done"


class Verdict(BaseModel):
    answer: str


@MODES
def test_a_run_ended_by_its_structured_response_fires_stop_once(mode: str) -> None:
    # With a ToolStrategy the model's last message calls the structured-output tool: the
    # run ends there although the message has a tool call.
    engine, seen = engine_with()
    harness = Harness(engine, mode)
    harness.model.messages = iter(
        [
            next(harness.model.messages),
            AIMessage(
                content="",
                tool_calls=[{"name": "Verdict", "args": {"answer": "clean"}, "id": "call_v"}],
            ),
        ]
    )
    harness.agent = create_agent(
        harness.model,
        [harness.shell],
        middleware=[HookgateMiddleware(engine)],
        response_format=ToolStrategy(Verdict),
    )
    result = harness.run()
    _drain(engine)
    assert result["structured_response"] == Verdict(answer="clean")
    assert harness.received == ["rm -rf /"]
    assert len(seen.payloads("stop")) == 1


@MODES
def test_a_bug_building_stop_is_logged_and_the_run_ends_normally(
    mode: str, caplog: pytest.LogCaptureFixture
) -> None:
    # stop is non-blocking: the adapter failing on it must not take the run's answer away.
    class Broken(HookgateMiddleware):
        @staticmethod
        def _final(response: Any) -> AIMessage | None:
            raise RuntimeError("bug")

    engine, seen = engine_with()
    harness = Harness(engine, mode)
    harness.agent = create_agent(harness.model, [harness.shell], middleware=[Broken(engine)])
    result = harness.run()
    _drain(engine)
    assert result["messages"][-1].text == "all done"
    assert "stop" not in seen.names()
    assert "hookgate.adapter.failure" in caplog.text
