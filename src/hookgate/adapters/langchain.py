"""hookgate inside LangChain v1 agents (``langchain.agents.create_agent``).

    from hookgate.adapters.langchain import HookgateMiddleware
    agent = create_agent(model, tools, middleware=[HookgateMiddleware(engine)])

``HookgateMiddleware`` takes a :class:`hookgate.Engine` or a gateway client
(:class:`~hookgate.client.GatewayClient` for ``invoke``, either client for ``ainvoke``). Both
the sync and the async middleware paths are implemented, so ``invoke`` and ``ainvoke`` run the
same hooks. A ``before_agent`` or ``after_agent`` hook would cost LangChain a graph step of
its own per invocation, so the middleware has neither: the start of a run is taken at its first
model call, its end at the model answer (or ``return_direct`` tool call) that ends it.

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
block / rewrite the prompt  native     the first ``wrap_model_call`` of an invocation
                                       (nothing reaches the model before it): a block
                                       raises ``HookgateAbort`` before the model call; a
                                       rewrite is what the model reads and, through the
                                       call's ``ExtendedModelResponse`` command, replaces
                                       the human message in the state (same id)
before_llm / after_llm      native     ``wrap_model_call``; rewrites: ``system`` of the
                                       request, ``text`` of the response
sub-agent start / stop      impossible LangChain has no sub-agent boundary (sub-agents are
                                       tools: ``pre/post_tool_use`` see them)
session start / stop        native     the first model call of an invocation / the
                                       model answer without tool calls (or the
                                       ``return_direct`` tool call) that ends it
==========================  =========  ====================================================

Payloads carry ``tool_use_id`` (the tool call id), ``session_id`` (the thread id),
``turn_id`` (the config's ``run_id``, else an id per invocation kept in the agent's
state, not checkpointed) and ``agent_id`` (the agent's ``name``).

LangChain wraps every middleware hook in LangSmith's ``traceable``, tracing on or off. Its
wrapper of an ``async def`` hook starts and ends the span on a thread of the event loop's
executor, two thread hops per call; so ``awrap_model_call`` and ``awrap_tool_call`` are
plain functions that return the coroutine LangChain awaits, which the wrapper handles in
place. With tracing on, such a span would end before its hook runs, so a middleware made
while LangSmith tracing is on (``LANGSMITH_TRACING=true``, or inside ``tracing_context``)
keeps ``async def`` hooks, whose spans time them and hold the model's and the tool's spans.
One made with tracing off and then traced shows those two spans as instantaneous, with the
model's and the tool's spans beside them instead of inside; nothing else changes.
"""

from __future__ import annotations

import inspect
import uuid
from collections.abc import Awaitable, Callable, Coroutine
from typing import Annotated, Any, NotRequired

from langchain.agents.middleware.types import (
    AgentMiddleware,
    AgentState,
    ExtendedModelResponse,
    ModelCallResult,
    ModelRequest,
    ModelResponse,
    PrivateStateAttr,
)
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)
from langgraph.channels.untracked_value import UntrackedValue
from langgraph.config import get_config
from langgraph.prebuilt.tool_node import ToolCallRequest
from langgraph.types import Command
from langsmith.utils import tracing_is_enabled

from hookgate.adapters._gate import Gate, Target, failed_closed
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


class _RunStart:
    """An invocation starting at its first model call: its run id, the payload ids, the
    prompt's message, and the state update the model call returns."""

    __slots__ = ("human", "ids", "run_id", "update")

    def __init__(self, run_id: str, ids: dict[str, Any], human: HumanMessage | None) -> None:
        self.run_id = run_id
        self.ids = ids
        self.human = human
        self.update: dict[str, Any] = {"hookgate_run_id": run_id}

    def extended(self, response: ModelResponse[Any] | AIMessage) -> ExtendedModelResponse[Any]:
        """The response with the state update (the run id, a rewritten prompt)."""
        if isinstance(response, AIMessage):
            response = ModelResponse(result=[response])
        return ExtendedModelResponse(model_response=response, command=Command(update=self.update))


