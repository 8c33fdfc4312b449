"""The ``hook_executions`` table: the audit history, paged newest first by cursor."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, Final

import orjson

from hookgate.store.base import (
    Caller,
    ExecutionPage,
    ExecutionQuery,
    ExecutionRow,
    ExecutionTiming,
    NotFound,
)
from hookgate.store.sql.base import Row, SqlBackend, loads
from hookgate.store.sql.listing import Where, newest_first_page

__all__ = [
    "EXECUTION_COLUMNS",
    "EXECUTION_INSERT",
    "HOOK_ROW_COLUMNS",
    "HOOK_ROW_DETAIL",
    "HOOK_ROW_NAMES",
    "ExecutionTable",
    "execution_from_row",
    "execution_params",
]

# Hook rows whose dispatch record covers them are deleted with it, not by age alone.
_UNCHAINED: Final = (
    " AND (dispatch_id IS NULL OR NOT EXISTS (SELECT 1 FROM dispatch_records d "
    "WHERE d.id = hook_executions.dispatch_id AND d.hook_rows IS NOT NULL))"
)
EXECUTION_COLUMNS: Final = (
    "id, hook_id, hook_version, hook_name, handler_type, event, event_id, decision, "
    "duration_ms, tenant_id, agent_id, session_id, input_hash, dedup_key, error, "
    "error_detail, metadata, created_at, tool_name, input_summary, reason, hook_ref, "
    "dispatch_id"
)
#: The columns of a hook row its dispatch record's hash covers (hookgate.store.chain): all
#: but hook_id, which the database sets NULL when the hook is deleted (hook_ref keeps the id).
HOOK_ROW_NAMES: Final = tuple(
    name.strip() for name in EXECUTION_COLUMNS.split(",") if name.strip() != "hook_id"
)
HOOK_ROW_COLUMNS: Final = ", ".join(HOOK_ROW_NAMES)
HOOK_ROW_DETAIL: Final = HOOK_ROW_NAMES.index("error_detail")
# A row for a hook deleted meanwhile gets hook_id NULL, like the rows the delete touched.
EXECUTION_INSERT: Final = (
    f"INSERT INTO hook_executions ({EXECUTION_COLUMNS}) VALUES "
    "(?, (SELECT h.id FROM agent_hooks h WHERE h.id = ?), "
    "?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
    "ON CONFLICT (dedup_key) DO NOTHING"
)

def _metadata_json(metadata: Mapping[str, Any]) -> str:
    # str() for anything exotic a handler left in its details, and no NUL escapes (jsonb
    # refuses them): an execution row is never refused for its metadata.
    try:
        text = orjson.dumps(metadata, default=str, option=orjson.OPT_NON_STR_KEYS).decode()
    except TypeError:  # e.g. an integer beyond 64 bits, which orjson refuses
        text = json.dumps(metadata, separators=(",", ":"), ensure_ascii=False, default=str)
    return text.replace("\\u0000", "\\\\0") if "\\u0000" in text else text


def execution_params(row: ExecutionRow) -> tuple[Any, ...]:
    return (
        row.id,
        row.hook_id,
        row.hook_version,
        row.hook_name,
        row.handler_type,
        row.event,
        row.event_id,
        row.decision,
        row.duration_ms,
        row.tenant_id,
        row.agent_id,
        row.session_id,
        row.input_hash,
        row.dedup_key,
        row.error,
        row.error_detail,
        _metadata_json(row.metadata),
        row.created_at,
        row.tool_name,
        row.input_summary,
        row.reason,
        row.hook_ref or row.hook_id,
        row.dispatch_id,
    )


def execution_from_row(row: Row) -> ExecutionRow:
    detail = row["error_detail"]
    return ExecutionRow(
        id=row["id"],
        hook_id=row["hook_id"],
        hook_version=row["hook_version"],
        hook_name=row["hook_name"],
        handler_type=row["handler_type"],
        event=row["event"],
        event_id=row["event_id"],
        decision=row["decision"],
        duration_ms=row["duration_ms"],
        tenant_id=row["tenant_id"],
        agent_id=row["agent_id"],
        session_id=row["session_id"],
        input_hash=row["input_hash"],
        dedup_key=row["dedup_key"],
        error=row["error"],
        error_detail=bytes(detail) if detail is not None else None,
        metadata=loads(row["metadata"]),
        created_at=row["created_at"],
        tool_name=row["tool_name"],
        input_summary=row["input_summary"],
        reason=row["reason"],
        hook_ref=row["hook_ref"],
        dispatch_id=row["dispatch_id"],
        seq=row["seq"],
    )



class ExecutionTable(SqlBackend):
    """Execution rows: written in batches by the audit writer, queried by page, pruned."""

    async def write_executions(self, rows: Sequence[ExecutionRow]) -> int:
        if not rows:
            return 0
        async with self._write() as sql:
            return await sql.executemany(EXECUTION_INSERT, [execution_params(r) for r in rows])

    async def query_executions(self, caller: Caller, query: ExecutionQuery) -> ExecutionPage:
        where = Where()
        where.tenant(caller, query.tenant_id)
        where.equal(
            ("hook_ref", query.hook_id),  # the executed id: a deleted hook's rows too
            ("tool_name", query.tool_name),
            ("session_id", query.session_id),
            ("decision", query.decision),
            ("event", query.event),
            ("agent_id", query.agent_id),
            ("hook_name", query.hook_name),
        )
        where.window(query.since, query.until)
        async with self._read() as sql:
            items, cursor = await newest_first_page(
                sql, f"SELECT seq, {EXECUTION_COLUMNS} FROM hook_executions", where,
                query.cursor, query.limit, execution_from_row, lambda row: row.seq,
            )
        return ExecutionPage(items, cursor)

    async def execution_timings(
        self, caller: Caller, tenant_id: str | None, since: float, until: float, limit: int
    ) -> tuple[ExecutionTiming, ...]:
        tenant = tenant_id if caller.master else caller.tenant_id
        scope = " AND tenant_id = ?" if tenant is not None else ""
        args: list[Any] = [float(since), float(until)]
        if tenant is not None:
            args.append(tenant)
        async with self._read() as sql:
            rows = await sql.fetch(
                "SELECT hook_ref, hook_name, decision, duration_ms, created_at "
                f"FROM hook_executions WHERE created_at >= ? AND created_at < ?{scope} "
                f"ORDER BY seq DESC LIMIT {max(1, int(limit))}",
                *args,
            )
        return tuple(
            ExecutionTiming(
                hook_ref=row["hook_ref"],
                hook_name=row["hook_name"],
                decision=row["decision"],
                duration_ms=float(row["duration_ms"]),
                created_at=float(row["created_at"]),
            )
            for row in rows
        )

    async def get_execution(self, caller: Caller, execution_id: str) -> ExecutionRow:
        async with self._read() as sql:
            # Rows with an error detail are indexed by id; the rest need a scan (they hold
            # nothing the history pages do not already show).
            row = await sql.fetchrow(
                f"SELECT seq, {EXECUTION_COLUMNS} FROM hook_executions "
                "WHERE id = ? AND error_detail IS NOT NULL",
                execution_id,
            ) or await sql.fetchrow(
                f"SELECT seq, {EXECUTION_COLUMNS} FROM hook_executions WHERE id = ?",
                execution_id,
            )
        if row is None or not (caller.master or row["tenant_id"] == caller.tenant_id):
            raise NotFound(f"no execution {execution_id}")
        return execution_from_row(row)

    async def prune_executions(self, caller: Caller, older_than: float) -> int:
        """Rows older than ``older_than``, but not those of a dispatch record still kept
        whose hash covers them (they go with it: retention moves the chain's base)."""
        cutoff = float(older_than)
        where = ("" if caller.master else " AND tenant_id = ?") + _UNCHAINED
        scope: list[Any] = [] if caller.master else [caller.tenant_id]
        async with self._write() as sql:
            # Rows arrive in time order, so the oldest row young enough to keep bounds the
            # range to delete along the primary key (a walk over the rows being deleted,
            # not the table). A row written out of order is kept until the bound passes it.
            bound = await sql.fetchval(
                "SELECT seq FROM hook_executions WHERE created_at >= ? ORDER BY seq LIMIT 1",
                cutoff,
            )
            if bound is None:
                return await sql.execute(
                    f"DELETE FROM hook_executions WHERE created_at < ?{where}", cutoff, *scope
                )
            return await sql.execute(
                f"DELETE FROM hook_executions WHERE seq < ? AND created_at < ?{where}",
                int(bound),
                cutoff,
                *scope,
            )
