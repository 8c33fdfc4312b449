"""guard_tools and HookgateRunHooks in real OpenAI Agents SDK runs, with the SDK's own
ScriptedModel calling a tool."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from tests.adapters.support import (
    PROMPT_AND_MODEL_REWRITES,
    add_context_hook,
    closed_port,
    engine_with,
    require_package,
)

require_package("agents", "openai-agents")

from agents import Agent, RunConfig, Runner, WebSearchTool, function_tool, trace  # noqa: E402
from agents.testing import ScriptedModel  # noqa: E402
from agents.testing.model import assistant_message, function_call  # noqa: E402

from hookgate import Engine  # noqa: E402
from hookgate.adapters import HookgateAbort  # noqa: E402
from hookgate.adapters.openai_agents import HookgateRunHooks, guard_tools  # noqa: E402
from hookgate.client import AsyncGatewayClient  # noqa: E402

CALL_ID = "call_oa_1"


class Harness:
    def __init__(
        self,
        target: Any,
        *,
        handoff: bool = False,
        filtered: bool = False,
        args: dict[str, Any] | None = None,
    ) -> None:
        self.received: list[str] = []
        self.model = ScriptedModel(
            [
                [function_call("shell", args or {"cmd": "rm -rf /"}, call_id=CALL_ID)],
                [assistant_message("all done")],
            ]
        )

        @function_tool
        def shell(cmd: str) -> str:
            """Run a shell command."""
            self.received.append(cmd)
            return f"ran {cmd}"

        self.agent = Agent(
            name="ops-agent",
            instructions="be careful",
            model=self.model,
            tools=guard_tools([shell], target),
        )
        self.hooks = HookgateRunHooks(target)
        # With the filter, the prompt and before_llm go through the SDK's own input filter
        # (and with tracing off, so the run is told apart by its no-op trace).
        self.run_config = (
            RunConfig(call_model_input_filter=self.hooks.model_input_filter, tracing_disabled=True)
            if filtered
            else None
        )

    async def run(self, prompt: str = "clean up") -> Any:
        return await Runner.run(self.agent, prompt, hooks=self.hooks, run_config=self.run_config)

    def tool_output(self) -> str:
        """The tool result the model read on its second call."""
        second = self.model.calls[1].input
        return next(i["output"] for i in second if i.get("type") == "function_call_output")


async def test_block_keeps_the_tool_from_running_and_the_model_reads_the_reason() -> None:
    engine, seen = engine_with(
        {"pre_tool_use": lambda e: {"decision": "block", "reason": "no rm -rf"}}
    )
    harness = Harness(engine)
    result = await harness.run()
    assert harness.received == []
    assert "no rm -rf" in harness.tool_output()
    assert result.final_output == "all done"
    pre = seen.payloads("pre_tool_use")[0]
    assert pre["tool_input"] == {"cmd": "rm -rf /"}
    assert pre["tool_use_id"] == CALL_ID
    assert pre["agent_id"] == "ops-agent"
    assert pre["turn_id"].startswith("trace_")
    assert "post_tool_use" not in seen.names()


async def test_rewritten_arguments_are_what_the_tool_receives() -> None:
    engine, seen = engine_with({"pre_tool_use": lambda e: {"updated_input": {"cmd": "ls"}}})
    harness = Harness(engine)
    await harness.run()
    assert harness.received == ["ls"]
    assert harness.tool_output() == "ran ls"
    assert seen.payloads("post_tool_use")[0]["tool_input"] == {"cmd": "ls"}


async def test_synthetic_result_replaces_the_call() -> None:
    engine, _ = engine_with({"pre_tool_use": lambda e: {"result": {"files": 3}}})
    harness = Harness(engine)
    await harness.run()
    assert harness.received == []
    assert json.loads(harness.tool_output()) == {"files": 3}


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
    assert harness.tool_output() == "[redacted]\n\npolicy: read-only host"


async def test_abort_stops_the_run_before_the_tool() -> None:
    engine, _ = engine_with({"pre_tool_use": lambda e: {"abort": "turn", "reason": "halt"}})
    harness = Harness(engine)
    with pytest.raises(HookgateAbort, match="halt"):
        await harness.run()
    assert harness.received == []
    assert len(harness.model.calls) == 1


async def test_blocked_prompt_never_reaches_the_model() -> None:
    engine, _ = engine_with(
        {"user_prompt_submit": lambda e: {"decision": "block", "reason": "off-topic"}}
    )
    harness = Harness(engine)
    with pytest.raises(HookgateAbort, match="off-topic"):
        await harness.run()
    assert harness.model.calls == ()


async def test_prompt_rewrite_and_model_hooks() -> None:
    engine, seen = engine_with(
        {
            "user_prompt_submit": lambda e: {"updated_input": "list files"},
            "before_llm": lambda e: {"additional_context": "today is Sunday"},
            "after_llm": lambda e: (
                {"updated_input": e.response["text"].upper()} if e.response["text"] else None
            ),
        }
    )
    harness = Harness(engine)
    result = await harness.run()
    first = harness.model.calls[0]
    assert first.system_instructions == "be careful"
    assert first.input[0] == {"role": "user", "content": "list files"}
    assert {"role": "developer", "content": "today is Sunday"} in first.input
    # The SDK rebuilds each turn's input from the original prompt: the rewrite holds anyway.
    assert harness.model.calls[1].input[0] == {"role": "user", "content": "list files"}
    assert result.final_output == "ALL DONE"
    request = seen.payloads("before_llm")[0]["request"]
    assert request["system"] == "be careful"
    assert request["tools"] == ["shell"]
    response = seen.payloads("after_llm")[0]["response"]
    assert response["tool_calls"] == [{"name": "shell", "args": {"cmd": "rm -rf /"}, "id": CALL_ID}]
    await engine.drain()
    assert seen.payloads("session_start")[0]["source"] == "openai-agents"
    assert seen.payloads("stop")[0]["last_message"] == "ALL DONE"


async def test_prompt_and_system_rewrites_through_the_model_input_filter() -> None:
    engine, seen = engine_with(PROMPT_AND_MODEL_REWRITES)
    harness = Harness(engine, filtered=True)
    result = await harness.run()
    first, second = harness.model.calls
    assert first.system_instructions == "be very careful"
    assert first.input[0] == {"role": "user", "content": "list files"}
    assert first.input[-1] == {"role": "developer", "content": "today is Sunday"}
    # The rewritten prompt stays in the run's history; the context was for one call.
    assert second.system_instructions == "be very careful"
    assert second.input[0] == {"role": "user", "content": "list files"}
    assert second.input[-1] == {"role": "developer", "content": "today is Sunday"}
    assert second.input.count({"role": "developer", "content": "today is Sunday"}) == 1
    assert harness.received == ["rm -rf /"]
    assert result.final_output == "ALL DONE"
    assert [p["prompt"] for p in seen.payloads("user_prompt_submit")] == ["clean up"]
    requests = [p["request"] for p in seen.payloads("before_llm")]
    assert [r["system"] for r in requests] == ["be careful", "be careful"]
    assert requests[0]["messages"][0] == {"role": "user", "content": "list files"}


async def test_a_blocked_prompt_through_the_model_input_filter_never_reaches_the_model() -> None:
    engine, _ = engine_with(
        {"user_prompt_submit": lambda e: {"decision": "block", "reason": "off-topic"}}
    )
    harness = Harness(engine, filtered=True)
    with pytest.raises(HookgateAbort, match="off-topic"):
        await harness.run()
    assert harness.model.calls == ()


async def test_a_blocked_model_call_through_the_model_input_filter_stops_the_run() -> None:
    engine, _ = engine_with({"before_llm": lambda e: {"decision": "block", "reason": "no"}})
    harness = Harness(engine, filtered=True)
    with pytest.raises(HookgateAbort, match="no"):
        await harness.run()
    assert harness.model.calls == ()


async def test_system_rewrite_cannot_be_applied_and_stops_the_run() -> None:
    engine, _ = engine_with(
        {"before_llm": lambda e: {"updated_input": {**e.request, "system": "other"}}}
    )
    harness = Harness(engine)
    with pytest.raises(HookgateAbort, match="instructions"):
        await harness.run()
    assert harness.model.calls == ()


async def test_handoff_fires_subagent_events_and_a_block_stops_it() -> None:
    engine, seen = engine_with(
        {"subagent_start": lambda e: {"decision": "block", "reason": "no delegation"}}
    )
    helper = Agent(name="helper", model=ScriptedModel([[assistant_message("helped")]]))
    model = ScriptedModel([[function_call("transfer_to_helper", {}, call_id="call_h")]])
    root = Agent(name="root", model=model, handoffs=[helper])
    with pytest.raises(HookgateAbort, match="no delegation"):
        await Runner.run(root, "delegate", hooks=HookgateRunHooks(engine))
    start = seen.payloads("subagent_start")[0]
    assert (start["source_agent"], start["target_agent"]) == ("root", "helper")
    assert helper.model.calls == ()  # type: ignore[union-attr]


async def test_handoff_allowed_reports_subagent_stop() -> None:
    engine, seen = engine_with()
    helper_model = ScriptedModel([[assistant_message("helped")]])
    helper = Agent(name="helper", model=helper_model)
    model = ScriptedModel([[function_call("transfer_to_helper", {}, call_id="call_h")]])
    root = Agent(name="root", model=model, handoffs=[helper])
    result = await Runner.run(root, "delegate", hooks=HookgateRunHooks(engine))
    assert result.final_output == "helped"
    await engine.drain()
    stop = seen.payloads("subagent_stop")[0]
    assert (stop["source_agent"], stop["target_agent"], stop["output"]) == (
        "root",
        "helper",
        "helped",
    )


async def test_a_crashing_hook_blocks() -> None:
    def crash(event: Any) -> None:
        raise RuntimeError("bug in hook")

    engine, _ = engine_with({"pre_tool_use": crash})
    harness = Harness(engine)
    await harness.run()
    assert harness.received == []
    assert "Blocked by hookgate" in harness.tool_output()


async def test_an_unreachable_gateway_blocks_the_tool() -> None:
    client = AsyncGatewayClient(f"http://127.0.0.1:{closed_port()}", "hg_key", timeout=2)
    harness = Harness(client)
    harness.hooks = HookgateRunHooks(Engine())  # only the tool goes to the (down) gateway
    await harness.run()
    assert harness.received == []
    assert "GatewayConnectionError" in harness.tool_output()


def test_tools_that_cannot_be_gated_are_refused() -> None:
    with pytest.raises(TypeError, match="cannot gate WebSearchTool"):
        guard_tools([WebSearchTool()], Engine())


async def test_a_blocked_model_call_stops_the_run() -> None:
    engine, _ = engine_with({"before_llm": lambda e: {"decision": "block", "reason": "budget"}})
    harness = Harness(engine)
    with pytest.raises(HookgateAbort, match="budget"):
        await harness.run()
    assert harness.model.calls == ()


async def test_with_no_hooks_the_run_is_untouched() -> None:
    harness = Harness(Engine())
    result = await harness.run()
    assert harness.received == ["rm -rf /"]
    assert harness.tool_output() == "ran rm -rf /"
    assert result.final_output == "all done"


async def test_a_hook_added_after_the_agent_was_built_fires() -> None:
    engine = Engine()
    harness = Harness(engine)
    seen = add_context_hook(engine)
    await harness.run()
    assert harness.received == ["rm -rf /"]
    assert harness.tool_output() == "ran rm -rf /\n\npolicy: read-only host"
    assert [e.tool_use_id for e in seen] == [CALL_ID]


@pytest.mark.parametrize("filtered", [False, True])
async def test_concurrent_runs_in_one_trace_each_check_their_prompt(filtered: bool) -> None:
    # One hooks object, two runs at once under the caller's trace: each run's prompt is
    # fired and rewritten, and neither run's rewrite reaches the other.
    engine, seen = engine_with(
        {"user_prompt_submit": lambda e: {"updated_input": e.prompt.upper()}}
    )
    hooks = HookgateRunHooks(engine)
    config = RunConfig(call_model_input_filter=hooks.model_input_filter) if filtered else None

    def agent(name: str) -> tuple[Agent[Any], ScriptedModel]:
        model = ScriptedModel(
            [
                [function_call("shell", {"cmd": "ls"}, call_id=f"call_{name}")],
                [assistant_message("done")],
            ]
        )

        @function_tool
        def shell(cmd: str) -> str:
            """Run a shell command."""
            return f"ran {cmd}"

        return Agent(name=name, model=model, tools=guard_tools([shell], engine)), model

    (first, first_model), (second, second_model) = agent("first"), agent("second")
    with trace("batch"):
        await asyncio.gather(
            Runner.run(first, "first task", hooks=hooks, run_config=config),
            Runner.run(second, "second task", hooks=hooks, run_config=config),
        )
    prompts = sorted(p["prompt"] for p in seen.payloads("user_prompt_submit"))
    assert prompts == ["first task", "second task"]
    for model, prompt in ((first_model, "FIRST TASK"), (second_model, "SECOND TASK")):
        assert [call.input[0]["content"] for call in model.calls] == [prompt, prompt]


# -- per-run state, by the run's own usage object ---------------------------------------------


def test_runs_whose_usage_objects_are_equal_keep_their_own_state() -> None:
    """Two runs' usage objects compare equal (fresh counters) and are unhashable: each run
    still finds its own state, and only its own."""
    from agents import RunContextWrapper
    from agents.usage import Usage

    hooks = HookgateRunHooks(Engine())
    agent = Agent(name="a")
    one, two = RunContextWrapper(context=None), RunContextWrapper(context=None)
    assert one.usage == two.usage and one.usage is not two.usage
    first, made = hooks._run(one, agent)
    assert made
    first.rewrites["x"] = "y"
    second, made = hooks._run(two, agent)
    assert made and second is not first and second.rewrites == {}
    assert hooks._run(RunContextWrapper(context=None, usage=one.usage), agent) == (first, False)
    assert hooks._runs.get(Usage()) is None  # equal, but not the run's own


def test_a_run_that_never_ended_leaves_nothing_once_its_objects_are_gone() -> None:
    """No on_agent_end (the run raised): the entry goes with the run's usage object, and a
    new object (even at the same address) is a new run."""
    import gc

    from agents import RunContextWrapper

    hooks = HookgateRunHooks(Engine())
    agent = Agent(name="a")
    for _ in range(50):
        context = RunContextWrapper(context=None)
        hooks._run(context, agent)[0].prompted = True
        del context
    gc.collect()
    assert len(hooks._runs) == 0
    run, made = hooks._run(RunContextWrapper(context=None), agent)
    assert made and not run.prompted


def test_an_owner_without_weak_references_is_found_by_identity_only() -> None:
    """A context with no usage object that cannot be weakly referenced: held by its entry,
    found for itself only, and gone once the run ends."""

    class Bare:
        __slots__ = ("n",)

        def __init__(self) -> None:
            self.n = 0

        def __eq__(self, other: object) -> bool:
            return isinstance(other, Bare)

        __hash__ = None  # type: ignore[assignment]

    hooks = HookgateRunHooks(Engine())
    agent = Agent(name="a")
    owner = Bare()
    run, made = hooks._run(owner, agent)
    assert made and hooks._run(owner, agent) == (run, False)
    assert hooks._runs.get(Bare()) is None
    assert hooks._runs.pop(owner) is run and len(hooks._runs) == 0
