"""What a live dispatch keeps of each hook that calls out, so replay need not call it.

A hook whose handler calls out (``http``, ``prompt``, ``agent``, ``command``, ``process``,
``quality_gate``) is slow, costs money or reaches other systems; replay answers for it from
its recorded reply instead (unless ``--live``). The chain's fold keeps the raw reply on the
hook's trace row (:attr:`hookgate.outcome.TraceRow.answer`); the dispatch record carries it,
and the audit writer turns it into JSON here and seals it with the input (``detail``, bound
to the dispatch id): never in a readable column, since an answer may echo the input.

A recorded reply is one of ``{"answer": …}`` (``null``: it abstained), ``{"error": text,
"kind": "HookError" | "MalformedAnswer" | "InfrastructureError"}`` or ``{"timed_out": true}``,
with ``ms``, the time it took. One over :data:`MAX_ANSWER_BYTES` is kept as
``{"too_large": size}`` (replay then reports the dispatch as unknown).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final, NamedTuple

import orjson

from hookgate.chain import HookReply
from hookgate.errors import HookgateError
from hookgate.outcall_types import OUTCALL_TYPES
from hookgate.outcome import HookError, HookResult, InfrastructureError, MalformedAnswer

__all__ = [
    "MAX_ANSWER_BYTES",
    "OUTCALL_TYPES",
    "RecordedAnswer",
    "answers_json",
    "recorded_rows",
    "reply_from_json",
]

#: A recorded answer larger than this is not kept (a hook's rewrite of a large input).
MAX_ANSWER_BYTES: Final = 64 * 1024
_ERRORS: Final[dict[str, type[HookError]]] = {
    "HookError": HookError,
    "MalformedAnswer": MalformedAnswer,
    "InfrastructureError": InfrastructureError,
}


class RecordedAnswer(NamedTuple):
    """One outcall hook's reply in a dispatch, as the dispatch record carries it."""

    hook_name: str
    handler_type: str
    reply: HookReply


def recorded_rows(rows: Sequence[Any] | None) -> tuple[RecordedAnswer, ...]:
    """The replies the chain's trace rows kept (outcall hooks only; none for most chains)."""
    if not rows:
        return ()
    found = []
    for row in rows:
        reply = getattr(row, "answer", None)
        if reply is not None:
            definition = row.hook.definition
            found.append(RecordedAnswer(definition.name, definition.handler_type, reply))
    return tuple(found)


def _answer_value(answer: Any) -> Any:
    if isinstance(answer, HookResult):
        value: dict[str, Any] = {"decision": answer.decision, "reason": answer.reason}
        if answer.updated_input is not None:
            value["updated_input"] = answer.updated_input
        if answer.additional_context:
            value["additional_context"] = list(answer.additional_context)
        if answer.result is not None:
            value["result"] = answer.result
        if answer.abort is not None:
            value["abort"] = answer.abort
        if not answer.continue_:
            value["continue"] = False
        override = answer.details.get("approval_override")
        if override:
            value["details"] = {"approval_override": override}
        return value
    return answer


def _reply_json(reply: HookReply) -> dict[str, Any]:
    answer, error, timed_out, duration = reply
    ms = round(float(duration), 3)
    if timed_out:
        return {"timed_out": True, "ms": ms}
    if error is not None:
        kind = next((n for n, c in _ERRORS.items() if type(error) is c), "HookError")
        return {"error": str(error)[:4096], "kind": kind, "ms": ms}
    return {"answer": _answer_value(answer), "ms": ms}


def answers_json(answers: Sequence[RecordedAnswer]) -> list[dict[str, Any]]:
    """The replies as JSON-ready entries ``{hook_name, handler_type, reply}``, each bounded."""
    entries = []
    for hook_name, handler_type, reply in answers:
        value = _reply_json(reply)
        try:
            size = len(orjson.dumps(value, default=str, option=orjson.OPT_NON_STR_KEYS))
        except TypeError:  # nested past orjson's bound
            size = MAX_ANSWER_BYTES + 1
        if size > MAX_ANSWER_BYTES:
            value = {"too_large": size, "ms": value.get("ms", 0.0)}
        entries.append({"hook_name": hook_name, "handler_type": handler_type, "reply": value})
    return entries


class UnusableRecording(HookgateError):
    """A recorded reply replay cannot use (too large when recorded, or not understood)."""


def reply_from_json(value: Mapping[str, Any]) -> HookReply:
    """A recorded reply as the chain gets it from a live call; raise
    :class:`UnusableRecording` when the recording cannot stand in for the call."""
    ms = value.get("ms", 0.0)
    ms = float(ms) if isinstance(ms, int | float) and not isinstance(ms, bool) else 0.0
    if value.get("timed_out") is True:
        return HookReply(None, None, True, ms)
    error = value.get("error")
    if isinstance(error, str):
        kind = _ERRORS.get(str(value.get("kind")), HookError)
        return HookReply(None, kind(error), False, ms)
    if "answer" in value:
        return HookReply(value["answer"], None, False, ms)
    if "too_large" in value:
        raise UnusableRecording(f"its answer was {value['too_large']} bytes, over the limit kept")
    raise UnusableRecording("the recording is not one replay understands")
