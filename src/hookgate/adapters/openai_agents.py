"""hookgate inside the OpenAI Agents SDK (``openai-agents``).

    from agents import RunConfig
    from hookgate.adapters.openai_agents import HookgateRunHooks, guard_tools
    agent = Agent(name="ops", tools=guard_tools([shell], engine))
    hooks = HookgateRunHooks(engine)
    config = RunConfig(call_model_input_filter=hooks.model_input_filter)
    await Runner.run(agent, "clean up", hooks=hooks, run_config=config)

The SDK's lifecycle hooks only observe, and its input guardrails run in parallel with the
agent (a tool may already have run when one trips), so tool calls are gated at the tool:
``guard_tools`` wraps each ``FunctionTool``'s ``on_invoke_tool``, the one point every call of
that tool passes through, before the function runs. ``HookgateRunHooks`` covers the run, the
model calls and handoffs; its ``model_input_filter``, given to ``RunConfig``, is the SDK's own
point for changing what a model call receives (input and instructions), where the prompt and
``before_llm`` are applied natively. Without it they are applied in ``on_llm_start``, which
can edit the input list but not the instructions.

==========================  ===========  ==================================================
outcome                     support      how
==========================  ===========  ==================================================
block a tool call           native       ``guard_tools``: the function is not called; the
                                         reason is the tool output the model reads
rewrite tool arguments      native       the function is called with the rewritten JSON
synthetic tool result       native       the result is the tool output
context for the model       native       appended to the tool output; for prompts and
                                         ``before_llm``, appended to the model input
rewrite tool output         native       ``post_tool_use`` ``updated_input`` is the output
abort the run               native       :class:`~hookgate.adapters.HookgateAbort` raised
                                         out of ``Runner.run``
block / rewrite the prompt  native       ``model_input_filter``, first model call of the
                                         run (without it: the same in ``on_llm_start``,
                                         editing the input list in place); a block raises
                                         before the model call; the SDK rebuilds each
                                         turn's input from the original prompt, so the
                                         rewrite is put back at every later model call
before_llm                  native       ``model_input_filter``: a ``system`` rewrite
                                         replaces the instructions, context is added to
                                         the input. Without the filter, ``on_llm_start``
                                         adds context but a ``system`` rewrite stops the
                                         run (the instructions cannot be replaced there)
after_llm                   workaround   ``on_llm_end`` edits the response's text parts in
                                         place
sub-agent start / stop      native       ``on_handoff`` (a block stops the run: a handoff
                                         cannot be refused) / ``on_agent_end`` of a
                                         handed-off agent
session start / stop        native       first ``on_agent_start`` / ``on_agent_end``
==========================  ===========  ==================================================

Tools that ``guard_tools`` cannot wrap (hosted tools, handoffs, MCP server tools) make it
raise ``TypeError`` rather than pass ungated. Payloads carry ``tool_use_id`` (the call id),
``turn_id`` (the run's trace id), ``session_id`` (the trace's group id) and ``agent_id``
(the agent's name).
"""

from __future__ import annotations

import copy
import json
import weakref
from collections.abc import Callable, Iterable, Mapping
from contextvars import ContextVar
from typing import Any, Final, cast

from agents import Agent, AgentsException, FunctionTool, RunContextWrapper, RunHooks, Tool
from agents.items import ModelResponse, TResponseInputItem
from agents.run_config import CallModelData, ModelInputData
from agents.tool_context import ToolContext
from agents.tracing import get_current_trace
from openai.types.responses import (
    ResponseFunctionToolCall,
    ResponseOutputMessage,
    ResponseOutputText,
)

from hookgate.adapters._gate import Gate, Target
from hookgate.adapters._mapping import (
    HookgateAbort,
    ToolVerdict,
    after_tool,
    as_text,
    before_tool,
    drop_none,
    llm_verdict,
    prompt_verdict,
    request_view,
    response_view,
    system_rewrite,
    text_rewrite,
    with_context,
)

__all__ = ["HookgateAbort", "HookgateRunHooks", "guard_tools"]

