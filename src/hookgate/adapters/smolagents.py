"""hookgate inside smolagents ``ToolCallingAgent`` runs.

    from smolagents import ToolCallingAgent
    from hookgate.adapters.smolagents import guard
    agent = guard(ToolCallingAgent(tools=[...], model=model, name="ops"), engine)
    agent.run("clean up")

smolagents has no hook points, so ``guard`` wraps the agent's own methods in place: ``run``
(the session and the task), ``process_tool_calls`` (to learn each call's id),
``execute_tool_call`` (every tool and managed agent call) and its model's ``generate``. It is
synchronous, like smolagents: give it a :class:`hookgate.Engine` or a
:class:`~hookgate.client.GatewayClient`. A ``CodeAgent`` is refused (``TypeError``): its tool
calls happen inside generated code, where no call passes a point hookgate can hold.

==========================  ===========  ==================================================
outcome                     support      how
==========================  ===========  ==================================================
block a tool call           native       the tool is not called; the reason is the
                                         observation the model reads
rewrite tool arguments      native       the tool is called with the new arguments
synthetic tool result       native       the result is the observation
context for the model       native       appended to the observation / the task / the
                                         model messages (``before_llm``)
rewrite tool output         native       ``post_tool_use`` ``updated_input`` is the result
abort the run               native       :class:`~hookgate.adapters.HookgateAbort` out of
                                         ``run`` (from the model call: smolagents' own
                                         ``AgentGenerationError`` whose cause it is)
block / rewrite the prompt  native       the task ``run`` receives
before_llm / after_llm      native       the model's ``generate``: system message rewrite,
                                         context as a system message; response text
sub-agent start / stop      native       managed agents are called through
                                         ``execute_tool_call``: a block refuses the
                                         call, a rewrite of ``task`` is what it runs
session start / stop        native       ``run``
==========================  ===========  ==================================================

Payloads carry ``tool_use_id`` (the model's tool call id), ``turn_id`` (one id per ``run``)
and ``agent_id`` (the agent's ``name``).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from typing import Any

from smolagents import ToolCallingAgent
from smolagents.models import ChatMessage, MessageRole

from hookgate.adapters._gate import Gate, Target
from hookgate.adapters._mapping import (
    HookgateAbort,
    ToolVerdict,
    after_tool_sync,
    as_text,
    before_tool_sync,
    check_abort,
    drop_none,
    llm_verdict,
    prompt_verdict,
    refused,
    request_view,
    response_view,
    system_rewrite,
    text_rewrite,
    with_context,
)

__all__ = ["HookgateAbort", "guard"]

SOURCE = "smolagents"


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
    return ""


class _Guard:
    """The state ``guard`` adds to one agent: its gate, its run id, the calls' ids."""

    def __init__(self, agent: ToolCallingAgent, gate: Gate) -> None:
        self.agent = agent
        self.gate = gate
        self.run_id: str | None = None
        # tool name -> [(arguments, call id)] of the calls the model made, in order.
        self.call_ids: dict[str, list[tuple[Any, str | None]]] = {}

    def ids(self) -> dict[str, Any]:
        return drop_none({"turn_id": self.run_id, "agent_id": self.agent.name})

    # -- the run ----------------------------------------------------------------------------

    def run(self, original: Callable[..., Any], task: str, *args: Any, **kwargs: Any) -> Any:
        self.run_id = uuid.uuid4().hex
        gate = self.gate
        if gate.wants("session_start"):
            gate.fire_sync("session_start", {**self.ids(), "source": SOURCE, "prompt": task})
        if gate.wants("user_prompt_submit"):
            outcome = gate.fire_sync("user_prompt_submit", {**self.ids(), "prompt": task})
            verdict = prompt_verdict(outcome, task)
            task = with_context(verdict.prompt, verdict.context)
        result = original(task, *args, **kwargs)
        if isinstance(result, Iterator):
            return self._stop_after(result, self.run_id)
        self._stop(self.run_id, result)
        return result

    def _stop(self, run_id: str | None, result: Any) -> None:
        if not self.gate.wants("stop"):
            return
        output = getattr(result, "output", result)
        payload = drop_none({"turn_id": run_id, "agent_id": self.agent.name})
        payload.update(last_message=as_text(output), stop_reason="end")
        self.gate.fire_sync("stop", payload)

    def _stop_after(self, steps: Iterator[Any], run_id: str | None) -> Iterator[Any]:
        last = None
        for last in steps:
            yield last
        self._stop(run_id, getattr(last, "output", last))

    # -- tool calls -------------------------------------------------------------------------

    def _tool_events(self, tool_name: str) -> bool:
        """Whether a call of ``tool_name`` fires anything (else it passes straight through)."""
        gate = self.gate
        if tool_name in self.agent.managed_agents:
            return True
        return gate.wants("pre_tool_use") or gate.wants("post_tool_use")

    def process_tool_calls(
        self, original: Callable[..., Any], chat_message: ChatMessage, memory_step: Any
    ) -> Any:
        for call in chat_message.tool_calls or []:
            if self._tool_events(call.function.name):
                pending = self.call_ids.setdefault(call.function.name, [])
                pending.append((call.function.arguments, call.id))
        return original(chat_message, memory_step)

    def _call_id(self, tool_name: str, arguments: Any) -> str | None:
        """The id of the model's call this execution is (None when it cannot be told)."""
        pending = self.call_ids.get(tool_name)
        if not pending:
            return None
        index = 0
        if len(pending) > 1:  # several calls of this tool: the one with these arguments
            matching = [i for i, (args, _) in enumerate(pending) if args == arguments]
            if not matching:
                return None
            index = matching[0]
        call_id = pending.pop(index)[1]
        if not pending:
            del self.call_ids[tool_name]
        return call_id

    def execute_tool_call(
        self, original: Callable[..., Any], tool_name: str, arguments: Any
    ) -> Any:
        if not self._tool_events(tool_name):
            return original(tool_name, arguments)
        try:
            call_id = self._call_id(tool_name, arguments)
            args = dict(arguments) if isinstance(arguments, dict) else {"input": arguments}
            payload = {**self.ids(), "tool_name": tool_name, "tool_input": args}
            if call_id is not None:
                payload["tool_use_id"] = call_id
        except Exception as exc:
            return refused(exc).text()
        if self.gate.wants("pre_tool_use"):
            verdict = before_tool_sync(self.gate, payload)
        else:
            verdict = ToolVerdict("run", args)
        if verdict.action == "block":
            return verdict.text()
        if verdict.action == "respond":
            return verdict.text() if verdict.context else verdict.result
        args = verdict.args
        managed = tool_name in self.agent.managed_agents
        if managed:
            delegated = self._delegate(tool_name, args)
            if isinstance(delegated, str):
                return delegated  # refused: the reason is the observation
            args = delegated
        call_args: Any = args if isinstance(arguments, dict) else args.get("input", arguments)
        output = original(tool_name, call_args)
        payload["tool_input"] = args
        if managed and self.gate.wants("subagent_stop"):
            self.gate.fire_sync(
                "subagent_stop",
                {
                    **self.ids(),
                    "source_agent": self.agent.name,
                    "target_agent": tool_name,
                    "task": args.get("task"),
                    "output": as_text(output),
                },
            )
        if not self.gate.wants("post_tool_use"):
            if not verdict.context:
                return output
            return with_context(as_text(output), verdict.context)
        after = after_tool_sync(self.gate, payload, output)
        context = verdict.context + after.context
        if not context:
            return after.output
        return with_context(as_text(after.output), context)

    def _delegate(self, name: str, args: dict[str, Any]) -> dict[str, Any] | str:
        """``subagent_start`` for a managed agent: its arguments, or the refusal text."""
        outcome = self.gate.fire_sync(
            "subagent_start",
            {
                **self.ids(),
                "source_agent": self.agent.name,
                "target_agent": name,
                "task": args.get("task"),
            },
        )
        check_abort("subagent_start", outcome)
        if outcome.blocked:
            return f"Blocked by hookgate: {outcome.reason or 'blocked by a hook'}"
        if outcome.updated_input is not None:
            if not isinstance(outcome.updated_input, str):
                return "Blocked by hookgate: a sub-agent's task must be rewritten as text"
            args = {**args, "task": outcome.updated_input}
        return args

    # -- the model call ---------------------------------------------------------------------

    def generate(
        self, original: Callable[..., ChatMessage], messages: list[Any], **kwargs: Any
    ) -> ChatMessage:
        gate = self.gate
        before, after = gate.wants("before_llm"), gate.wants("after_llm")
        if not (before or after):
            return original(messages, **kwargs)
        views = [_as_message(m) for m in messages]
        system = next((v["content"] for v in views if v["role"] == "system"), None)
        tools = [t.name for t in kwargs.get("tools_to_call_from") or []]
        model = getattr(self.agent.model, "model_id", None)
        view = request_view(model=model, system=system, messages=views, tools=tools)
        if before:
            outcome = gate.fire_sync("before_llm", {**self.ids(), "request": view})
            updated, context = llm_verdict("before_llm", outcome)
            messages = _with_system(messages, views, system_rewrite(view, updated), context)
        response = original(messages, **kwargs)
        return self._after_llm(view, response) if after else response

    def _after_llm(self, view: dict[str, Any], response: ChatMessage) -> ChatMessage:
        calls = [
            {"name": c.function.name, "args": c.function.arguments, "id": c.id}
            for c in response.tool_calls or []
        ]
        answer = response_view(_text(response.content), calls)
        outcome = self.gate.fire_sync(
            "after_llm", {**self.ids(), "request": view, "response": answer}
        )
        updated, context = llm_verdict("after_llm", outcome)
        text = text_rewrite(answer, updated)
        if text is None and not context:
            return response
        response.content = with_context(answer["text"] if text is None else text, context)
        return response


