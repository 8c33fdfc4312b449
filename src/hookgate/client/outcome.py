"""Turn a ``hooks.dispatch`` payload back into an :class:`~hookgate.outcome.Outcome`."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from hookgate.client.errors import GatewayError
from hookgate.outcome import Outcome, TraceEntry

__all__ = ["outcome_from_payload"]


def _entry(raw: Mapping[str, Any]) -> TraceEntry:
    details = raw.get("details")
    return TraceEntry(
        hook_id=str(raw.get("hook_id", "")),
        name=str(raw.get("name") or ""),
        handler_type=str(raw.get("handler_type") or ""),
        matched=bool(raw.get("matched")),
        skipped=raw.get("skipped"),
        decision=raw.get("decision"),
        duration_ms=float(raw.get("duration_ms") or 0.0),
        error=raw.get("error"),
        breaker=str(raw.get("breaker") or "closed"),
        version=int(raw.get("version") or 0),
        details=dict(details) if isinstance(details, Mapping) else {},
        mode="shadow" if raw.get("mode") == "shadow" else "enforce",
    )


def outcome_from_payload(payload: Any) -> Outcome:
    """The outcome the gateway decided; a payload that is not one is an error, never an allow."""
    if not isinstance(payload, Mapping) or payload.get("decision") not in ("allow", "block"):
        raise GatewayError("INVALID_FRAME", f"not an outcome from the gateway: {payload!r:.200}")
    context = payload.get("additional_context") or []
    trace = payload.get("trace") or []
    abort = payload.get("abort")
    outcome = Outcome(
        decision=payload["decision"],
        reason=payload.get("reason"),
        updated_input=payload.get("updated_input"),
        additional_context=[str(c) for c in context] if isinstance(context, list) else [],
        result=payload.get("result"),
        abort=abort if abort in ("turn", "hard") else None,
        continue_=payload.get("continue") is not False,
        retry=dict(payload["retry"]) if isinstance(payload.get("retry"), Mapping) else None,
        trace=[_entry(t) for t in trace if isinstance(t, Mapping)],
    )
    outcome.explicitly_allowed = payload.get("explicitly_allowed") is True
    approval = payload.get("approval")
    if isinstance(approval, Mapping):
        outcome.approval = dict(approval)  # a person decided (or is still to decide)
    dispatch_id = payload.get("dispatch_id")
    if isinstance(dispatch_id, str) and dispatch_id:
        outcome.dispatch_id = dispatch_id  # the gateway's record of this dispatch
    return outcome
