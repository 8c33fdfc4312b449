"""A recorded dispatch opened for replay: its sealed input and outcall answers, and what
it decided then.

The input is only ever kept sealed (``detail``: AES-256-GCM bound to the dispatch id), so
replay needs the gateway's key. A record that cannot be opened (no input was kept, the
key does not fit, the seal was altered, the content is not what a gateway writes) is
:class:`Unreadable`: counted and reported by id, never replayed as an empty event.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from hookgate.errors import HookgateError
from hookgate.secrets.keyring import Keyring, SecretError
from hookgate.store.audit_writer import open_dispatch_detail
from hookgate.store.base import DispatchRow

__all__ = ["RecordedDispatch", "Unreadable", "open_recorded"]


class Unreadable(HookgateError):
    """A record replay cannot use; the message says why (never its content)."""


@dataclass(slots=True)
class RecordedDispatch:
    """One dispatch as replay needs it (made once per record: not frozen, which costs a
    ``object.__setattr__`` per field). Treat as read-only."""

    id: str
    tenant_id: str
    event: str
    tool_name: str | None
    #: What it decided then: ``allow``, ``block``, or ``ask`` (a person was asked).
    before: str
    #: Its reason then (the record's readable reason: already redacted and cut).
    before_reason: str | None
    created_at: float
    payload: Mapping[str, Any]
    #: The chain ran as a blocking one; None for records from before this was kept.
    blocking: bool | None
    #: Recorded replies of the hooks that called out, by hook name (in chain order).
    answers: Mapping[str, Sequence[Mapping[str, Any]]]


_NO_ANSWERS: Mapping[str, Sequence[Mapping[str, Any]]] = {}


def before_decision(row: DispatchRow) -> str:
    """A record's decision as replay compares it: a dispatch that asked a person is ``ask``
    (what the person then decided is theirs, not the policy's)."""
    return "ask" if row.approval_id else row.decision


def open_recorded(row: DispatchRow, keyring: Keyring | None) -> RecordedDispatch:
    """Open a record for replay; raise :class:`Unreadable` saying why it cannot be."""
    if row.refused:
        raise Unreadable("the engine refused its input before any hook ran (none was kept)")
    if row.detail is None:
        raise Unreadable("no sealed input was kept (the gateway had no key, or it predates it)")
    if keyring is None:
        raise Unreadable("no key to open the sealed input")
    try:
        detail = open_dispatch_detail(keyring, row)
    except SecretError as exc:
        raise Unreadable(f"the sealed input does not open: {exc}") from None
    except ValueError:  # orjson.JSONDecodeError
        raise Unreadable("the sealed content is not JSON") from None
    # orjson makes dicts: exact type checks (an ABC check costs a µs per record).
    if detail.__class__ is not dict:
        raise Unreadable("the sealed content is not an object")
    payload = detail.get("payload")
    if payload.__class__ is not dict:
        raise Unreadable("no input was kept with it")
    blocking = detail.get("blocking")
    answers = detail.get("answers")
    return RecordedDispatch(
        row.id,
        row.tenant_id,
        row.event,
        row.tool_name,
        "ask" if row.approval_id else row.decision,
        row.reason,
        row.created_at,
        payload,
        blocking if blocking.__class__ is bool else None,
        _answers(answers) if answers else _NO_ANSWERS,
    )


def _answers(value: Any) -> dict[str, list[Mapping[str, Any]]]:
    found: dict[str, list[Mapping[str, Any]]] = {}
    if not isinstance(value, list):
        return found
    for entry in value:
        if isinstance(entry, Mapping) and isinstance(entry.get("hook_name"), str):
            found.setdefault(entry["hook_name"], []).append(entry)
    return found
