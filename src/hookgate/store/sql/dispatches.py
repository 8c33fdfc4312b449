"""The ``dispatch_records`` table: one row per dispatch, paged newest first by cursor."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

from hookgate.store.base import (
    Caller,
    DispatchPage,
    DispatchQuery,
    DispatchRow,
    NotFound,
)
from hookgate.store.sql.base import Row, SqlBackend, loads, to_json
from hookgate.store.sql.executions import MAX_PAGE, decode_cursor, encode_cursor

__all__ = [
    "DISPATCH_COLUMNS",
    "DispatchTable",
    "dispatch_from_row",
    "dispatch_params",
]

DISPATCH_COLUMNS: Final = (
    "id, tenant_id, event, event_id, tool_name, agent_id, session_id, decision, reason, "
    "duration_ms, matched, hooks, approval_id, approval, refused, input_size, input_hash, "
    "input_summary, trace_id, detail, created_at"
)
DISPATCH_WIDTH: Final = len(DISPATCH_COLUMNS.split(","))
DISPATCH_INSERT: Final = (
    f"INSERT INTO dispatch_records ({DISPATCH_COLUMNS}) VALUES "
    f"({', '.join('?' * DISPATCH_WIDTH)}) ON CONFLICT (id) DO NOTHING"
)


def dispatch_params(row: DispatchRow) -> tuple[Any, ...]:
    return (
        row.id,
        row.tenant_id,
        row.event,
        row.event_id,
        row.tool_name,
        row.agent_id,
        row.session_id,
        row.decision,
        row.reason,
        row.duration_ms,
        row.matched,
        to_json(list(row.hooks), "hooks"),
        row.approval_id,
        to_json(row.approval, "approval") if row.approval is not None else None,
        row.refused,
        row.input_size,
        row.input_hash,
        row.input_summary,
        row.trace_id,
        row.detail,
        row.created_at,
    )


def dispatch_from_row(row: Row) -> DispatchRow:
    detail = row["detail"]
    approval = row["approval"]
    return DispatchRow(
        id=row["id"],
        tenant_id=row["tenant_id"],
        event=row["event"],
        event_id=row["event_id"],
        decision=row["decision"],
        duration_ms=row["duration_ms"],
        created_at=row["created_at"],
        tool_name=row["tool_name"],
        agent_id=row["agent_id"],
        session_id=row["session_id"],
        reason=row["reason"],
        hooks=loads(row["hooks"]),
        approval_id=row["approval_id"],
        approval=loads(approval) if approval is not None else None,
        refused=row["refused"],
        input_size=row["input_size"],
        input_hash=row["input_hash"],
        input_summary=row["input_summary"],
        trace_id=row["trace_id"],
        detail=bytes(detail) if detail is not None else None,
        seq=row["seq"],
    )


class DispatchTable(SqlBackend):
    """Dispatch records: written in batches by the audit writer, queried by page, pruned."""

    async def write_dispatches(self, rows: Sequence[DispatchRow]) -> int:
        if not rows:
            return 0
        async with self._write() as sql:
            return await sql.executemany(DISPATCH_INSERT, [dispatch_params(r) for r in rows])

    async def query_dispatches(self, caller: Caller, query: DispatchQuery) -> DispatchPage:
        where: list[str] = []
        args: list[Any] = []
        tenant = query.tenant_id if caller.master else caller.tenant_id
        if tenant is not None:
            where.append("tenant_id = ?")
            args.append(tenant)
        decision = query.decision
        if decision == "ask":  # every dispatch that asked a person, whatever was decided
            where.append("approval_id IS NOT NULL")
            decision = None
        for column, value in (
            ("session_id", query.session_id),
            ("agent_id", query.agent_id),
            ("tool_name", query.tool_name),
            ("decision", decision),
            ("event", query.event),
        ):
            if value is not None:
                where.append(f"{column} = ?")
                args.append(value)
        if query.since is not None:
            where.append("created_at >= ?")
            args.append(float(query.since))
        if query.until is not None:
            where.append("created_at < ?")
            args.append(float(query.until))
        if query.cursor:
            where.append("seq < ?")
            args.append(decode_cursor(query.cursor))
        limit = max(1, min(int(query.limit), MAX_PAGE))
        clause = f" WHERE {' AND '.join(where)}" if where else ""
        async with self._read() as sql:
            rows = await sql.fetch(
                f"SELECT seq, {DISPATCH_COLUMNS} FROM dispatch_records{clause} "
                f"ORDER BY seq DESC LIMIT {limit + 1}",
                *args,
            )
        items = tuple(dispatch_from_row(row) for row in rows[:limit])
        more = len(rows) > limit
        return DispatchPage(items, encode_cursor(items[-1].seq) if more and items else None)

    async def get_dispatch(self, caller: Caller, dispatch_id: str) -> DispatchRow:
        async with self._read() as sql:
            row = await sql.fetchrow(
                f"SELECT seq, {DISPATCH_COLUMNS} FROM dispatch_records WHERE id = ?",
                dispatch_id,
            )
        # Another tenant's record is "not found", like a missing one.
        if row is None or not (caller.master or row["tenant_id"] == caller.tenant_id):
            raise NotFound(f"no dispatch {dispatch_id}")
        return dispatch_from_row(row)

    async def prune_dispatches(
        self, caller: Caller, older_than: float, *, unmatched_only: bool = False
    ) -> int:
        clauses = ["created_at < ?"]
        args: list[Any] = [float(older_than)]
        if unmatched_only:
            clauses.append("matched = 0")
        if not caller.master:
            clauses.append("tenant_id = ?")
            args.append(caller.tenant_id)
        async with self._write() as sql:
            return await sql.execute(
                f"DELETE FROM dispatch_records WHERE {' AND '.join(clauses)}", *args
            )
