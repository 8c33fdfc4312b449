"""Where replay reads recorded dispatches: a store (oldest first, a page at a time) or an
export file.

The replay export (``GET /api/v1/dispatches/export?format=jsonl``, admins) is JSON lines, one
record each, oldest first: the readable columns replay reads (``id``, ``tenant_id``,
``event``, ``event_id``, ``tool_name``, ``agent_id``, ``session_id``, ``decision``,
``reason``, ``duration_ms``, ``approval_id``, ``refused``, ``created_at`` in Unix seconds),
plus ``sealed_detail``, the sealed input and outcall answers exactly as stored
(base64 of the AES-256-GCM blob, bound to the dispatch id). No input is in the file in plain
text: replaying it needs the gateway's key. The readable columns are not sealed, so replay
trusts only what the seal holds: a record whose tenant differs from its sealed input's is
unreadable.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import contextlib
from collections.abc import AsyncIterator, Mapping
from pathlib import Path
from typing import Any, Final, NamedTuple

import orjson

from hookgate.store.base import Caller, DispatchQuery, DispatchRow, Store

__all__ = ["EXPORT_FORMAT", "BadLine", "export_line", "export_rows", "store_rows"]

#: Names the file's format in every line (a reader refuses other files early).
EXPORT_FORMAT: Final = "hookgate-dispatch-v1"
_PAGE: Final = 2_000
#: A line longer than this is not a record (payloads are bounded far below it).
_MAX_LINE: Final = 64 * 1024 * 1024


class BadLine(NamedTuple):
    """A line of an export that is not a record; replay counts it as unreadable."""

    where: str
    why: str


def export_line(row: DispatchRow) -> bytes:
    """One record as a line of the replay export."""
    sealed = base64.b64encode(row.detail).decode() if row.detail is not None else None
    data: dict[str, Any] = {
        "format": EXPORT_FORMAT,
        "id": row.id,
        "tenant_id": row.tenant_id,
        "event": row.event,
        "event_id": row.event_id,
        "tool_name": row.tool_name,
        "agent_id": row.agent_id,
        "session_id": row.session_id,
        "decision": row.decision,
        "reason": row.reason,
        "duration_ms": row.duration_ms,
        "approval_id": row.approval_id,
        "refused": row.refused,
        "created_at": row.created_at,
        "sealed_detail": sealed,
    }
    return orjson.dumps(data) + b"\n"


def _text(data: Mapping[str, Any], name: str) -> str | None:
    value = data.get(name)
    return value if isinstance(value, str) else None


def _row(data: Any) -> DispatchRow:
    """A line's record; ValueError naming what is wrong."""
    if not isinstance(data, dict) or data.get("format") != EXPORT_FORMAT:
        raise ValueError(f'not a replay export record (no "format": "{EXPORT_FORMAT}")')
    dispatch_id, tenant, event, decision = (
        _text(data, "id"),
        _text(data, "tenant_id"),
        _text(data, "event"),
        _text(data, "decision"),
    )
    created = data.get("created_at")
    if not (dispatch_id and tenant and event and decision) or not isinstance(created, int | float):
        raise ValueError("id, tenant_id, event, decision and created_at are required")
    sealed = data.get("sealed_detail")
    detail = None
    if sealed is not None:
        if not isinstance(sealed, str):
            raise ValueError("sealed_detail is not base64 text")
        try:
            detail = base64.b64decode(sealed, validate=True)
        except (binascii.Error, ValueError):
            raise ValueError("sealed_detail is not base64") from None
    return DispatchRow(
        id=dispatch_id,
        tenant_id=tenant,
        event=event,
        event_id=_text(data, "event_id") or "",
        decision=decision,
        duration_ms=float(data.get("duration_ms") or 0.0),
        created_at=float(created),
        tool_name=_text(data, "tool_name"),
        agent_id=_text(data, "agent_id"),
        session_id=_text(data, "session_id"),
        reason=_text(data, "reason"),
        approval_id=_text(data, "approval_id"),
        refused=_text(data, "refused"),
        detail=detail,
    )


def _selected(row: DispatchRow, query: DispatchQuery) -> bool:
    if query.tenant_id is not None and row.tenant_id != query.tenant_id:
        return False
    if query.since is not None and row.created_at < query.since:
        return False
    if query.until is not None and row.created_at >= query.until:
        return False
    return query.event is None or row.event == query.event


async def export_rows(path: Path, query: DispatchQuery) -> AsyncIterator[DispatchRow | BadLine]:
    """The file's records the query selects (its tenant and time window), in file order;
    a line that is not a record is a :class:`BadLine`."""
    with path.open("rb") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            if len(line) > _MAX_LINE:
                yield BadLine(f"line {number}", "longer than any record")
                continue
            try:
                row = _row(orjson.loads(line))
            except (orjson.JSONDecodeError, ValueError, TypeError) as exc:
                yield BadLine(f"line {number}", str(exc) or "not JSON")
                continue
            if _selected(row, query):
                yield row


async def store_rows(
    store: Store, caller: Caller, query: DispatchQuery
) -> AsyncIterator[DispatchRow]:
    """The store's records the query selects, oldest first, a page at a time; the next page
    is read (by the store's own thread or connection) while this one is replayed."""
    page = DispatchQuery(
        tenant_id=query.tenant_id,
        event=query.event,
        since=query.since,
        until=query.until,
        limit=_PAGE,
    )
    reading = asyncio.ensure_future(store.dispatches_in_order(caller, page, 0))
    try:
        while True:
            rows = await reading
            if len(rows) == _PAGE:
                reading = asyncio.ensure_future(
                    store.dispatches_in_order(caller, page, rows[-1].seq)
                )
            for row in rows:
                yield row
            if len(rows) < _PAGE:
                return
    finally:
        if not reading.done():
            reading.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await reading