def _with_system(
    messages: list[Any], views: list[dict[str, Any]], system: str | None, context: list[str]
) -> list[Any]:
    """The messages with the rewritten system prompt and the hooks' context (as system
    messages at the end); the same list when there is neither."""
    if system is None and not context:
        return messages
    messages = list(messages)
    if system is not None:
        for index, view in enumerate(views):
            if view["role"] == "system":
                messages[index] = ChatMessage(role=MessageRole.SYSTEM, content=system)
                break
        else:
            messages.insert(0, ChatMessage(role=MessageRole.SYSTEM, content=system))
    messages += [ChatMessage(role=MessageRole.SYSTEM, content=text) for text in context]
    return messages


def _as_message(message: Any) -> dict[str, Any]:
    if isinstance(message, ChatMessage):
        role, content = message.role, message.content
    elif isinstance(message, dict):
        role, content = message.get("role", "user"), message.get("content")
    else:
        role, content = "user", str(message)
    return {"role": str(getattr(role, "value", role)), "content": _text(content)}


def guard(agent: ToolCallingAgent, target: Target | Gate) -> ToolCallingAgent:
    """Gate ``agent`` in place with hookgate's hooks, and return it."""
    if not isinstance(agent, ToolCallingAgent):
        raise TypeError(
            f"hookgate cannot gate a {type(agent).__name__}: only ToolCallingAgent calls tools "
            "through a point it can hold (a CodeAgent calls them from generated code)"
        )
    state = _Guard(agent, Gate(target))
    for name in ("run", "process_tool_calls", "execute_tool_call"):
        original = getattr(agent, name)
        wrapper = getattr(state, name)
        setattr(agent, name, _bind(wrapper, original))
    model = agent.model
    model.generate = _bind(state.generate, model.generate)
    return agent


def _bind(wrapper: Callable[..., Any], original: Callable[..., Any]) -> Callable[..., Any]:
    def bound(*args: Any, **kwargs: Any) -> Any:
        return wrapper(original, *args, **kwargs)

    return bound