SOURCE = "openai-agents"


def _run_ids(agent_name: str | None) -> dict[str, Any]:
    trace = get_current_trace()
    trace_id = getattr(trace, "trace_id", None) if trace is not None else None
    group_id = getattr(trace, "group_id", None) if trace is not None else None
    if trace_id == "no-op":
        trace_id = None
    return drop_none({"turn_id": trace_id, "session_id": group_id, "agent_id": agent_name})


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [p.get("text", "") for p in content if isinstance(p, Mapping)]
        return "".join(str(p) for p in parts)
    return ""


def _item_view(item: Any) -> dict[str, Any]:
    if isinstance(item, Mapping):
        role = item.get("role") or item.get("type") or "item"
        return {"role": str(role), "content": _text_of(item.get("content", ""))}
    return {"role": str(getattr(item, "type", "item")), "content": ""}


class _Filtered:
    """What :meth:`HookgateRunHooks.model_input_filter` tells the ``on_llm_start`` of the
    same model call (the SDK runs it next, in tasks that see the filter's context): that the
    prompt and ``before_llm`` were done, and the prompt rewrites it made."""

    __slots__ = ("pending", "rewrites")

    def __init__(self) -> None:
        self.pending = True
        self.rewrites: dict[str, str] = {}


_FILTERED: ContextVar[_Filtered | None] = ContextVar("hookgate_model_input_filtered", default=None)

#: Items the model wrote: a user message after the last of them has not been answered yet.
_MODEL_ITEM_TYPES: Final = frozenset(
    {"function_call", "function_call_output", "reasoning", "computer_call", "custom_tool_call"}
)


def _is_user_message(item: Any) -> bool:
    return isinstance(item, dict) and item.get("role") == "user"


def _last_user_message(items: list[TResponseInputItem]) -> dict[str, Any] | None:
    for item in reversed(items):
        if _is_user_message(item):
            return cast(dict[str, Any], item)
    return None


def _copied(item: TResponseInputItem) -> TResponseInputItem:
    return cast(TResponseInputItem, dict(item)) if _is_user_message(item) else item


def _reapply(items: list[TResponseInputItem], rewrites: dict[str, str]) -> None:
    """Put the run's rewritten prompts in place of the originals (edited in place): the SDK
    rebuilds each turn's input from the run's original input, so every model call after the
    first would otherwise carry the original prompt again."""
    if not rewrites:
        return
    for item in items:
        if _is_user_message(item):
            message = cast(dict[str, Any], item)
            content = message.get("content")
            if isinstance(content, str) and content in rewrites:
                message["content"] = rewrites[content]


def _unanswered_prompt(items: list[TResponseInputItem]) -> dict[str, Any] | None:
    """The last user message, when the model has not answered it yet (the first model call
    of a run): no model output item comes after it."""
    for item in reversed(items):
        if _is_user_message(item):
            return cast(dict[str, Any], item)
        if isinstance(item, dict) and (
            item.get("role") == "assistant" or item.get("type") in _MODEL_ITEM_TYPES
        ):
            return None
    return None


class _Run:
    """What the hooks keep per run: the first agent, whether the prompt was fired, and the
    prompt rewrites to apply to every model call of the run."""

    __slots__ = ("prompted", "rewrites", "root")

    def __init__(self, root: str) -> None:
        self.root = root
        self.prompted = False
        self.rewrites: dict[str, str] = {}


#: Runs kept at most (runs that raised never reach on_agent_end; their owners are usually
#: gone with them, see _RunsByOwner).
MAX_RUNS = 4096


