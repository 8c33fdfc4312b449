"""hookgate inside Pydantic AI agents (``pydantic-ai-slim``), as a capability.

    from hookgate.adapters.pydantic_ai import HookgateCapability
    agent = Agent(model, tools=[...], capabilities=[HookgateCapability(engine)])

==========================  ===========  ==================================================
outcome                     support      how
==========================  ===========  ==================================================
block a tool call           native       ``before_tool_execute`` raises ``ToolFailed``: the
                                         model reads the reason, no retry budget is used
rewrite tool arguments      native       ``before_tool_execute`` returns the new arguments
synthetic tool result       native       ``SkipToolExecution(result)``
context for the model       native       appended to the tool result / the prompt part /
                                         the instructions (``before_llm``)
rewrite tool output         native       ``after_tool_execute`` returns the new result
abort the run               native       :class:`~hookgate.adapters.HookgateAbort` raised
                                         out of ``agent.run``
block / rewrite the prompt  native       first ``before_model_request`` of the run: the
                                         user prompt part is rewritten; a block raises
                                         before the model call
before_llm / after_llm      native       ``before_model_request`` (instructions) /
                                         ``after_model_request`` (text parts)
sub-agent start / stop      impossible   Pydantic AI delegates through tools that run
                                         another agent: ``pre/post_tool_use`` see them
session start / stop        native       ``wrap_run``
==========================  ===========  ==================================================

Payloads carry ``tool_use_id`` (the tool call id), ``turn_id`` (``ctx.run_id``),
``session_id`` (``ctx.conversation_id``) and ``agent_id`` (the agent's ``name``).

Cost: Pydantic AI calls every hook of every capability, overridden or not, each with its own
copy of the ``RunContext``, so any capability, an empty one too, costs it about 6 % of a run
with an instant model; this one adds under 1 % on top (docs/adapters.md, Performance).
Overriding fewer hooks would not make it cheaper.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from pydantic_ai import RunContext
from pydantic_ai.capabilities import AbstractCapability
from pydantic_ai.exceptions import SkipToolExecution, ToolFailed
from pydantic_ai.messages import (
    InstructionPart,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    UserPromptPart,
)
from pydantic_ai.models import ModelRequestContext
from pydantic_ai.tools import ToolDefinition

from hookgate.adapters._gate import Gate, Target
from hookgate.adapters._mapping import (
    HookgateAbort,
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

__all__ = ["HookgateAbort", "HookgateCapability"]

SOURCE = "pydantic-ai"


def _ids(ctx: RunContext[Any]) -> dict[str, Any]:
    agent = ctx.agent
    return drop_none(
        {
            "session_id": ctx.conversation_id,
            "turn_id": ctx.run_id,
            "agent_id": getattr(agent, "name", None),
        }
    )


def _prompt_part(messages: list[Any]) -> UserPromptPart | None:
    for message in reversed(messages):
        if isinstance(message, ModelRequest):
            for part in reversed(message.parts):
                if isinstance(part, UserPromptPart) and isinstance(part.content, str):
                    return part
            return None
    return None


def _message_views(messages: list[Any]) -> list[dict[str, Any]]:
    views: list[dict[str, Any]] = []
    for message in messages:
        role = "user" if isinstance(message, ModelRequest) else "assistant"
        for part in message.parts:
            content = getattr(part, "content", None)
            kind = getattr(part, "part_kind", "part")
            views.append(
                {
                    "role": role if kind in ("user-prompt", "text") else kind,
                    "content": as_text(content) if content is not None else "",
                }
            )
    return views


class HookgateCapability(AbstractCapability[Any]):
    """Runs hookgate's hooks at every point of a Pydantic AI agent run."""

    def __init__(self, target: Target | Gate) -> None:
        self.gate = Gate(target)
        # Runs whose prompt is still to be fired (one instance serves every run: a per-run
        # copy through for_run would make Pydantic AI re-extract the agent's configuration).
        self._prompt_pending: set[str | None] = set()
        # Context from pre_tool_use, appended to the result once the tool ran, by run and
        # call id (models reuse call ids across runs: a run must never get another's).
        self._contexts: dict[tuple[str | None, str], list[str]] = {}

    # -- the run ----------------------------------------------------------------------------

    async def wrap_run(self, ctx: RunContext[Any], *, handler: Any) -> Any:
        gate = self.gate
        if gate.wants("session_start"):
            prompt = ctx.prompt if isinstance(ctx.prompt, str) else None
            await gate.fire(
                "session_start", drop_none({**_ids(ctx), "source": SOURCE, "prompt": prompt})
            )
        self._prompt_pending.add(ctx.run_id)
        try:
            result = await handler()
        finally:
            self._prompt_pending.discard(ctx.run_id)
        if gate.wants("stop"):
            await gate.fire(
                "stop",
                {**_ids(ctx), "last_message": as_text(result.output), "stop_reason": "end"},
            )
        return result

    # -- the model call ---------------------------------------------------------------------

    async def _prompt(self, ctx: RunContext[Any], messages: list[Any]) -> None:
        self._prompt_pending.discard(ctx.run_id)
        if not self.gate.wants("user_prompt_submit"):
            return
        part = _prompt_part(messages)
        if part is None:
            return
        prompt = str(part.content)
        outcome = await self.gate.fire("user_prompt_submit", {**_ids(ctx), "prompt": prompt})
        verdict = prompt_verdict(outcome, prompt)
        if verdict.rewritten or verdict.context:
            # In place: the part is also the one kept in the run's history.
            part.content = with_context(verdict.prompt, verdict.context)

    async def before_model_request(
        self, ctx: RunContext[Any], request_context: ModelRequestContext
    ) -> ModelRequestContext:
        if ctx.run_id in self._prompt_pending:
            await self._prompt(ctx, request_context.messages)
        if not self.gate.wants("before_llm"):
            return request_context
        params = request_context.model_request_parameters
        parts = list(params.instruction_parts or [])
        system = "\n\n".join(part.content for part in parts) or None
        view = request_view(
            model=request_context.model.model_name,
            system=system,
            messages=_message_views(request_context.messages),
            tools=[tool.name for tool in params.function_tools],
        )
        outcome = await self.gate.fire("before_llm", {**_ids(ctx), "request": view})
        updated, context = llm_verdict("before_llm", outcome)
        new_system = system_rewrite(view, updated)
        if new_system is None and not context:
            return request_context
        if new_system is not None:
            parts = [InstructionPart(content=new_system)]
        parts += [InstructionPart(content=text) for text in context]
        params = dataclasses.replace(params, instruction_parts=parts)
        return dataclasses.replace(request_context, model_request_parameters=params)

    async def after_model_request(
        self,
        ctx: RunContext[Any],
        *,
        request_context: ModelRequestContext,
        response: ModelResponse,
    ) -> ModelResponse:
        if not self.gate.wants("after_llm"):
            return response
        texts = [part for part in response.parts if isinstance(part, TextPart)]
        calls = [
            {"name": p.tool_name, "args": p.args_as_dict(), "id": p.tool_call_id}
            for p in response.parts
            if isinstance(p, ToolCallPart)
        ]
        view = response_view("".join(part.content for part in texts), calls)
        outcome = await self.gate.fire("after_llm", {**_ids(ctx), "response": view})
        updated, context = llm_verdict("after_llm", outcome)
        text = text_rewrite(view, updated)
        if text is None and not context:
            return response
        if not texts:
            if text is not None:
                raise HookgateAbort("after_llm", "a response without text cannot take new text")
            return response
        new_text = with_context(view["text"] if text is None else text, context)
        parts: list[Any] = []
        for part in response.parts:
            if part is texts[0]:
                parts.append(dataclasses.replace(part, content=new_text))
            elif not isinstance(part, TextPart):
                parts.append(part)
        return dataclasses.replace(response, parts=parts)

    # -- tool calls -------------------------------------------------------------------------

    def _tool_payload(
        self, ctx: RunContext[Any], call: ToolCallPart, args: dict[str, Any]
    ) -> dict[str, Any]:
        return {
            **_ids(ctx),
            "tool_name": call.tool_name,
            "tool_input": args,
            "tool_use_id": call.tool_call_id,
        }

    async def before_tool_execute(
        self,
        ctx: RunContext[Any],
        *,
        call: ToolCallPart,
        tool_def: ToolDefinition,
        args: dict[str, Any],
    ) -> dict[str, Any]:
        if not self.gate.wants("pre_tool_use"):
            return args
        verdict = await before_tool(self.gate, self._tool_payload(ctx, call, args))
        if verdict.action == "block":
            raise ToolFailed(verdict.text())
        if verdict.action == "respond":
            raise SkipToolExecution(verdict.text() if verdict.context else verdict.result)
        if verdict.context:
            self._contexts[ctx.run_id, call.tool_call_id] = verdict.context
        return verdict.args

    async def on_tool_execute_error(
        self,
        ctx: RunContext[Any],
        *,
        call: ToolCallPart,
        tool_def: ToolDefinition,
        args: dict[str, Any],
        error: Exception,
    ) -> Any:
        self._contexts.pop((ctx.run_id, call.tool_call_id), None)
        if self.gate.wants("post_tool_use_failure"):
            await self.gate.fire(
                "post_tool_use_failure",
                {**self._tool_payload(ctx, call, args), "error": type(error).__name__},
            )
        raise error

    async def after_tool_execute(
        self,
        ctx: RunContext[Any],
        *,
        call: ToolCallPart,
        tool_def: ToolDefinition,
        args: dict[str, Any],
        result: Any,
    ) -> Any:
        if not self.gate.wants("post_tool_use"):
            context = self._contexts.pop((ctx.run_id, call.tool_call_id), None)
            return with_context(as_text(result), context) if context else result
        after = await after_tool(self.gate, self._tool_payload(ctx, call, args), result)
        context = self._contexts.pop((ctx.run_id, call.tool_call_id), []) + after.context
        if not context:
            return after.output
        return with_context(as_text(after.output), context)
