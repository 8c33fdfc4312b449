"""Audit records: one :class:`ExecutionRecord` per hook execution, handed to an :class:`AuditSink`.

The engine builds records from the chain's trace after each event and passes them to the
sink without waiting (the sink batches them off the hot path). A sink in ``sync`` mode makes
``wait_durable`` return only once those records are committed. The helpers here (redaction,
truncation, input hashing, dedup keys) are shared by every store.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Protocol, runtime_checkable

import orjson

__all__ = [
    "ERROR_MAX_CHARS",
    "AuditSink",
    "DispatchRecord",
    "ExecutionRecord",
    "MemoryAudit",
    "canonical_json",
    "dedup_key",
    "input_hash",
    "new_dispatch_id",
    "redact",
    "scrub_metadata",
    "summarize_input",
    "time_ordered_id",
    "truncate",
]

ERROR_MAX_CHARS: Final = 256
#: Longest text kept in a readable metadata value (a command's stderr excerpt and the like).
METADATA_TEXT_CHARS: Final = 256

_REDACTIONS: Final = (
    # e-mail addresses; a match starts only where a run of address characters starts (the
    # lookbehind), so a long run with no "@" is scanned once, not once per character.
    re.compile(r"(?<![A-Za-z0-9._%+-])[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}"),
    re.compile(r"(?i)bearer\s+[A-Za-z0-9._~+/=-]+"),  # bearer tokens
    re.compile(r"\b(?:sk|pk|rk|hg)-[A-Za-z0-9_-]{8,}"),  # API-key shaped strings
    re.compile(r"(?i)(password|passwd|secret|token|api[_-]?key)=\S+"),
    # Well-known credential shapes, in one pass: GitHub, GitLab, Slack, AWS access key ids,
    # Stripe, Google API keys, JWTs, and PEM private key blocks.
    re.compile(
        r"\b(?:gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,}|glpat-[A-Za-z0-9_-]{20,}"
        r"|xox[abposr]-[A-Za-z0-9-]{10,}|(?:AKIA|ASIA)[A-Z0-9]{16}"
        r"|(?:sk|rk|pk)_(?:live|test)_[A-Za-z0-9]{10,}|AIza[A-Za-z0-9_-]{30,}"
        r"|eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]+)"
        r"|-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?(?:-----END [A-Z ]*PRIVATE KEY-----|$)"
    ),
)


def redact(text: str) -> str:
    """Replace e-mails, bearer tokens, key-shaped strings and well-known credential formats
    with ``[REDACTED]``; idempotent."""
    for pattern in _REDACTIONS:
        text = pattern.sub("[REDACTED]", text)
    return text


#: An input summary is redacted over at most this much text (then cut to ERROR_MAX_CHARS):
#: a prompt of megabytes is not scanned whole on the hot path, and nothing past it is kept.
_SUMMARY_SCAN_CHARS: Final = 4096
_SECRET_FIELD: Final = re.compile(r"(?i)passw|secret|token|api[_-]?key|authori[sz]ation|cookie")


def _hide_secret_fields(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {
            key: "[REDACTED]" if _SECRET_FIELD.search(str(key)) else _hide_secret_fields(item)
            for key, item in value.items()
        }
    if isinstance(value, list | tuple):
        return [_hide_secret_fields(item) for item in value]
    return value


def summarize_input(value: Any) -> str | None:
    """A short, redacted excerpt of an event's input for the audit row: text as it is, other
    values as compact JSON with secret-named fields hidden; None when there is no input."""
    if value is None or value == "" or value == {}:
        return None
    text = value if isinstance(value, str) else canonical_json(_hide_secret_fields(value))
    # Scrub the scanned text first, then cut: a secret straddling the cut is recognised.
    return truncate(redact(text[:_SUMMARY_SCAN_CHARS]).replace("\x00", ""))


def _scrub_value(value: Any) -> Any:
    if isinstance(value, str):
        # Whole text first, then cut: a secret straddling the cut is still recognised.
        return truncate(redact(value), METADATA_TEXT_CHARS)
    if isinstance(value, Mapping):
        return {key: _scrub_value(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_scrub_value(item) for item in value]
    return value


def scrub_metadata(metadata: Mapping[str, Any]) -> tuple[dict[str, Any], bool]:
    """``metadata`` with every text redacted and cut to an excerpt, for readable columns;
    and whether anything was hidden (the caller then seals the full text)."""
    clean = {key: _scrub_value(value) for key, value in metadata.items()}
    return clean, clean != metadata


def truncate(text: str, limit: int = ERROR_MAX_CHARS) -> str:
    """At most ``limit`` characters; Python strings never split a character."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


