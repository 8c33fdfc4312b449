"""hookgate inside LangChain v1 agents (``langchain.agents.create_agent``).

    from hookgate.adapters.langchain import HookgateMiddleware
    agent = create_agent(model, tools, middleware=[HookgateMiddleware(engine)])

``HookgateMiddleware`` takes a :class:`hookgate.Engine` or a gateway client
(:class:`~hookgate.client.GatewayClient` for ``invoke``, either client for ``ainvoke``). Both
the sync and the async middleware paths are implemented, so ``invoke`` and ``ainvoke`` run the
same hooks.

==========================  =========  ====================================================
outcome                     support    how
==========================  =========  ====================================================
block a tool call           native     ``wrap_tool_call`` returns an error ``ToolMessage``
                                       with the reason; the tool never runs
rewrite tool arguments      native     the handler runs ``request.override(tool_call=...)``
synthetic tool result       native     a ``ToolMessage`` with the hook's result
context for the model       native     appended to the tool message / the human message /
                                       the system message (``before_llm``)
rewrite tool output         native     ``post_tool_use`` ``updated_input`` replaces the
                                       ``ToolMessage`` content
abort the run               native     :class:`~hookgate.adapters.HookgateAbort` is raised
                                       out of ``invoke``
block / rewrite the prompt  native     ``before_agent``: a block raises ``HookgateAbort``
                                       before any model call; a rewrite replaces the last
                                       human message (same id)
before_llm / after_llm      native     ``wrap_model_call``; rewrites: ``system`` of the
                                       request, ``text`` of the response
sub-agent start / stop      impossible LangChain has no sub-agent boundary (sub-agents are
                                       tools: ``pre/post_tool_use`` see them)
session start / stop        native     ``before_agent`` / ``after_agent`` (once per run)
==========================  =========  ====================================================

Payloads carry ``tool_use_id`` (the tool call id), ``session_id`` (the thread id),
``turn_id`` (the config's ``run_id``, else an id per invocation kept in the agent's
state, not checkpointed) and ``agent_id`` (the agent's ``name``).
"""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable
from typing import Annotated, Any, NotRequired

from langchain.agents.middleware.types import (
    AgentMiddleware,
    AgentState,
    ModelRequest,
    ModelResponse,
    PrivateStateAttr,
)
from langchain_core.messages import (
    AIMessage,
    AnyMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)
from langgraph.channels.untracked_value import UntrackedValue
from langgraph.config import get_config
from langgraph.prebuilt.tool_node import ToolCallRequest
from langgraph.runtime import Runtime
from langgraph.types import Command