class _RunsByOwner:
    """Each run's :class:`_Run`, found by the run's owner object (its usage object, the one
    object every hook context of a run shares) itself, not by anything equal to it: that
    object is unhashable, a dataclass compared by value (two fresh runs' are equal), so no
    dict or ``WeakKeyDictionary`` can key on it.

    An entry holds its owner weakly and answers only for that very object while it lives: it
    cannot be mistaken for another run's, and it goes when the owner does (a run that raised
    leaves nothing behind). An owner that cannot be weakly referenced is held by its entry
    instead; past :data:`MAX_RUNS` entries the oldest are forgotten."""

    __slots__ = ("_entries",)

    def __init__(self) -> None:
        #: Slot (the owner's id) -> (the owner, as a call that returns it or ``None``; its run).
        #: The slot only says where to look: ``held() is owner`` says whether it is there.
        self._entries: dict[int, tuple[Callable[[], object], _Run]] = {}

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, owner: object) -> _Run | None:
        entry = self._entries.get(id(owner))
        if entry is None or entry[0]() is not owner:
            return None
        return entry[1]

    def add(self, owner: object, run: _Run) -> None:
        entries = self._entries
        if len(entries) >= MAX_RUNS:
            entries.pop(next(iter(entries)))
        slot = id(owner)
        held: Callable[[], object]
        try:
            held = weakref.ref(owner, lambda ref: _drop_if(entries, slot, ref))
        except TypeError:  # no weak references to it: the entry keeps it alive instead

            def held() -> object:
                return owner

        entries[slot] = (held, run)

    def pop(self, owner: object) -> _Run | None:
        run = self.get(owner)
        if run is not None:
            del self._entries[id(owner)]
        return run


def _drop_if(entries: dict[int, tuple[Callable[[], object], _Run]], slot: int, ref: object) -> None:
    """A run's owner is gone: its entry goes, unless the slot holds a newer owner's."""
    entry = entries.get(slot)
    if entry is not None and entry[0] is ref:
        del entries[slot]


class AgentsHookgateAbort(HookgateAbort, AgentsException):
    """:class:`HookgateAbort` raised from inside a tool: the SDK wraps any other exception a
    tool raises into ``UserError``, but lets its own exceptions through unchanged."""

    def __init__(self, event: str, reason: str | None, *, hard: bool = False) -> None:
        HookgateAbort.__init__(self, event, reason, hard=hard)
        self.run_data = None


def _guarded(tool: FunctionTool, gate: Gate) -> FunctionTool:
    guarded = copy.copy(tool)
    original = guarded.on_invoke_tool

    async def invoke(ctx: ToolContext[Any], args_json: str) -> Any:
        if not (gate.wants("pre_tool_use") or gate.wants("post_tool_use")):
            return await original(ctx, args_json)
        agent = getattr(ctx, "agent", None)
        payload: dict[str, Any] = {
            **_run_ids(getattr(agent, "name", None)),
            "tool_name": ctx.tool_name,
            "tool_use_id": ctx.tool_call_id,
        }
        try:
            args = json.loads(args_json) if args_json else {}
            if not isinstance(args, dict):
                raise TypeError("tool arguments are not a JSON object")
        except (ValueError, TypeError) as exc:
            return f"Blocked by hookgate: unreadable tool arguments ({type(exc).__name__})"
        payload["tool_input"] = args
        try:
            verdict = (
                await before_tool(gate, payload)
                if gate.wants("pre_tool_use")
                else ToolVerdict("run", args)
            )
        except HookgateAbort as abort:
            raise AgentsHookgateAbort(abort.event, abort.reason, hard=abort.hard) from None
        if not verdict.runs:
            return verdict.text()
        if verdict.args != args:
            args_json = json.dumps(verdict.args)
            payload["tool_input"] = verdict.args
        output = await original(ctx, args_json)
        if not gate.wants("post_tool_use"):
            return with_context(as_text(output), verdict.context) if verdict.context else output
        try:
            after = await after_tool(gate, payload, output)
        except HookgateAbort as abort:
            raise AgentsHookgateAbort(abort.event, abort.reason, hard=abort.hard) from None
        context = verdict.context + after.context
        if not after.rewritten and not context:
            return output
        return with_context(as_text(after.output), context)

    guarded.on_invoke_tool = invoke
    return guarded


