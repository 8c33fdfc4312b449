"""guard() on real smolagents ToolCallingAgent runs, with a scripted smolagents Model."""

from __future__ import annotations

from typing import Any

import pytest
from tests.adapters.support import add_context_hook, closed_port, engine_with, require_package

require_package("smolagents", "smolagents")

from smolagents import ToolCallingAgent, tool  # noqa: E402
from smolagents.agents import CodeAgent  # noqa: E402
from smolagents.models import (  # noqa: E402
    ChatMessage,
    ChatMessageToolCall,
    ChatMessageToolCallFunction,
    MessageRole,
    Model,
)
from smolagents.utils import AgentGenerationError  # noqa: E402

from hookgate import Engine  # noqa: E402
from hookgate.adapters import HookgateAbort  # noqa: E402
from hookgate.adapters.smolagents import guard  # noqa: E402
from hookgate.client import GatewayClient  # noqa: E402

CALL_ID = "call_sm_1"


def shell_only(event: Any, answer: dict[str, Any]) -> dict[str, Any] | None:
    """The answer for the shell tool; the final_answer tool (a tool too) passes."""
    return answer if event.tool_name == "shell" else None


def _call(name: str, arguments: dict[str, Any], call_id: str) -> ChatMessage:
    function = ChatMessageToolCallFunction(name=name, arguments=arguments)
    return ChatMessage(
        role=MessageRole.ASSISTANT,
        content="",
        tool_calls=[ChatMessageToolCall(function=function, id=call_id, type="function")],
    )


class Scripted(Model):
    """An offline smolagents model: answers from a script, records what it was sent."""

    def __init__(self, script: list[ChatMessage]) -> None:
        super().__init__(model_id="scripted")
        self.script = script
        self.seen: list[list[Any]] = []

    def generate(self, messages: list[Any], **kwargs: Any) -> ChatMessage:
        self.seen.append(list(messages))
        return self.script[len(self.seen) - 1]


def _observation(messages: list[Any]) -> str:
    """The last tool observation the model was shown."""
    for message in reversed(messages):
        role = getattr(message, "role", None) or message.get("role")
        if str(getattr(role, "value", role)) == "tool-response":
            content = getattr(message, "content", None) or message.get("content")
            return (
                "".join(p.get("text", "") for p in content)
                if isinstance(content, list)
                else content
            )
    raise AssertionError("no tool observation")


class Harness:
    def __init__(self, target: Any, args: dict[str, Any] | None = None) -> None:
        self.received: list[str] = []

        @tool
        def shell(cmd: str) -> str:
            """Run a shell command.

            Args:
                cmd: the command line.
            """
            self.received.append(cmd)
            return f"ran {cmd}"

        self.model = Scripted(
            [
                _call("shell", args or {"cmd": "rm -rf /"}, CALL_ID),
                _call("final_answer", {"answer": "all done"}, "call_final"),
            ]
        )
        self.agent = guard(
            ToolCallingAgent(tools=[shell], model=self.model, name="ops_agent", verbosity_level=0),
            target,
        )

    def run(self, task: str = "clean up") -> Any:
        return self.agent.run(task)

    def observation(self) -> str:
        return _observation(self.model.seen[1])


def test_block_keeps_the_tool_from_running_and_the_model_reads_the_reason() -> None:
    engine, seen = engine_with(
        {"pre_tool_use": lambda e: shell_only(e, {"decision": "block", "reason": "no rm -rf"})}
    )
    harness = Harness(engine)
    assert harness.run() == "all done"
    assert harness.received == []
    assert "no rm -rf" in harness.observation()
    pre = seen.payloads("pre_tool_use")[0]
    assert pre["tool_input"] == {"cmd": "rm -rf /"}
    assert pre["tool_use_id"] == CALL_ID
    assert pre["agent_id"] == "ops_agent"
    assert pre["turn_id"]


def test_rewritten_arguments_are_what_the_tool_receives() -> None:
    engine, seen = engine_with(
        {
            "pre_tool_use": lambda e: (
                {"updated_input": {"cmd": "ls"}} if e.tool_name == "shell" else None
            )
        }
    )
    harness = Harness(engine)
    harness.run()
    assert harness.received == ["ls"]
    assert "ran ls" in harness.observation()


def test_synthetic_result_context_and_output_rewrite() -> None:
    engine, _ = engine_with(
        {"pre_tool_use": lambda e: {"result": "pretend"} if e.tool_name == "shell" else None}
    )
    harness = Harness(engine)
    harness.run()
    assert harness.received == []
    assert "pretend" in harness.observation()

    engine, _ = engine_with(
        {
            "pre_tool_use": lambda e: {"additional_context": "policy: read-only"},
            "post_tool_use": lambda e: (
                {"updated_input": "[redacted]"} if e.tool_name == "shell" else None
            ),
        }
    )
    harness = Harness(engine)
    harness.run()
    assert harness.received == ["rm -rf /"]
    assert "[redacted]\n\npolicy: read-only" in harness.observation()


def test_abort_stops_the_run_before_the_tool() -> None:
    engine, _ = engine_with({"pre_tool_use": lambda e: {"abort": "turn", "reason": "halt"}})
    harness = Harness(engine)
    with pytest.raises(HookgateAbort, match="halt"):
        harness.run()
    assert harness.received == []
    assert len(harness.model.seen) == 1