from hookgate.adapters._gate import Gate, Target
from hookgate.adapters._mapping import (
    HookgateAbort,
    OutputVerdict,
    ToolVerdict,
    after_tool,
    after_tool_sync,
    as_text,
    before_tool,
    before_tool_sync,
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
from hookgate.outcome import Outcome

__all__ = ["HookgateAbort", "HookgateMiddleware"]

SOURCE = "langchain"
ModelHandler = Callable[[ModelRequest[Any]], ModelResponse[Any] | AIMessage]
AsyncModelHandler = Callable[[ModelRequest[Any]], Awaitable[ModelResponse[Any] | AIMessage]]
ToolHandler = Callable[[ToolCallRequest], ToolMessage | Command[Any]]
AsyncToolHandler = Callable[[ToolCallRequest], Awaitable[ToolMessage | Command[Any]]]


class HookgateState(AgentState[Any]):
    """The agent state plus the id hookgate gives each invocation (not checkpointed, not in
    the graph's input or output)."""

    hookgate_run_id: NotRequired[Annotated[str, UntrackedValue, PrivateStateAttr]]


def _ids(config: Any, agent_name: str | None, state: Any = None) -> dict[str, Any]:
    """session_id / turn_id / agent_id from a RunnableConfig (and the state's run id)."""
    config = config or {}
    configurable = config.get("configurable") or {}
    metadata = config.get("metadata") or {}
    run_id = config.get("run_id") or metadata.get("run_id")
    if run_id is None and isinstance(state, dict):
        run_id = state.get("hookgate_run_id")
    return drop_none(
        {
            "session_id": configurable.get("thread_id"),
            "turn_id": str(run_id) if run_id is not None else None,
            "agent_id": agent_name or metadata.get("lc_agent_name"),
        }
    )


def _current_ids(agent_name: str | None, state: Any = None) -> dict[str, Any]:
    try:
        return _ids(get_config(), agent_name, state)
    except RuntimeError:  # outside a runnable context
        return _ids(None, agent_name, state)


def _last_human(messages: list[AnyMessage]) -> HumanMessage | None:
    for message in reversed(messages):
        if isinstance(message, HumanMessage):
            return message
    return None


def _role(message: BaseMessage) -> str:
    return {"human": "user", "ai": "assistant"}.get(message.type, message.type)


def _request_view(request: ModelRequest[Any]) -> dict[str, Any]:
    tools = [getattr(t, "name", None) or str(t.get("name", "")) for t in request.tools]  # type: ignore[union-attr]
    model = getattr(request.model, "model_name", None) or type(request.model).__name__
    return request_view(
        model=str(model),
        system=request.system_prompt,
        messages=[{"role": _role(m), "content": m.text} for m in request.messages],
        tools=tools,
    )


def _as_called(payload: dict[str, Any]) -> ToolVerdict:
    """The verdict when no ``pre_tool_use`` hook exists: run the call as the model made it."""
    return ToolVerdict("run", payload["tool_input"])


def _ai_message(response: ModelResponse[Any] | AIMessage) -> AIMessage | None:
    messages = [response] if isinstance(response, AIMessage) else response.result
    for message in reversed(messages):
        if isinstance(message, AIMessage):
            return message
    return None


def _rewritten_response(
    response: ModelResponse[Any] | AIMessage, old: AIMessage, text: str
) -> ModelResponse[Any] | AIMessage:
    new = old.model_copy(update={"content": text})
    if isinstance(response, AIMessage):
        return new
    return ModelResponse(
        result=[new if m is old else m for m in response.result],
        structured_response=response.structured_response,
    )


class HookgateMiddleware(AgentMiddleware[HookgateState, Any, Any]):
    """Runs hookgate's hooks at every point of a LangChain v1 agent run."""

    state_schema = HookgateState

    def __init__(self, target: Target | Gate, *, agent_name: str | None = None) -> None:
        super().__init__()
        self.gate = Gate(target)
        self.agent_name = agent_name

    @property
    def name(self) -> str:
        return "HookgateMiddleware"

    # -- the run: session_start + user_prompt_submit, stop --------------------------------

    def _prompt_start(
        self, state: HookgateState
    ) -> tuple[dict[str, Any], HumanMessage | None, dict[str, Any], dict[str, Any]]:
        """The session_start payload, the prompt's message, the user_prompt_submit payload
        and the state update that records this invocation's run id."""
        run_id = uuid.uuid4().hex
        ids = _current_ids(self.agent_name, {"hookgate_run_id": run_id})
        human = _last_human(state["messages"])
        prompt = human.text if human is not None else ""
        start = {**ids, "source": SOURCE, "prompt": prompt}
        return start, human, {**ids, "prompt": prompt}, {"hookgate_run_id": run_id}

    @staticmethod
    def _prompt_update(
        human: HumanMessage | None, outcome: Outcome, update: dict[str, Any]
    ) -> dict[str, Any]:
        if human is None:
            return update
        verdict = prompt_verdict(outcome, human.text)
        if not verdict.rewritten and not verdict.context:
            return update
        text = with_context(verdict.prompt, verdict.context)
        # add_messages replaces a message with the same id.
        return {**update, "messages": [HumanMessage(content=text, id=human.id)]}

    def before_agent(self, state: HookgateState, runtime: Runtime[Any]) -> dict[str, Any] | None:
        gate = self.gate
        if not (gate.wants("session_start") or gate.wants("user_prompt_submit")):
            return {"hookgate_run_id": uuid.uuid4().hex}
        start, human, submit, update = self._prompt_start(state)
        if gate.wants("session_start"):
            gate.fire_sync("session_start", start)
        if human is None or not gate.wants("user_prompt_submit"):
            return update
        outcome = gate.fire_sync("user_prompt_submit", submit)
        return self._prompt_update(human, outcome, update)

    async def abefore_agent(
        self, state: HookgateState, runtime: Runtime[Any]
    ) -> dict[str, Any] | None:
        gate = self.gate
        if not (gate.wants("session_start") or gate.wants("user_prompt_submit")):
            return {"hookgate_run_id": uuid.uuid4().hex}
        start, human, submit, update = self._prompt_start(state)
        if gate.wants("session_start"):
            await gate.fire("session_start", start)
        if human is None or not gate.wants("user_prompt_submit"):
            return update
        outcome = await gate.fire("user_prompt_submit", submit)
        return self._prompt_update(human, outcome, update)

    def _stop_payload(self, state: HookgateState) -> dict[str, Any]:
        messages = state["messages"]
        last = messages[-1].text if messages else ""
        ids = _current_ids(self.agent_name, state)
        return {**ids, "last_message": last, "stop_reason": "end"}

    def after_agent(self, state: HookgateState, runtime: Runtime[Any]) -> dict[str, Any] | None:
        if self.gate.wants("stop"):
            self.gate.fire_sync("stop", self._stop_payload(state))
        return None

    async def aafter_agent(
        self, state: HookgateState, runtime: Runtime[Any]
    ) -> dict[str, Any] | None:
        if self.gate.wants("stop"):
            await self.gate.fire("stop", self._stop_payload(state))
        return None

    # -- the model call: before_llm, after_llm --------------------------------------------

    def _apply_before(
        self, request: ModelRequest[Any], view: dict[str, Any], outcome: Outcome
    ) -> ModelRequest[Any]:
        updated, context = llm_verdict("before_llm", outcome)
        system = system_rewrite(view, updated)
        if system is None and not context:
            return request
        base = request.system_prompt if system is None else system
        return request.override(system_message=SystemMessage(with_context(base or "", context)))

    def _after_payload(
        self, view: dict[str, Any], response: ModelResponse[Any] | AIMessage, state: Any
    ) -> tuple[dict[str, Any], AIMessage | None]:
        message = _ai_message(response)
        calls = [
            {"name": c["name"], "args": c["args"], "id": c.get("id")}
            for c in (message.tool_calls if message is not None else [])
        ]
        text = message.text if message is not None else ""
        payload = {**_current_ids(self.agent_name, state), "request": view}
        payload["response"] = response_view(text, calls)
        return payload, message

    def _apply_after(
        self,
        response: ModelResponse[Any] | AIMessage,
        payload: dict[str, Any],
        message: AIMessage | None,
        outcome: Outcome,
    ) -> ModelResponse[Any] | AIMessage:
        updated, context = llm_verdict("after_llm", outcome)
        text = text_rewrite(payload["response"], updated)
        if message is None or (text is None and not context):
            return response
        base = message.text if text is None else text
        return _rewritten_response(response, message, with_context(base, context))

    def wrap_model_call(
        self, request: ModelRequest[Any], handler: ModelHandler
    ) -> ModelResponse[Any] | AIMessage:
        gate = self.gate
        before, after = gate.wants("before_llm"), gate.wants("after_llm")
        if not (before or after):
            return handler(request)
        view = _request_view(request)
        if before:
            ids = _current_ids(self.agent_name, request.state)
            outcome = gate.fire_sync("before_llm", {**ids, "request": view})
            request = self._apply_before(request, view, outcome)
        response = handler(request)
        if not after:
            return response
        payload, message = self._after_payload(view, response, request.state)
        return self._apply_after(response, payload, message, gate.fire_sync("after_llm", payload))

    async def awrap_model_call(
        self, request: ModelRequest[Any], handler: AsyncModelHandler
    ) -> ModelResponse[Any] | AIMessage:
        gate = self.gate
        before, after = gate.wants("before_llm"), gate.wants("after_llm")
        if not (before or after):
            return await handler(request)
        view = _request_view(request)
        if before:
            ids = _current_ids(self.agent_name, request.state)
            outcome = await gate.fire("before_llm", {**ids, "request": view})
            request = self._apply_before(request, view, outcome)
        response = await handler(request)
        if not after:
            return response
        payload, message = self._after_payload(view, response, request.state)
        outcome = await gate.fire("after_llm", payload)
        return self._apply_after(response, payload, message, outcome)

    # -- tool calls: pre_tool_use, post_tool_use ------------------------------------------

    def _tool_payload(self, request: ToolCallRequest) -> dict[str, Any]:
        call = request.tool_call
        runtime = request.runtime
        config = getattr(runtime, "config", None) if runtime is not None else None
        return {
            **_ids(config, self.agent_name, request.state),
            "tool_name": call["name"],
            "tool_input": dict(call.get("args") or {}),
            "tool_use_id": call.get("id"),
        }

    @staticmethod
    def _refusal(request: ToolCallRequest, verdict: ToolVerdict) -> ToolMessage:
        call = request.tool_call
        return ToolMessage(
            content=verdict.text(),
            tool_call_id=call.get("id") or "",
            name=call["name"],
            status="error" if verdict.action == "block" else "success",
        )

    @staticmethod
    def _to_run(request: ToolCallRequest, verdict: ToolVerdict) -> ToolCallRequest:
        if verdict.args == request.tool_call.get("args"):
            return request
        return request.override(tool_call={**request.tool_call, "args": verdict.args})

    @staticmethod
    def _finish(
        result: ToolMessage | Command[Any], verdict: ToolVerdict, after: OutputVerdict | None
    ) -> ToolMessage | Command[Any]:
        if not isinstance(result, ToolMessage):
            return result
        rewritten = after is not None and after.rewritten
        context = verdict.context + after.context if after is not None else verdict.context
        if not rewritten and not context:
            return result
        content = as_text(after.output) if after is not None and rewritten else result.content
        if isinstance(content, str):
            content = with_context(content, context)
        elif context:
            content = [*content, *context]
        return result.model_copy(update={"content": content})

    def wrap_tool_call(
        self, request: ToolCallRequest, handler: ToolHandler
    ) -> ToolMessage | Command[Any]:
        gate = self.gate
        before, after_wanted = gate.wants("pre_tool_use"), gate.wants("post_tool_use")
        if not (before or after_wanted):
            return handler(request)
        try:
            payload = self._tool_payload(request)
        except Exception as exc:
            return self._refusal(request, refused(exc))
        verdict = before_tool_sync(gate, payload) if before else _as_called(payload)
        if not verdict.runs:
            return self._refusal(request, verdict)
        result = handler(self._to_run(request, verdict))
        after = None
        if after_wanted and isinstance(result, ToolMessage):
            payload["tool_input"] = verdict.args
            after = after_tool_sync(gate, payload, result.content)
        return self._finish(result, verdict, after)

    async def awrap_tool_call(
        self, request: ToolCallRequest, handler: AsyncToolHandler
    ) -> ToolMessage | Command[Any]:
        gate = self.gate
        before, after_wanted = gate.wants("pre_tool_use"), gate.wants("post_tool_use")
        if not (before or after_wanted):
            return await handler(request)
        try:
            payload = self._tool_payload(request)
        except Exception as exc:
            return self._refusal(request, refused(exc))
        verdict = await before_tool(gate, payload) if before else _as_called(payload)
        if not verdict.runs:
            return self._refusal(request, verdict)
        result = await handler(self._to_run(request, verdict))
        after = None
        if after_wanted and isinstance(result, ToolMessage):
            payload["tool_input"] = verdict.args
            after = await after_tool(gate, payload, result.content)
        return self._finish(result, verdict, after)
