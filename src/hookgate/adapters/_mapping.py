"""From an :class:`~hookgate.outcome.Outcome` to what an adapter does, the same for every
framework: run the tool (maybe with rewritten arguments), refuse it with a reason, answer for
it, or stop the run.

Each ``*_verdict`` function raises :class:`HookgateAbort` when the run must stop; every other
error while reading an outcome becomes a block (the callers catch it), never a silent allow.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from hookgate.adapters._gate import Gate, failed_closed
from hookgate.errors import HookgateError
from hookgate.log import log_event
from hookgate.outcome import Outcome
from hookgate.tool_output import POST_TOOL_STAGE, output_check

__all__ = [
    "HookgateAbort",
    "ToolVerdict",
    "after_tool",
    "after_tool_sync",
    "as_text",
    "before_tool",
    "before_tool_sync",
    "check_abort",
    "drop_none",
    "output_after",
    "prompt_verdict",
    "refused",
    "tool_verdict",
    "with_context",
]


class HookgateAbort(HookgateError):
    """A hook stopped the agent run.

    Raised out of the framework's run when a hook answers ``abort`` (``turn``/``hard``) or
    ``continue: false``, and where the only way to refuse something is to end the run (a
    blocked prompt, a blocked model call). ``event`` names the event, ``reason`` the hook's.
    """

    def __init__(self, event: str, reason: str | None, *, hard: bool = False) -> None:
        self.event = event
        self.reason = reason or f"stopped by a hook on {event}"
        self.hard = hard
        super().__init__(f"{event}: {self.reason}")


def drop_none(payload: Mapping[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in payload.items() if value is not None}


def as_text(value: Any) -> str:
    """A hook's value as the text a model reads."""
    if isinstance(value, str):
        return value
    return json.dumps(value, default=str, ensure_ascii=False)


def with_context(text: str, context: list[str]) -> str:
    """``text`` followed by the hooks' additional context, one item per line."""
    if not context:
        return text
    return "\n\n".join([text, *context]) if text else "\n\n".join(context)


def check_abort(event: str, outcome: Outcome) -> None:
    """Raise :class:`HookgateAbort` when the outcome ends the run."""
    if outcome.abort is not None or not outcome.continue_:
        raise HookgateAbort(event, outcome.reason, hard=outcome.abort == "hard")


@dataclass(slots=True)
class ToolVerdict:
    """What to do with one tool call.

    ``run``: run it with ``args``. ``block``: do not run it; the model reads ``message`` (the
    reason). ``respond``: do not run it; the model reads ``message`` (the synthetic result,
    kept raw in ``result``). ``context`` is appended to what the model reads either way.
    """

    action: Literal["run", "block", "respond"]
    args: dict[str, Any]
    message: str = ""
    result: Any = None
    context: list[str] = field(default_factory=list)

    @property
    def runs(self) -> bool:
        return self.action == "run"

    def text(self) -> str:
        """What the model reads instead of the tool's output (block or respond)."""
        return with_context(self.message, self.context)


def tool_verdict(outcome: Outcome, args: Mapping[str, Any]) -> ToolVerdict:
    """Map a ``pre_tool_use`` outcome; raises on an abort or on a malformed rewrite."""
    check_abort("pre_tool_use", outcome)
    context = list(outcome.additional_context)
    if outcome.blocked:
        reason = outcome.reason or "blocked by a hook"
        return ToolVerdict("block", dict(args), f"Blocked by hookgate: {reason}", None, context)
    if outcome.result is not None:
        return ToolVerdict("respond", dict(args), as_text(outcome.result), outcome.result, context)
    if outcome.updated_input is not None:
        if not isinstance(outcome.updated_input, Mapping):
            raise TypeError("updated_input for a tool call must be an object of arguments")
        return ToolVerdict("run", dict(outcome.updated_input), context=context)
    return ToolVerdict("run", dict(args), context=context)


def refused(exc: Exception, args: Mapping[str, Any] | None = None) -> ToolVerdict:
    """The verdict when the adapter itself failed on a tool call: a block, never a run."""
    outcome = failed_closed("pre_tool_use", exc)
    return ToolVerdict("block", dict(args or {}), f"Blocked by hookgate: {outcome.reason}")


async def before_tool(gate: Gate, payload: Mapping[str, Any]) -> ToolVerdict:
    """Fire ``pre_tool_use`` and map it. Never lets a failure through as ``run``."""
    args = payload.get("tool_input") or {}
    outcome = await gate.fire("pre_tool_use", payload)
    try:
        return tool_verdict(outcome, args)
    except HookgateAbort:
        raise
    except Exception as exc:
        return refused(exc, args)


def before_tool_sync(gate: Gate, payload: Mapping[str, Any]) -> ToolVerdict:
    args = payload.get("tool_input") or {}
    outcome = gate.fire_sync("pre_tool_use", payload)
    try:
        return tool_verdict(outcome, args)
    except HookgateAbort:
        raise
    except Exception as exc:
        return refused(exc, args)