def guard_tools(tools: Iterable[Tool], target: Target | Gate) -> list[Tool]:
    """Copies of ``tools`` whose every call goes through ``pre_tool_use``/``post_tool_use``.

    Raises ``TypeError`` for a tool that cannot be gated (not a ``FunctionTool``).
    """
    gate = Gate(target)
    out: list[Tool] = []
    for tool in tools:
        if not isinstance(tool, FunctionTool):
            raise TypeError(
                f"guard_tools cannot gate {type(tool).__name__} {getattr(tool, 'name', '')!r}: "
                "only FunctionTool calls pass through a point hookgate can hold"
            )
        out.append(_guarded(tool, gate))
    return out


class HookgateRunHooks(RunHooks[Any]):
    """Run, model and handoff events for ``Runner.run(..., hooks=HookgateRunHooks(engine))``.

    One instance may serve many runs at once; per-run state is keyed by the run's usage
    object, the one object every hook context of a run shares (a trace may be shared by
    several runs).
    """

    def __init__(self, target: Target | Gate) -> None:
        self.gate = Gate(target)
        self._runs = _RunsByOwner()

    def _run(self, context: Any, agent: Agent[Any]) -> tuple[_Run, bool]:
        """The run's state, and whether it was made just now."""
        owner = getattr(context, "usage", context)
        run = self._runs.get(owner)
        if run is not None:
            return run, False
        run = _Run(agent.name)
        self._runs.add(owner, run)
        return run, True

    async def on_agent_start(self, context: Any, agent: Agent[Any]) -> None:
        _, new = self._run(context, agent)
        if new and self.gate.wants("session_start"):
            await self.gate.fire("session_start", {**_run_ids(agent.name), "source": SOURCE})

    async def on_agent_end(self, context: Any, agent: Agent[Any], output: Any) -> None:
        run = self._runs.pop(getattr(context, "usage", context))
        gate = self.gate
        source = run.root if run is not None and run.root != agent.name else None
        report_handoff = source is not None and gate.wants("subagent_stop")
        if not (report_handoff or gate.wants("stop")):
            return
        ids = _run_ids(agent.name)
        last = as_text(output)
        if report_handoff:
            await gate.fire(
                "subagent_stop",
                {**ids, "source_agent": source, "target_agent": agent.name, "output": last},
            )
        if gate.wants("stop"):
            await gate.fire("stop", {**ids, "last_message": last, "stop_reason": "end"})

    async def on_handoff(
        self, context: RunContextWrapper[Any], from_agent: Agent[Any], to_agent: Agent[Any]
    ) -> None:
        if not self.gate.wants("subagent_start"):
            return
        outcome = await self.gate.fire(
            "subagent_start",
            {
                **_run_ids(from_agent.name),
                "source_agent": from_agent.name,
                "target_agent": to_agent.name,
            },
        )
        llm_verdict("subagent_start", outcome)  # a handoff cannot be refused: a block stops
        if outcome.updated_input is not None:
            raise HookgateAbort("subagent_start", "a handoff's task cannot be rewritten")

    async def _prompt(
        self, agent: Agent[Any], message: dict[str, Any] | None, rewrites: dict[str, str]
    ) -> None:
        """Fire ``user_prompt_submit`` for the prompt's message and rewrite it in place (it
        is in the list sent to the model); a rewrite is recorded in ``rewrites``."""
        if message is None or not self.gate.wants("user_prompt_submit"):
            return
        content = message.get("content")
        prompt = _text_of(content)
        outcome = await self.gate.fire(
            "user_prompt_submit", {**_run_ids(agent.name), "prompt": prompt}
        )
        verdict = prompt_verdict(outcome, prompt)
        if verdict.rewritten or verdict.context:
            message["content"] = with_context(verdict.prompt, verdict.context)
            if isinstance(content, str):
                rewrites[content] = message["content"]

    async def _before_llm(
        self, agent: Agent[Any], system: str | None, items: list[TResponseInputItem]
    ) -> tuple[str | None, list[str]]:
        """Fire ``before_llm``: the new system prompt (None: unchanged) and the context."""
        view = request_view(
            model=str(agent.model) if agent.model is not None else None,
            system=system,
            messages=[_item_view(item) for item in items],
            tools=[getattr(t, "name", type(t).__name__) for t in agent.tools],
        )
        outcome = await self.gate.fire("before_llm", {**_run_ids(agent.name), "request": view})
        updated, context_items = llm_verdict("before_llm", outcome)
        return system_rewrite(view, updated), context_items

    async def model_input_filter(self, data: CallModelData[Any]) -> ModelInputData:
        """For ``RunConfig(call_model_input_filter=hooks.model_input_filter)``: the SDK's own
        point for changing a model call's input and instructions, so the prompt and
        ``before_llm`` are applied natively there, a ``system`` rewrite included.

        The filter is not told which run it serves: it fires the prompt at a model call
        whose last user message is not answered yet (the run's first), and ``on_llm_start``
        (so pass ``hooks`` too) keeps the rewrite for the run's later model calls. Those
        calls' ``before_llm`` payloads show the prompt as the run's input has it.

        An exception here (a block, an abort) propagates out of ``Runner.run``.
        """
        filtered = _Filtered()
        _FILTERED.set(filtered)
        model_data, agent = data.model_data, data.agent
        # The user messages are copied before the prompt is rewritten in them: the SDK's
        # items may be the caller's own input.
        items = [_copied(item) for item in model_data.input]
        instructions = model_data.instructions
        await self._prompt(agent, _unanswered_prompt(items), filtered.rewrites)
        if not self.gate.wants("before_llm"):
            return ModelInputData(input=items, instructions=instructions)
        system, context_items = await self._before_llm(agent, instructions, items)
        items += [{"role": "developer", "content": text} for text in context_items]
        return ModelInputData(input=items, instructions=instructions if system is None else system)

    async def on_llm_start(
        self,
        context: RunContextWrapper[Any],
        agent: Agent[Any],
        system_prompt: str | None,
        input_items: list[TResponseInputItem],
    ) -> None:
        run, _ = self._run(context, agent)
        filtered = _FILTERED.get()
        if filtered is not None and filtered.pending:
            # model_input_filter fired the prompt and before_llm for this call already.
            filtered.pending = False
            run.prompted = True
            run.rewrites.update(filtered.rewrites)
            _reapply(input_items, run.rewrites)
            return
        if not run.prompted:
            run.prompted = True
            await self._prompt(agent, _last_user_message(input_items), run.rewrites)
        else:
            _reapply(input_items, run.rewrites)
        if not self.gate.wants("before_llm"):
            return
        system, context_items = await self._before_llm(agent, system_prompt, input_items)
        if system is not None:
            raise HookgateAbort(
                "before_llm",
                "the instructions cannot be rewritten from RunHooks.on_llm_start; pass "
                "RunConfig(call_model_input_filter=hooks.model_input_filter)",
            )
        for text in context_items:
            input_items.append({"role": "developer", "content": text})

    async def on_llm_end(
        self, context: RunContextWrapper[Any], agent: Agent[Any], response: ModelResponse
    ) -> None:
        if not self.gate.wants("after_llm"):
            return
        texts = [
            part
            for item in response.output
            if isinstance(item, ResponseOutputMessage)
            for part in item.content
            if isinstance(part, ResponseOutputText)
        ]
        calls = [
            {"name": item.name, "args": json.loads(item.arguments or "{}"), "id": item.call_id}
            for item in response.output
            if isinstance(item, ResponseFunctionToolCall)
        ]
        view = response_view("".join(part.text for part in texts), calls)
        outcome = await self.gate.fire("after_llm", {**_run_ids(agent.name), "response": view})
        updated, context_items = llm_verdict("after_llm", outcome)
        text = text_rewrite(view, updated)
        if text is not None and not texts:
            raise HookgateAbort("after_llm", "a response without text cannot take new text")
        if (text is not None or context_items) and texts:
            texts[0].text = with_context(view["text"] if text is None else text, context_items)
            for part in texts[1:]:
                part.text = ""
