"""The engine's audit hand-off: execution records built from a chain's rows (or from the
input guard's refusal) and handed to the audit sink and the engine's listeners; and the one
:class:`~hookgate.audit.DispatchRecord` per dispatch, handed to the sink once the dispatch
answered (after any approval), also when no hook matched.

Records are built from the outcome's rows, so the trace is never materialised for the audit.
Handing them off never fails the agent: a sink or listener that raises is logged.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable, Mapping, Sequence
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

from hookgate.audit import (
    DISPATCH_METHOD,
    AuditSink,
    DispatchRecord,
    ExecutionRecord,
    input_hash,
    summarize_input,
)
from hookgate.events import EventSpec
from hookgate.log import log_event
from hookgate.outcome import (
    Outcome,
)
from hookgate.reply_recording import recorded_rows

__all__ = [
    "INPUT_GUARD_ID",
    "RESUMED_DISPATCH",
    "DispatchContext",
    "INPUT_GUARD_NAME",
    "chain_records",
    "dispatch_record",
    "hand_off",
    "hand_off_dispatch",
    "input_refusal_record",
]

#: The hook id audit rows carry when the engine refused an event's input before any hook ran.
INPUT_GUARD_ID = "hookgate:input-limits"
#: The name those rows carry: the engine's own guard, not a hook (never "deleted").
INPUT_GUARD_NAME = "hookgate input limits"


def chain_records(
    spec: EventSpec,
    data: Mapping[str, Any],
    outcome: Outcome,
    event_id: Callable[[Mapping[str, Any]], str],
    dispatch_id: str | None = None,
) -> list[ExecutionRecord]:
    """One record per hook that ran in the chain (matched and decided), each naming the
    dispatch; ``event_id`` is asked for the event's id only when there is a record to carry
    it."""
    executed = [row for row in outcome._rows or () if row.matched and row.decision]
    if not executed:
        return []
    digest = input_hash(spec.name, data, spec.input_field)
    shared_id = event_id(data)
    trace_id = data.get("trace_id")
    tenant_id, agent_id = data.get("tenant_id"), data.get("agent_id")
    session_id = data.get("session_id")
    tool_name = data.get("tool_name")
    tool_name = tool_name[:256] if isinstance(tool_name, str) and tool_name else None
    summary = summarize_input(data.get(spec.input_field)) if spec.input_field else None
    records = []
    for row in executed:
        definition = row.hook.definition
        details = row.details
        reason = None
        metadata: dict[str, Any] = {}
        if details:
            metadata = {k: v for k, v in details.items() if k != "reason"}
            reason = details.get("reason")
        if definition.matcher not in (None, "", "*"):
            # The source selected it by its matcher, so the chain had nothing to note.
            metadata.setdefault("matcher_matched", True)
        if trace_id:
            metadata.setdefault("trace_id", trace_id)
        mode = definition.mode
        if mode == "shadow":
            metadata["mode"] = mode
        records.append(
            ExecutionRecord(
                hook_id=definition.id,
                hook_version=definition.version,
                hook_name=definition.name,
                handler_type=definition.handler_type,
                event=spec.name,
                event_id=shared_id,
                decision=row.decision or "",
                duration_ms=round(row.duration_ms, 3),
                tenant_id=tenant_id,
                agent_id=agent_id,
                session_id=session_id,
                input_hash=digest,
                error=row.error,
                metadata=metadata,
                tool_name=tool_name,
                input_summary=summary,
                reason=str(reason) if reason else None,
                dispatch_id=dispatch_id,
                mode=mode,
            )
        )
    return records


def input_refusal_record(
    spec: EventSpec,
    data: Mapping[str, Any],
    problem: str,
    *,
    blocking: bool,
    new_event_id: Callable[[], str],
    dispatch_id: str | None = None,
) -> ExecutionRecord:
    """The one record for an event whose input the payload limits refused (no hook ran)."""

    def text(name: str) -> str | None:
        return _text(data, name)

    return ExecutionRecord(
        hook_id=INPUT_GUARD_ID,
        hook_version=0,
        hook_name=INPUT_GUARD_NAME,
        handler_type="engine",
        event=spec.name,
        event_id=text("event_id") or new_event_id(),
        decision="block" if blocking else "error",
        duration_ms=0.0,
        tenant_id=text("tenant_id"),
        agent_id=text("agent_id"),
        session_id=text("session_id"),
        error=problem,
        metadata={"invalid_input": True},
        tool_name=text("tool_name"),
        dispatch_id=dispatch_id,
    )


#: The dispatch whose hooks run again on an input a person edited while approving: their
#: execution rows carry its id, and they write no dispatch record of their own.
RESUMED_DISPATCH: ContextVar[str | None] = ContextVar("hookgate_resumed_dispatch", default=None)


@dataclass(slots=True)
class DispatchContext:
    """What a dispatch's record needs once a person decided: its id, the event id its rows
    carry, its execution records and when it started (``time.perf_counter``)."""

    dispatch_id: str
    event_id: str
    executions: Sequence[ExecutionRecord]
    started: float


def _text(data: Mapping[str, Any], name: str) -> str | None:
    value = data.get(name)
    return value[:256] if isinstance(value, str) and value else None


def dispatch_record(
    spec: EventSpec,
    data: Mapping[str, Any],
    outcome: Outcome,
    *,
    event_id: str,
    executions: Sequence[ExecutionRecord],
    duration_ms: float,
    refused: str | None = None,
) -> DispatchRecord:
    """The record of one dispatch from what the engine already has (no copying, no
    encoding: the sink does that off the hot path)."""
    trace_id = data.get("trace_id")
    return DispatchRecord(
        id=outcome.dispatch_id,
        event=spec.name,
        event_id=event_id,
        decision=outcome.decision,
        duration_ms=round(duration_ms, 3),
        tenant_id=_text(data, "tenant_id"),
        agent_id=_text(data, "agent_id"),
        session_id=_text(data, "session_id"),
        tool_name=_text(data, "tool_name"),
        reason=outcome.reason,
        executions=executions,
        approval=outcome.approval,
        payload=data,
        input_field=spec.input_field,
        refused=refused,
        trace_id=str(trace_id) if trace_id else None,
        blocking=spec.blocking,
        answers=recorded_rows(outcome._rows),
    )


def keep_unmatched(sample_rate: float) -> bool:
    """Whether to keep the record of a dispatch no hook matched (sampling for volume)."""
    return sample_rate >= 1.0 or (sample_rate > 0.0 and random.random() < sample_rate)


def hand_off_dispatch(record: DispatchRecord, audit: AuditSink | None) -> None:
    """Give the dispatch record to the sink, when it keeps them; never fails the agent."""
    keep = getattr(audit, DISPATCH_METHOD, None)
    if keep is None:
        return
    try:
        keep(record)
    except Exception as exc:  # the agent must not fail because the audit log did
        log_event("security.hook.audit_write_failed", error=str(exc))


def hand_off(
    records: list[ExecutionRecord],
    audit: AuditSink | None,
    listeners: Iterable[Callable[[Sequence[ExecutionRecord]], None]],
) -> None:
    """Give ``records`` to the sink (which batches them off the hot path) and each listener."""
    if audit is not None:
        try:
            audit.record(records)
        except Exception as exc:  # the agent must not fail because the audit log did
            log_event("security.hook.audit_write_failed", error=str(exc))
    for listener in listeners:
        try:
            listener(records)
        except Exception as exc:
            log_event("hookgate.listener_failed", error=str(exc))