def canonical_json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


def _canonical_bytes(value: Any) -> bytes:
    try:
        return orjson.dumps(value, option=orjson.OPT_SORT_KEYS)
    except TypeError:  # a value orjson cannot encode: fall back to the slow, lenient path
        return canonical_json(value).encode()


def input_hash(event: str, payload: Mapping[str, Any], input_field: str | None) -> str:
    """SHA-256 over the tool name (if any) and the event's input, canonically encoded."""
    subject = payload.get(input_field) if input_field else None
    name = payload.get("tool_name") or event
    return hashlib.sha256(f"{name}\x00".encode() + _canonical_bytes(subject)).hexdigest()


def time_ordered_id() -> str:
    """A UUIDv7-layout id (millisecond time first, then random bits): stores index execution
    ids, and time-ordered keys append to the index instead of splitting random pages."""
    millis = time.time_ns() // 1_000_000
    rand = int.from_bytes(os.urandom(10), "big")
    value = (millis & 0xFFFF_FFFF_FFFF) << 80 | 0x7 << 76 | (rand >> 62 & 0xFFF) << 64
    digits = f"{value | 0b10 << 62 | rand & 0x3FFF_FFFF_FFFF_FFFF:032x}"
    # uuid.UUID(...) and str() cost several µs per row; the canonical layout by hand does not.
    return f"{digits[:8]}-{digits[8:12]}-{digits[12:16]}-{digits[16:20]}-{digits[20:]}"


def dedup_key(hook_id: str, event_id: str) -> str:
    """One row per (hook, event): a retried write of the same execution is a no-op."""
    return f"{hook_id}:{event_id}"


@dataclass(slots=True)
class ExecutionRecord:
    hook_id: str
    hook_version: int
    hook_name: str
    handler_type: str
    event: str
    event_id: str
    decision: str
    duration_ms: float
    tenant_id: str | None = None
    agent_id: str | None = None
    session_id: str | None = None
    input_hash: str = ""
    #: The full, unredacted error; stores redact and truncate it for ``error`` and encrypt it
    #: into ``error_detail``.
    error: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    #: The event's tool, if it has one.
    tool_name: str | None = None
    #: A redacted excerpt of the event's input (see :func:`summarize_input`).
    input_summary: str | None = None
    #: The hook's full reason; stores redact and truncate it like ``error``.
    reason: str | None = None
    id: str = field(default_factory=time_ordered_id)
    created_at: float = field(default_factory=time.time)
    #: The dispatch this execution belongs to (:class:`DispatchRecord`).
    dispatch_id: str | None = None
    #: ``shadow``: the hook ran in shadow mode; ``decision`` is what it would have decided
    #: (stores keep it in the row's metadata).
    mode: str = "enforce"

    @property
    def dedup_key(self) -> str:
        return dedup_key(self.hook_id, self.event_id)

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "hook_id": self.hook_id,
            "hook_version": self.hook_version,
            "hook_name": self.hook_name,
            "handler_type": self.handler_type,
            "event": self.event,
            "event_id": self.event_id,
            "decision": self.decision,
            "duration_ms": self.duration_ms,
            "tenant_id": self.tenant_id,
            "agent_id": self.agent_id,
            "session_id": self.session_id,
            "input_hash": self.input_hash,
            "error": truncate(redact(self.error)) if self.error else None,
            "metadata": self.metadata,
            "tool_name": self.tool_name,
            "input_summary": self.input_summary,
            "reason": truncate(redact(self.reason)) if self.reason else None,
            "created_at": self.created_at,
            "dispatch_id": self.dispatch_id,
            "mode": self.mode,
        }

    def hook_entry(self) -> dict[str, Any]:
        """This execution as one entry of its dispatch record's ``hooks`` (redacted); a
        shadow hook's says ``mode: shadow``."""
        entry: dict[str, Any] = {
            "execution_id": self.id,
            "hook_id": self.hook_id,
            "hook_name": self.hook_name,
            "hook_version": self.hook_version,
            "handler_type": self.handler_type,
            "decision": self.decision,
            "duration_ms": self.duration_ms,
            "reason": truncate(redact(self.reason)) if self.reason else None,
            "error": truncate(redact(self.error)) if self.error else None,
        }
        if self.mode == "shadow":
            entry["mode"] = "shadow"
        return entry


def new_dispatch_id() -> str:
    """A dispatch's id: time-ordered (the records' index appends) and unique across
    processes; made by hookgate, never taken from the caller's payload."""
    return time_ordered_id()