@dataclass(slots=True)
class OutputVerdict:
    """What the model reads after a tool ran: ``output`` (maybe rewritten, or the withheld
    notice) plus ``context``. ``withheld``: a hook blocked the output (the tool's own output
    must not reach the model)."""

    output: Any
    rewritten: bool
    context: list[str]
    withheld: bool = False


def output_after(outcome: Outcome, output: Any) -> OutputVerdict:
    """Map ``post_tool_use`` (fired as the synchronous stage, see :mod:`hookgate.tool_output`):
    raises :class:`HookgateAbort` on an abort; a block withholds the output."""
    check = output_check(outcome)
    if check.action == "stop":
        raise HookgateAbort("post_tool_use", check.reason, hard=check.hard)
    if check.action == "withhold":
        return OutputVerdict(check.text(), True, check.context, withheld=True)
    if check.action == "rewrite":
        return OutputVerdict(check.output, True, check.context)
    return OutputVerdict(output, False, check.context)


async def after_tool(gate: Gate, payload: Mapping[str, Any], output: Any) -> OutputVerdict:
    """Fire ``post_tool_use`` as the synchronous stage and wait for it, so its block, abort,
    rewrite and context can be applied; a failure withholds the output."""
    outcome = await gate.fire(POST_TOOL_STAGE, {**payload, "tool_response": output}, wait=True)
    return output_after(outcome, output)


def after_tool_sync(gate: Gate, payload: Mapping[str, Any], output: Any) -> OutputVerdict:
    outcome = gate.fire_sync(POST_TOOL_STAGE, {**payload, "tool_response": output}, wait=True)
    return output_after(outcome, output)


@dataclass(slots=True)
class PromptVerdict:
    prompt: str
    rewritten: bool
    context: list[str]


def prompt_verdict(outcome: Outcome, prompt: str) -> PromptVerdict:
    """Map ``user_prompt_submit``: a block ends the run before any model call."""
    check_abort("user_prompt_submit", outcome)
    if outcome.blocked:
        raise HookgateAbort("user_prompt_submit", outcome.reason)
    context = list(outcome.additional_context)
    if outcome.updated_input is not None:
        if not isinstance(outcome.updated_input, str):
            log_event(
                "hookgate.adapter.malformed_rewrite",
                level=logging.ERROR,
                hook_event="user_prompt_submit",
            )
            raise HookgateAbort("user_prompt_submit", "updated_input for a prompt must be a string")
        return PromptVerdict(outcome.updated_input, True, context)
    return PromptVerdict(prompt, False, context)


def llm_verdict(event: str, outcome: Outcome) -> tuple[Any, list[str]]:
    """Map ``before_llm``/``after_llm``: a block stops the run (the model call cannot be
    refused on its own); returns the rewrite (or None) and the context."""
    check_abort(event, outcome)
    if outcome.blocked:
        raise HookgateAbort(event, outcome.reason)
    return outcome.updated_input, list(outcome.additional_context)


def request_view(
    *, model: str | None, system: str | None, messages: list[dict[str, Any]], tools: list[str]
) -> dict[str, Any]:
    """The ``request`` field of ``before_llm``, in one shape for every framework."""
    return {"model": model, "system": system, "messages": messages, "tools": tools}


def system_rewrite(view: Mapping[str, Any], updated: Any) -> str | None:
    """The new system prompt a ``before_llm`` rewrite asks for (None: unchanged).

    Only ``system`` can be rewritten through every framework; a rewrite of anything else
    stops the run rather than being dropped.
    """
    if updated is None:
        return None
    if not isinstance(updated, Mapping):
        raise HookgateAbort("before_llm", "updated_input for before_llm must be a request object")
    for key, value in updated.items():
        if key != "system" and value != view.get(key):
            raise HookgateAbort(
                "before_llm", f"the adapter cannot apply a rewrite of the request's {key!r}"
            )
    new = updated.get("system", view.get("system"))
    if new == view.get("system"):
        return None
    if not isinstance(new, str):
        raise HookgateAbort("before_llm", "the rewritten 'system' must be a string")
    return new


def response_view(text: str, tool_calls: list[dict[str, Any]]) -> dict[str, Any]:
    """The ``response`` field of ``after_llm``."""
    return {"text": text, "tool_calls": tool_calls}


def text_rewrite(view: Mapping[str, Any], updated: Any) -> str | None:
    """The new response text an ``after_llm`` rewrite asks for (None: unchanged).

    A string replaces the text; an object may change ``text`` only (changing the tool calls
    stops the run rather than being dropped).
    """
    if updated is None:
        return None
    if isinstance(updated, str):
        return updated
    if not isinstance(updated, Mapping):
        raise HookgateAbort("after_llm", "updated_input for after_llm must be text or an object")
    if "tool_calls" in updated and updated["tool_calls"] != view.get("tool_calls"):
        raise HookgateAbort("after_llm", "the adapter cannot apply a rewrite of the tool calls")
    new = updated.get("text", view.get("text"))
    if not isinstance(new, str):
        raise HookgateAbort("after_llm", "the rewritten 'text' must be a string")
    return None if new == view.get("text") else new