def test_prompt_block_and_rewrite_and_model_hooks() -> None:
    engine, _ = engine_with(
        {"user_prompt_submit": lambda e: {"decision": "block", "reason": "off-topic"}}
    )
    harness = Harness(engine)
    with pytest.raises(HookgateAbort, match="off-topic"):
        harness.run()
    assert harness.model.seen == []

    engine, seen = engine_with(
        {
            "user_prompt_submit": lambda e: {"updated_input": "list files"},
            "before_llm": lambda e: {"additional_context": "today is Sunday"},
        }
    )
    harness = Harness(engine)
    harness.run()
    first = [_text(m) for m in harness.model.seen[0]]
    assert any("list files" in text for text in first)
    assert not any("clean up" in text for text in first)
    assert first[-1] == "today is Sunday"
    engine.drain_sync()
    assert seen.payloads("session_start")[0]["source"] == "smolagents"
    assert seen.payloads("stop")[0]["last_message"] == "all done"
    assert seen.payloads("after_llm")[0]["response"]["tool_calls"][0]["id"] == CALL_ID


def _text(message: Any) -> str:
    content = getattr(message, "content", None)
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content)
    return str(content or "")


def test_managed_agent_is_a_sub_agent() -> None:
    helper_model = Scripted([_call("final_answer", {"answer": "helped"}, "h1")])
    helper = ToolCallingAgent(
        tools=[], model=helper_model, name="helper", description="helps", verbosity_level=0
    )
    engine, seen = engine_with(
        {"subagent_start": lambda e: {"decision": "block", "reason": "no delegation"}}
    )
    model = Scripted(
        [
            _call("helper", {"task": "list files"}, "c_sub"),
            _call("final_answer", {"answer": "all done"}, "call_final"),
        ]
    )
    agent = guard(
        ToolCallingAgent(
            tools=[], model=model, managed_agents=[helper], name="root", verbosity_level=0
        ),
        engine,
    )
    agent.run("delegate")
    assert helper_model.seen == []
    assert "no delegation" in _observation(model.seen[1])
    start = seen.payloads("subagent_start")[0]
    assert (start["source_agent"], start["target_agent"], start["task"]) == (
        "root",
        "helper",
        "list files",
    )


def test_a_crashing_hook_and_a_down_gateway_block() -> None:
    def crash(event: Any) -> None:
        raise RuntimeError("bug")

    engine, _ = engine_with({"pre_tool_use": crash})
    harness = Harness(engine)
    harness.run()
    assert harness.received == []

    harness = Harness(GatewayClient(f"http://127.0.0.1:{closed_port()}", "k", timeout=2))
    with pytest.raises(HookgateAbort, match="GatewayConnectionError"):
        harness.run()
    assert harness.model.seen == []


def test_a_code_agent_is_refused() -> None:
    with pytest.raises(TypeError, match="CodeAgent"):
        guard(CodeAgent(tools=[], model=Scripted([])), Engine())  # type: ignore[arg-type]


def test_model_call_rewrites_and_block() -> None:
    engine, _ = engine_with(
        {
            "before_llm": lambda e: {"updated_input": {**e.request, "system": "be terse"}},
            "after_llm": lambda e: {"updated_input": "thinking, rewritten"},
        }
    )
    harness = Harness(engine)
    harness.run()
    first = harness.model.seen[0]
    assert _text(first[0]) == "be terse"
    steps = [s for s in harness.agent.memory.steps if getattr(s, "model_output", None)]
    assert steps[0].model_output == "thinking, rewritten"

    engine, _ = engine_with({"before_llm": lambda e: {"decision": "block", "reason": "budget"}})
    harness = Harness(engine)
    with pytest.raises(AgentGenerationError) as caught:
        harness.run()
    assert isinstance(caught.value.__cause__, HookgateAbort)
    assert harness.model.seen == []


def test_with_no_hooks_the_run_is_untouched() -> None:
    harness = Harness(Engine())
    assert harness.run() == "all done"
    assert harness.received == ["rm -rf /"]
    assert harness.observation() == "Observation:\nran rm -rf /"


def test_a_hook_added_after_the_agent_was_built_fires() -> None:
    engine = Engine()
    harness = Harness(engine)
    seen = add_context_hook(engine)
    assert harness.run() == "all done"
    assert harness.received == ["rm -rf /"]
    assert harness.observation() == "Observation:\nran rm -rf /\n\npolicy: read-only host"
    assert [e.tool_use_id for e in seen] == [CALL_ID]


def test_parallel_calls_of_one_tool_carry_their_own_ids() -> None:
    engine, seen = engine_with()
    harness = Harness(engine)
    calls = [
        ChatMessageToolCall(
            function=ChatMessageToolCallFunction(name="shell", arguments={"cmd": cmd}),
            id=call_id,
            type="function",
        )
        for cmd, call_id in (("ls", "call_a"), ("pwd", "call_b"))
    ]
    harness.model.script[0] = ChatMessage(role=MessageRole.ASSISTANT, content="", tool_calls=calls)
    assert harness.run() == "all done"
    assert sorted(harness.received) == ["ls", "pwd"]
    ids = {
        p["tool_input"]["cmd"]: p["tool_use_id"]
        for p in seen.payloads("pre_tool_use")
        if p["tool_name"] == "shell"
    }
    assert ids == {"ls": "call_a", "pwd": "call_b"}