def input_size(payload: Mapping[str, Any]) -> int | None:
    """Bytes of the event's payload as JSON; None when it is not JSON (a library caller's
    objects)."""
    try:
        return len(orjson.dumps(payload, option=orjson.OPT_NON_STR_KEYS))
    except TypeError:
        return None


@dataclass(slots=True)
class DispatchRecord:
    """One dispatch: what the agent asked, the one answer it got, which hooks ran and the
    approval a person decided. Made for every dispatch, also when no hook matched.

    ``payload`` is the event as the hooks saw it: stores keep it only sealed (never in a
    readable column); readers get its size, hash and a redacted excerpt of its input.
    """

    id: str
    event: str
    event_id: str
    decision: str
    duration_ms: float
    tenant_id: str | None = None
    agent_id: str | None = None
    session_id: str | None = None
    tool_name: str | None = None
    #: The outcome's full reason; stores redact and truncate it, and seal the full text.
    reason: str | None = None
    #: The executions of the hooks that ran, in chain order.
    executions: Sequence[ExecutionRecord] = ()
    #: What the person decided (:attr:`hookgate.outcome.Outcome.approval`), if one was asked.
    approval: Mapping[str, Any] | None = None
    payload: Mapping[str, Any] | None = field(default=None, repr=False)
    #: The payload field that holds the event's input (``tool_input``, ``prompt``, …).
    input_field: str | None = None
    #: Why the engine refused the event before any hook ran (input over the limits).
    refused: str | None = None
    trace_id: str | None = None
    created_at: float = field(default_factory=time.time)
    #: The chain ran as a blocking one (the caller waited for it); sealed with the payload.
    blocking: bool | None = None
    #: The replies of the hooks that called out (:class:`hookgate.reply_recording.RecordedAnswer`),
    #: sealed with the payload so replay can answer for them.
    answers: Sequence[Any] = ()

    @property
    def matched(self) -> int:
        """How many hooks ran."""
        return len(self.executions)

    def input_summary(self) -> str | None:
        if self.payload is None or not self.input_field:
            return None
        return summarize_input(self.payload.get(self.input_field))

    def input_hash(self) -> str:
        if self.payload is None:
            return ""
        return input_hash(self.event, self.payload, self.input_field)

    def approval_view(self) -> dict[str, Any] | None:
        """The approval's facts for readable columns: who decided, when, how (the comment
        redacted and cut)."""
        if not self.approval:
            return None
        view = {
            key: self.approval.get(key)
            for key in ("id", "status", "decided_by", "decided_at", "expires_at", "hook")
        }
        comment = self.approval.get("comment")
        view["comment"] = truncate(redact(str(comment))) if comment else None
        view["input_edited"] = bool(self.approval.get("input_edited"))
        return view

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "event": self.event,
            "event_id": self.event_id,
            "decision": self.decision,
            "reason": truncate(redact(self.reason)) if self.reason else None,
            "duration_ms": self.duration_ms,
            "tenant_id": self.tenant_id,
            "agent_id": self.agent_id,
            "session_id": self.session_id,
            "tool_name": self.tool_name,
            "matched": self.matched,
            "hooks": [execution.hook_entry() for execution in self.executions],
            "approval": self.approval_view(),
            "refused": self.refused,
            "input_size": input_size(self.payload) if self.payload is not None else None,
            "input_hash": self.input_hash(),
            "input_summary": self.input_summary(),
            "trace_id": self.trace_id,
            "created_at": self.created_at,
        }


@runtime_checkable
class AuditSink(Protocol):
    def record(self, records: Sequence[ExecutionRecord]) -> None:
        """Accept records without blocking (queue them)."""
        ...

    async def wait_durable(self) -> None:
        """Return once everything recorded so far is committed (no-op in async mode)."""
        ...


#: A sink may also keep dispatch records: ``record_dispatch(record: DispatchRecord)``,
#: queued like ``record`` (sinks without it keep execution rows only).
DISPATCH_METHOD: Final = "record_dispatch"


class MemoryAudit:
    """Keeps records in a list: for the library, tests and ``hookgate fire``."""

    def __init__(self) -> None:
        self.records: list[ExecutionRecord] = []
        self.dispatches: list[DispatchRecord] = []
        self._seen: set[str] = set()

    def record_dispatch(self, record: DispatchRecord) -> None:
        self.dispatches.append(record)

    def record(self, records: Sequence[ExecutionRecord]) -> None:
        for rec in records:
            key = rec.dedup_key
            if key in self._seen:
                continue
            self._seen.add(key)
            self.records.append(rec)

    async def wait_durable(self) -> None:
        return None