class HookgateMiddleware(AgentMiddleware[HookgateState, Any, Any]):
    """Runs hookgate's hooks at every point of a LangChain v1 agent run."""

    state_schema = HookgateState

    def __new__(cls, *args: Any, **kwargs: Any) -> HookgateMiddleware:
        # With LangSmith tracing on, the async hooks are coroutine functions, so that their
        # spans time them and hold the model's and the tool's spans (see awrap_model_call).
        if cls is HookgateMiddleware and tracing_is_enabled():
            cls = _TracedHookgateMiddleware
        return super().__new__(cls)

    def __init__(self, target: Target | Gate, *, agent_name: str | None = None) -> None:
        super().__init__()
        self.gate = Gate(target)
        self.agent_name = agent_name

    @property
    def name(self) -> str:
        return "HookgateMiddleware"

    # -- the run: session_start + user_prompt_submit at its first model call, stop ---------
    # LangChain runs a before_agent hook as a graph step of its own, the largest share of a
    # middleware's cost; the first model call of an invocation is the same point (nothing
    # reaches the model before it), without that step.

    def _start(self, request: ModelRequest[Any]) -> _RunStart | None:
        """The start of an invocation at its first model call (None at later calls: the
        run id is in the state then)."""
        state = request.state
        if isinstance(state, dict) and state.get("hookgate_run_id"):
            return None
        run_id = uuid.uuid4().hex
        messages = request.messages
        # The prompt: a human message the model is about to answer (not one already
        # answered, as when a run resumes after an interrupt).
        last = messages[-1] if messages else None
        human = last if isinstance(last, HumanMessage) else None
        ids = _current_ids(self.agent_name, {"hookgate_run_id": run_id})
        return _RunStart(run_id, ids, human)

    @staticmethod
    def _started(
        request: ModelRequest[Any], start: _RunStart, outcome: Outcome | None
    ) -> tuple[ModelRequest[Any], dict[str, Any]]:
        """The request with the prompt's verdict applied, and the state update to return."""
        update: dict[str, Any] = {"hookgate_run_id": start.run_id}
        human = start.human
        if human is None or outcome is None:
            return request, update
        verdict = prompt_verdict(outcome, human.text)  # raises on a block
        if not verdict.rewritten and not verdict.context:
            return request, update
        new = HumanMessage(content=with_context(verdict.prompt, verdict.context), id=human.id)
        # This call reads the new prompt; add_messages replaces the state's message with the
        # same id, so later calls and the history keep it.
        request = request.override(messages=[*request.messages[:-1], new])
        return request, {**update, "messages": [new]}

    def _start_sync(self, request: ModelRequest[Any], start: _RunStart) -> ModelRequest[Any]:
        gate, human = self.gate, start.human
        prompt = human.text if human is not None else ""
        if gate.wants("session_start"):
            gate.fire_sync("session_start", {**start.ids, "source": SOURCE, "prompt": prompt})
        outcome = None
        if human is not None and gate.wants("user_prompt_submit"):
            outcome = gate.fire_sync("user_prompt_submit", {**start.ids, "prompt": prompt})
        request, start.update = self._started(request, start, outcome)
        return request

    async def _start_async(self, request: ModelRequest[Any], start: _RunStart) -> ModelRequest[Any]:
        gate, human = self.gate, start.human
        prompt = human.text if human is not None else ""
        if gate.wants("session_start"):
            await gate.fire("session_start", {**start.ids, "source": SOURCE, "prompt": prompt})
        outcome = None
        if human is not None and gate.wants("user_prompt_submit"):
            outcome = await gate.fire("user_prompt_submit", {**start.ids, "prompt": prompt})
        request, start.update = self._started(request, start, outcome)
        return request

    # A run ends where LangChain's own routing ends it: at a model answer without tool calls
    # (or with a structured response), or after tool calls that all go to return_direct tools.
    # stop is fired there, inside the model or tool call, not in an after_agent graph step.
    # (A run that another middleware ends by jumping to "end" fires no stop; see the docs.)

    @staticmethod
    def _final(response: ModelResponse[Any] | AIMessage) -> AIMessage | None:
        """The answer when ``response`` ends the run, else None."""
        message = _ai_message(response)
        if message is None:
            return AIMessage(content="")
        if not message.tool_calls:
            return message
        if isinstance(response, AIMessage) or response.structured_response is None:
            return None
        answered = {m.tool_call_id for m in response.result if isinstance(m, ToolMessage)}
        if all(call.get("id") in answered for call in message.tool_calls):
            return message
        return None

    def _stop_payload(self, text: str, state: Any) -> dict[str, Any]:
        ids = _current_ids(self.agent_name, state)
        return {**ids, "last_message": text, "stop_reason": "end"}

    @staticmethod
    def _ends_with_tool(request: ToolCallRequest) -> bool:
        """Whether the run ends after this tool call: every call of the model's message goes
        to a ``return_direct`` tool, and this is the message's last call (so the run's stop
        is fired once, however many calls it made)."""
        tool = request.tool
        if tool is None or not getattr(tool, "return_direct", False):
            return False
        state = request.state
        messages = state.get("messages") if isinstance(state, dict) else None
        message = _ai_message(ModelResponse(result=list(messages or [])))
        if message is None or not message.tool_calls:
            return False
        # The tool node gives every call the agent's tools (a ToolNode without them: this
        # tool's own name is all that is known).
        tools = getattr(request.runtime, "tools", None) or [tool]
        direct = {t.name for t in tools if getattr(t, "return_direct", False)}
        calls = message.tool_calls
        return calls[-1].get("id") == request.tool_call.get("id") and all(
            call["name"] in direct for call in calls
        )

    # stop is non-blocking: a failure to build its payload is logged, never the run's end.

    def _model_stop_payload(
        self,
        request: ModelRequest[Any],
        response: ModelResponse[Any] | AIMessage,
        start: _RunStart | None,
    ) -> dict[str, Any] | None:
        if not self.gate.wants("stop"):
            return None
        try:
            final = self._final(response)
            if final is None:
                return None
            state = request.state if start is None else start.update
            return self._stop_payload(final.text, state)
        except Exception as exc:
            failed_closed("stop", exc)
            return None

    def _tool_stop_payload(
        self, request: ToolCallRequest, result: ToolMessage | Command[Any]
    ) -> dict[str, Any] | None:
        if not self.gate.wants("stop"):
            return None
        try:
            if not self._ends_with_tool(request):
                return None
            text = result.text if isinstance(result, ToolMessage) else ""
            return self._stop_payload(text, request.state)
        except Exception as exc:
            failed_closed("stop", exc)
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
    ) -> ModelCallResult[Any]:
        start = self._start(request)
        if start is not None:
            request = self._start_sync(request, start)
        response = self._model_call(request, handler, start)
        stop = self._model_stop_payload(request, response, start)
        if stop is not None:
            self.gate.fire_sync("stop", stop)
        return response if start is None else start.extended(response)

    def _model_call(
        self, request: ModelRequest[Any], handler: ModelHandler, start: _RunStart | None
    ) -> ModelResponse[Any] | AIMessage:
        gate = self.gate
        before, after = gate.wants("before_llm"), gate.wants("after_llm")
        if not (before or after):
            return handler(request)
        state = request.state if start is None else start.update
        view = _request_view(request)
        if before:
            ids = _current_ids(self.agent_name, state)
            outcome = gate.fire_sync("before_llm", {**ids, "request": view})
            request = self._apply_before(request, view, outcome)
        response = handler(request)
        if not after:
            return response
        payload, message = self._after_payload(view, response, state)
        return self._apply_after(response, payload, message, gate.fire_sync("after_llm", payload))

    # The async hooks are plain functions that return the coroutine LangChain awaits, not
    # ``async def``: LangChain wraps each middleware hook in LangSmith's ``traceable``, whose
    # wrapper of a coroutine function starts and ends the span on a thread of the loop's
    # executor (two thread hops and a task per call, tracing on or off); for a plain function
    # it does both in place. The price, with tracing on: the span ends when the coroutine is
    # made, before it runs. So a middleware made while tracing is on is a
    # _TracedHookgateMiddleware, whose async hooks are coroutine functions.

    def awrap_model_call(
        self, request: ModelRequest[Any], handler: AsyncModelHandler
    ) -> Coroutine[Any, Any, ModelCallResult[Any]]:
        return self._awrap_model_call(request, handler)

    async def _awrap_model_call(
        self, request: ModelRequest[Any], handler: AsyncModelHandler
    ) -> ModelCallResult[Any]:
        start = self._start(request)
        if start is not None:
            request = await self._start_async(request, start)
        response = await self._amodel_call(request, handler, start)
        stop = self._model_stop_payload(request, response, start)
        if stop is not None:
            await self.gate.fire("stop", stop)
        return response if start is None else start.extended(response)

    async def _amodel_call(
        self, request: ModelRequest[Any], handler: AsyncModelHandler, start: _RunStart | None
    ) -> ModelResponse[Any] | AIMessage:
        gate = self.gate
        before, after = gate.wants("before_llm"), gate.wants("after_llm")
        if not (before or after):
            return await handler(request)
        state = request.state if start is None else start.update
        view = _request_view(request)
        if before:
            ids = _current_ids(self.agent_name, state)
            outcome = await gate.fire("before_llm", {**ids, "request": view})
            request = self._apply_before(request, view, outcome)
        response = await handler(request)
        if not after:
            return response
        payload, message = self._after_payload(view, response, state)
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
        update: dict[str, Any] = {"content": content}
        if after is not None and after.withheld:
            update["status"] = "error"
            update["artifact"] = None  # the tool's raw output must not travel on either
        return result.model_copy(update=update)

    def wrap_tool_call(
        self, request: ToolCallRequest, handler: ToolHandler
    ) -> ToolMessage | Command[Any]:
        result = self._tool_call(request, handler)
        stop = self._tool_stop_payload(request, result)
        if stop is not None:
            self.gate.fire_sync("stop", stop)
        return result

    def _tool_call(
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

    def awrap_tool_call(
        self, request: ToolCallRequest, handler: AsyncToolHandler
    ) -> Coroutine[Any, Any, ToolMessage | Command[Any]]:
        return self._awrap_tool_call(request, handler)  # not async def: see awrap_model_call

    async def _awrap_tool_call(
        self, request: ToolCallRequest, handler: AsyncToolHandler
    ) -> ToolMessage | Command[Any]:
        result = await self._atool_call(request, handler)
        stop = self._tool_stop_payload(request, result)
        if stop is not None:
            await self.gate.fire("stop", stop)
        return result

    async def _atool_call(
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


class _TracedHookgateMiddleware(HookgateMiddleware):
    """The middleware for a process that traces to LangSmith: its async hooks are coroutine
    functions, so each one's span lasts as long as the hook and holds what it calls."""

    async def awrap_model_call(
        self, request: ModelRequest[Any], handler: AsyncModelHandler
    ) -> ModelCallResult[Any]:
        return await self._awrap_model_call(request, handler)

    async def awrap_tool_call(
        self, request: ToolCallRequest, handler: AsyncToolHandler
    ) -> ToolMessage | Command[Any]:
        return await self._awrap_tool_call(request, handler)


def _keep_signatures(cls: type[AgentMiddleware[Any, Any, Any]]) -> None:
    """LangSmith's ``traceable`` wrapper reads the hook's signature at every call
    (``inspect.signature``, some tens of µs); one stored on the function is a lookup."""
    for name in ("wrap_model_call", "awrap_model_call", "wrap_tool_call", "awrap_tool_call"):
        function = cls.__dict__.get(name)
        if function is not None:
            function.__signature__ = inspect.signature(function)


_keep_signatures(HookgateMiddleware)
_keep_signatures(_TracedHookgateMiddleware)
