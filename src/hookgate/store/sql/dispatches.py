"""The ``dispatch_records`` table: one row per dispatch, paged newest first by cursor, each
tenant's records linked into a hash chain as they are written (:mod:`hookgate.store.chain`)."""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import itertools
import operator
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

import orjson

from hookgate.log import log_event
from hookgate.store.base import (
    Caller,
    DispatchPage,
    DispatchQuery,
    DispatchRow,
    NotFound,
)
from hookgate.store.chain import (
    CHAIN_COLUMNS,
    GENESIS,
    HASHED_SELECT,
    HOOK_ROW_BASE,
    ChainEntry,
    ChainHead,
    ChainWalker,
    TenantChain,
    chain_content,
    hook_row_digest,
    record_hash,
    stored_values,
)
from hookgate.store.sql.base import Row, Sql, SqlBackend, loads, to_json
from hookgate.store.sql.executions import (
    HOOK_ROW_DETAIL,
    HOOK_ROW_NAMES,
)
from hookgate.store.sql.listing import Where, newest_first_page

__all__ = [
    "DISPATCH_COLUMNS",
    "HOOK_ROWS_SELECT",
    "LINK_COLUMNS",
    "PG_PAGE_HOOK_ROWS",
    "VERIFY_PAGE",
    "DispatchTable",
    "Fetch",
    "dispatch_from_row",
    "dispatch_params",
    "found_hook_rows",
    "hashed_hook_columns",
    "tenant_verdict",
    "walk_page",
    "walk_tenant_here",
]

# The hash chain covers exactly these columns (hookgate.store.chain): one list for both.
DISPATCH_COLUMNS: Final = CHAIN_COLUMNS
#: A record's hook rows and links in its tenant's chain, written after the content columns.
LINK_COLUMNS: Final = "hook_rows, chain_seq, prev_hash, record_hash"
DISPATCH_WIDTH: Final = len(DISPATCH_COLUMNS.split(",")) + len(LINK_COLUMNS.split(","))
DISPATCH_INSERT: Final = (
    f"INSERT INTO dispatch_records ({DISPATCH_COLUMNS}, {LINK_COLUMNS}) VALUES "
    f"({', '.join('?' * DISPATCH_WIDTH)}) ON CONFLICT (id) DO NOTHING"
)
# Take (creating it if new) and lock a tenant's head for this transaction: FOR UPDATE's
# effect on PostgreSQL (an upsert locks its row), SQLite's write lock already excludes.
_HEAD_LOCK: Final = (
    "INSERT INTO audit_chain_heads (tenant_id, seq, hash, base_seq, base_hash, updated_at) "
    "VALUES (?, 0, ?, 0, ?, ?) ON CONFLICT (tenant_id) DO UPDATE SET updated_at = "
    "excluded.updated_at RETURNING seq, hash, base_seq, base_hash"
)
_HEAD_MOVE: Final = (
    "UPDATE audit_chain_heads SET seq = ?, hash = ?, updated_at = ? WHERE tenant_id = ?"
)
_ID_CHUNK: Final = 500
#: Records read per query by replay.
REPLAY_PAGE: Final = 2_000
# One page of a chain being verified: its records (positional: seq, chain_seq, prev_hash,
# record_hash, then HASHED_SELECT), its gaps and its records' hook rows. Records written
# after the head was read are for the next check.
_PAGE_RECORDS: Final = (
    f"SELECT seq, chain_seq, prev_hash, record_hash, {HASHED_SELECT} "
    "FROM dispatch_records WHERE tenant_id = ? AND chain_seq > ? AND chain_seq <= ? "
    "ORDER BY chain_seq LIMIT ?"
)
_PAGE_GAPS: Final = (
    "SELECT chain_seq, prev_hash, record_hash FROM audit_chain_gaps "
    "WHERE tenant_id = ? AND chain_seq > ? AND chain_seq <= ? ORDER BY chain_seq"
)
_UNCHAINED_COUNT: Final = (
    "SELECT count(*) FROM dispatch_records WHERE tenant_id = ? AND chain_seq IS NULL"
)
if len(HOOK_ROW_NAMES) != HOOK_ROW_BASE:  # pragma: no cover - see chain.HASHED_SELECT
    raise ImportError("found_hook_rows hashes a hook row as it comes: teach it the new column")


def hashed_hook_columns(table: str) -> str:
    # The hashed array's items in order (error_detail as its length), then error_detail.
    return (
        ", ".join(
            f"length({table}{name})" if name == "error_detail" else f"{table}{name}"
            for name in HOOK_ROW_NAMES
        )
        + f", {table}error_detail"
    )


#: A dispatch's hook rows as the chain hashes them: write order, then the hashed array's
#: items (``error_detail`` as its length), then ``error_detail``.
HOOK_ROWS_SELECT: Final = f"SELECT seq, {hashed_hook_columns('')} FROM hook_executions"
_HOOK_ROW_ID: Final = 1 + HOOK_ROW_NAMES.index("id")
_HOOK_ROW_OWNER: Final = 1 + HOOK_ROW_NAMES.index("dispatch_id")
_HOOK_ROW_END: Final = 1 + len(HOOK_ROW_NAMES)
# Driven by the page's records (one index probe each), not by a set of their ids.
_PAGE_HOOK_ROWS: Final = (
    f"SELECT h.seq, {hashed_hook_columns('h.')}"
    " FROM dispatch_records d JOIN hook_executions h ON h.dispatch_id = d.id "
    "WHERE d.tenant_id = ? AND d.chain_seq > ? AND d.chain_seq <= ? AND d.hook_rows IS NOT NULL"
)
_RECORD_HOOKS: Final = 4 + len(CHAIN_COLUMNS.split(","))
# The same rows on PostgreSQL: its planner, seeing a page's 5,000 records, hashes them and
# scans every hook row of the table for each page (quadratic in the log's size); an array of
# ids makes it probe the dispatch_id index instead.
PG_PAGE_HOOK_ROWS: Final = (
    f"{HOOK_ROWS_SELECT} WHERE dispatch_id = ANY(ARRAY(SELECT id FROM dispatch_records "
    "WHERE tenant_id = ? AND chain_seq > ? AND chain_seq <= ? AND hook_rows IS NOT NULL))"
)
#: Records read per query while verifying.
VERIFY_PAGE: Final = 5_000
# Pages smaller than this are checked on the event loop (a thread hop costs more).
_WALK_INLINE_MAX: Final = 2_000


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


#: What replay reads of a record (no JSON column: none is parsed).
_REPLAY_COLUMNS: Final = (
    "seq, id, tenant_id, event, event_id, decision, duration_ms, created_at, tool_name, "
    "agent_id, session_id, reason, approval_id, refused, detail"
)


def _replay_row(row: Row) -> DispatchRow:
    detail = row["detail"]
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
        approval_id=row["approval_id"],
        refused=row["refused"],
        detail=bytes(detail) if detail is not None else None,
        seq=row["seq"],
    )


def _dispatch_filters(caller: Caller, query: DispatchQuery) -> Where:
    """The WHERE terms (and their arguments) of a dispatch query, scoped to the caller."""
    where = Where()
    where.tenant(caller, query.tenant_id)
    decision = query.decision
    if decision == "ask":  # every dispatch that asked a person, whatever was decided
        where.add("approval_id IS NOT NULL")
        decision = None
    where.equal(
        ("session_id", query.session_id),
        ("agent_id", query.agent_id),
        ("tool_name", query.tool_name),
        ("decision", decision),
        ("event", query.event),
    )
    where.window(query.since, query.until)
    return where


def _head(row: Row) -> ChainHead:
    return ChainHead(
        row["tenant_id"], int(row["seq"]), row["hash"], int(row["base_seq"]), row["base_hash"]
    )


def found_hook_rows(rows: Sequence[Sequence[Any]]) -> dict[str, str]:
    """Each dispatch's hook rows as they are now (:func:`~hookgate.store.chain.hook_rows_text`,
    in write order), from rows of ``HOOK_ROWS_SELECT``."""
    sha, dumps, end, owner, row_id = (
        hashlib.sha256,
        orjson.dumps,
        _HOOK_ROW_END,
        _HOOK_ROW_OWNER,
        _HOOK_ROW_ID,
    )
    try:
        # hook_row_digest's bytes, from the row as it comes (the array is one slice of it).
        pieces = [
            (
                row[owner],
                row[0],
                f"{row[row_id]}="
                + sha(
                    dumps(row[1:end]) + row[end] if row[end] is not None else dumps(row[1:end])
                ).hexdigest(),
            )
            for row in rows
        ]
    except TypeError:  # a wide integer, or a detail that is not bytes: row by row
        pieces = [(row[owner], row[0], f"{row[row_id]}={_odd_digest(row)}") for row in rows]
    pieces.sort()  # by dispatch, then write order
    return {
        dispatch: ";".join([piece for _, _, piece in found])
        for dispatch, found in itertools.groupby(pieces, operator.itemgetter(0))
    }


def _odd_digest(row: Sequence[Any]) -> str:
    end = _HOOK_ROW_END
    values = (*row[1 : 1 + HOOK_ROW_DETAIL], row[end], *row[2 + HOOK_ROW_DETAIL : end])
    try:
        return hook_row_digest(values, HOOK_ROW_NAMES, HOOK_ROW_DETAIL)
    except TypeError:  # rewritten with a type it never holds: no digest matches
        return "unhashable"


def walk_page(
    walker: ChainWalker,
    rows: Sequence[Sequence[Any]],
    gaps: Sequence[Sequence[Any]],
    found: Mapping[str, str],
) -> None:
    """Feed one tenant's page to its walker: records positional (seq, chain_seq, prev_hash,
    record_hash, then HASHED_SELECT), merged by place with the page's gaps (chain_seq,
    prev_hash, record_hash); ``found``: :func:`found_hook_rows` of the page's hook rows."""
    if not gaps:
        walker.walk(rows, found)
        return
    entries = [
        ChainEntry(int(r[1]), r[2], r[3], r[4], int(r[0]), stored_values(r), r[_RECORD_HOOKS])
        for r in rows
    ] + [ChainEntry(int(g[0]), g[1], g[2]) for g in gaps]
    entries.sort(key=_place)
    for entry in entries:
        if not walker.feed(entry, found):
            return


def _walk(walker: ChainWalker, page: _Page) -> None:
    walk_page(walker, page.rows, page.gaps, found_hook_rows(page.hook_rows))


@dataclass(frozen=True, slots=True)
class _Page:
    """One page of a chain being verified: records (positional), gaps, and where it ends."""

    rows: Sequence[Sequence[Any]]
    gaps: Sequence[Sequence[Any]]
    full: bool
    upper: int
    #: The hook rows of the page's records (``HOOK_ROWS_SELECT``'s columns).
    hook_rows: Sequence[Sequence[Any]] = ()


def _place(entry: ChainEntry) -> int:
    return entry.chain_seq


#: A blocking query: SQL and arguments in, positional rows out.
Fetch = Callable[..., Sequence[Sequence[Any]]]


def walk_tenant_here(fetch: Fetch, head: ChainHead) -> TenantChain:
    """Check one tenant's chain in the calling thread, page after page (SQLite's way: one
    thread and its own connection for the whole walk, so neither a hop per page nor a
    reader and a hasher taking the interpreter lock from each other at every row)."""
    walker = ChainWalker(head)
    after = head.base_seq
    while True:
        rows = fetch(_PAGE_RECORDS, head.tenant_id, after, head.seq, VERIFY_PAGE)
        full = len(rows) == VERIFY_PAGE
        upper = int(rows[-1][1]) if full else head.seq
        gaps = fetch(_PAGE_GAPS, head.tenant_id, after, upper)
        hook_rows = fetch(_PAGE_HOOK_ROWS, head.tenant_id, after, upper)
        _walk(walker, _Page(rows, gaps, full, upper, hook_rows))
        if walker.problem is not None or not full:
            break
        after = upper
    walker.finish()
    (unchained,) = fetch(_UNCHAINED_COUNT, head.tenant_id)[0]
    return tenant_verdict(head, walker, unchained)


def tenant_verdict(head: ChainHead, walker: ChainWalker, unchained: Any) -> TenantChain:
    return TenantChain(
        head.tenant_id,
        walker.records,
        head,
        walker.problem,
        int(unchained or 0),
        walker.hook_rows,
        walker.unlisted_hook_rows,
    )


class DispatchTable(SqlBackend):
    """Dispatch records: written in batches by the audit writer, queried by page, pruned."""

    #: The hook rows of a page of a chain being verified (tenant, after, upper).
    _page_hook_rows: str = _PAGE_HOOK_ROWS

    async def write_dispatches(self, rows: Sequence[DispatchRow]) -> int:
        if not rows:
            return 0
        params = [dispatch_params(r) for r in rows]
        async with self._write() as sql:
            linked = await self._link(sql, params)
            return await sql.executemany(DISPATCH_INSERT, linked)

    async def _link(self, sql: Sql, params: Sequence[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
        """Inside the batch's transaction: the new records (known ids dropped: a retried
        batch) with their hook rows and links appended, each tenant's head locked and moved
        on. A record's hook rows were committed before it (the audit writer writes a batch's
        execution rows first, and a dispatch's rows are queued before its record). Tenants
        are locked in sorted order, so two replicas' batches cannot deadlock."""
        known = await self._known_dispatch_ids(sql, [p[0] for p in params])
        fresh: list[int] = []
        for index, values in enumerate(params):
            if values[0] not in known:
                known.add(values[0])
                fresh.append(index)
        if not fresh:
            return []
        hooks = found_hook_rows(await self._hook_rows_of(sql, [params[i][0] for i in fresh]))
        # Contents before the heads are locked: the lock is held only for the links.
        contents: dict[str, list[tuple[int, str, bytes]]] = {}
        for index in fresh:
            values = params[index]
            text = hooks.get(values[0], "")
            contents.setdefault(values[1], []).append((index, text, chain_content(values, text)))
        linked: list[tuple[Any, ...]] = []
        now = time.time()
        for tenant in sorted(contents):
            head = await sql.fetchrow(_HEAD_LOCK, tenant, GENESIS, GENESIS, now)
            assert head is not None
            place, previous = int(head["seq"]), str(head["hash"])
            for index, text, content in contents[tenant]:
                place += 1
                current = record_hash(previous, place, content)
                linked.append((*params[index], text, place, previous, current))
                previous = current
            await sql.execute(_HEAD_MOVE, place, previous, now, tenant)
        return linked

    async def _hook_rows_of(self, sql: Sql, ids: Sequence[str]) -> list[tuple[Any, ...]]:
        found: list[tuple[Any, ...]] = []
        for start in range(0, len(ids), _ID_CHUNK):
            chunk = ids[start : start + _ID_CHUNK]
            rows = await sql.fetch(
                f"{HOOK_ROWS_SELECT} WHERE dispatch_id IN ({', '.join('?' * len(chunk))})", *chunk
            )
            # Both backends' rows keep the selected order in values().
            found += [tuple(row.values()) for row in rows]
        return found

    async def _known_dispatch_ids(self, sql: Sql, ids: Sequence[str]) -> set[str]:
        known: set[str] = set()
        for start in range(0, len(ids), _ID_CHUNK):
            chunk = ids[start : start + _ID_CHUNK]
            rows = await sql.fetch(
                f"SELECT id FROM dispatch_records WHERE id IN ({', '.join('?' * len(chunk))})",
                *chunk,
            )
            known.update(row["id"] for row in rows)
        return known

    async def query_dispatches(self, caller: Caller, query: DispatchQuery) -> DispatchPage:
        async with self._read() as sql:
            items, cursor = await newest_first_page(
                sql,
                f"SELECT seq, {DISPATCH_COLUMNS} FROM dispatch_records",
                _dispatch_filters(caller, query),
                query.cursor,
                query.limit,
                dispatch_from_row,
                lambda row: row.seq,
            )
        return DispatchPage(items, cursor)

    async def dispatches_in_order(
        self, caller: Caller, query: DispatchQuery, after_seq: int = 0
    ) -> tuple[DispatchRow, ...]:
        """Up to ``query.limit`` records after ``after_seq``, oldest first (replay reads a
        window in the order it was written); filtered and scoped like :meth:`query_dispatches`.
        Only the columns replay reads: ``hooks`` and ``approval`` are left empty."""
        where = _dispatch_filters(caller, query)
        where.add("seq > ?", int(after_seq))
        limit = max(1, min(int(query.limit), REPLAY_PAGE))
        async with self._read() as sql:
            rows = await sql.fetch(
                f"SELECT {_REPLAY_COLUMNS} FROM dispatch_records{where.clause()} "
                f"ORDER BY seq LIMIT {limit}",
                *where.args,
            )
        return tuple(_replay_row(row) for row in rows)

    async def count_dispatches(self, caller: Caller, query: DispatchQuery) -> int:
        """How many records the filters select (the cursor and limit are ignored)."""
        where = _dispatch_filters(caller, query)
        async with self._read() as sql:
            found = await sql.fetchval(
                f"SELECT count(*) FROM dispatch_records{where.clause()}", *where.args
            )
        return int(found or 0)

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
        """Chained records go by whole prefixes (the base moves to the last one deleted);
        unmatched-only pruning deletes from the middle and keeps each record's links as a
        gap. Records from before the chain go by age alone."""
        cutoff = float(older_than)
        scope, scope_args = (
            ("", []) if caller.master else (" AND tenant_id = ?", [caller.tenant_id])
        )
        async with self._write() as sql:
            count = await sql.execute(
                "DELETE FROM dispatch_records WHERE chain_seq IS NULL AND created_at < ?"
                + (" AND matched = 0" if unmatched_only else "")
                + scope,
                cutoff,
                *scope_args,
            )
            heads = await sql.fetch(
                f"SELECT tenant_id FROM audit_chain_heads WHERE 1 = 1{scope} ORDER BY tenant_id",
                *scope_args,
            )
            for head in heads:
                tenant = head["tenant_id"]
                if unmatched_only:
                    count += await self._prune_unmatched(sql, tenant, cutoff)
                else:
                    count += await self._prune_prefix(sql, tenant, cutoff)
            return count

    async def _prune_unmatched(self, sql: Sql, tenant: str, cutoff: float) -> int:
        where = "WHERE tenant_id = ? AND chain_seq IS NOT NULL AND created_at < ? AND matched = 0"
        # A gap keeps only links: the record's hook rows (if any) go with it.
        await sql.execute(
            "DELETE FROM hook_executions WHERE dispatch_id IN "
            f"(SELECT id FROM dispatch_records {where})",
            tenant,
            cutoff,
        )
        await sql.execute(
            "INSERT INTO audit_chain_gaps (tenant_id, chain_seq, prev_hash, record_hash) "
            f"SELECT tenant_id, chain_seq, prev_hash, record_hash FROM dispatch_records {where}",
            tenant,
            cutoff,
        )
        return await sql.execute(f"DELETE FROM dispatch_records {where}", tenant, cutoff)

    async def _prune_prefix(self, sql: Sql, tenant: str, cutoff: float) -> int:
        head = await sql.fetchrow(
            "SELECT seq, base_seq FROM audit_chain_heads WHERE tenant_id = ?" + self.lock_clause,
            tenant,
        )
        assert head is not None
        first_kept = await sql.fetchval(
            "SELECT min(chain_seq) FROM dispatch_records WHERE tenant_id = ? "
            "AND chain_seq IS NOT NULL AND created_at >= ?",
            tenant,
            cutoff,
        )
        end = int(first_kept) - 1 if first_kept is not None else int(head["seq"])
        if end <= int(head["base_seq"]):
            return 0
        base_hash = await sql.fetchval(
            "SELECT record_hash FROM dispatch_records WHERE tenant_id = ? AND chain_seq = ?",
            tenant,
            end,
        ) or await sql.fetchval(
            "SELECT record_hash FROM audit_chain_gaps WHERE tenant_id = ? AND chain_seq = ?",
            tenant,
            end,
        )
        if base_hash is None:
            # The record the base would move to is gone: retention must not paper over it.
            log_event(
                "security.audit.chain_prune_refused",
                tenant_id=tenant,
                chain_seq=end,
                why="the last record of the prefix is missing",
            )
            return 0
        # The records' hook rows go with them (retention of hook rows spares those of a
        # record still kept: store.sql.executions.prune_executions).
        await sql.execute(
            "DELETE FROM hook_executions WHERE dispatch_id IN (SELECT id FROM dispatch_records "
            "WHERE tenant_id = ? AND chain_seq <= ?)",
            tenant,
            end,
        )
        deleted = await sql.execute(
            "DELETE FROM dispatch_records WHERE tenant_id = ? AND chain_seq <= ?", tenant, end
        )
        await sql.execute(
            "DELETE FROM audit_chain_gaps WHERE tenant_id = ? AND chain_seq <= ?", tenant, end
        )
        await sql.execute(
            "UPDATE audit_chain_heads SET base_seq = ?, base_hash = ?, updated_at = ? "
            "WHERE tenant_id = ?",
            end,
            base_hash,
            time.time(),
            tenant,
        )
        return deleted

    # -- the chain -------------------------------------------------------------------------

    async def chain_heads(self, caller: Caller, tenant_id: str | None = None) -> list[ChainHead]:
        """Each visible tenant's checkpoint (a tenant caller: its own only)."""
        tenant = tenant_id if caller.master else caller.tenant_id
        clause, args = (" WHERE tenant_id = ?", [tenant]) if tenant is not None else ("", [])
        async with self._read() as sql:
            rows = await sql.fetch(
                "SELECT tenant_id, seq, hash, base_seq, base_hash FROM audit_chain_heads"
                f"{clause} ORDER BY tenant_id",
                *args,
            )
        return [_head(row) for row in rows]

    async def chain_hash_at(self, caller: Caller, tenant_id: str, chain_seq: int) -> str | None:
        """The hash the chain holds at a place (a record, a gap, or the base); None: the
        place is not there (or not visible to the caller)."""
        if not caller.can_change_tenant(tenant_id):
            return None
        async with self._read() as sql:
            found = await sql.fetchval(
                "SELECT record_hash FROM dispatch_records WHERE tenant_id = ? AND chain_seq = ?",
                tenant_id,
                chain_seq,
            ) or await sql.fetchval(
                "SELECT record_hash FROM audit_chain_gaps WHERE tenant_id = ? AND chain_seq = ?",
                tenant_id,
                chain_seq,
            )
            if found is None:
                found = await sql.fetchval(
                    "SELECT base_hash FROM audit_chain_heads WHERE tenant_id = ? AND base_seq = ?",
                    tenant_id,
                    chain_seq,
                )
        return str(found) if found is not None else None

    async def _verify_page(self, sql: Sql, head: ChainHead, after: int) -> _Page:
        rows = await self._chain_page(
            sql, _PAGE_RECORDS, head.tenant_id, after, head.seq, VERIFY_PAGE
        )
        full = len(rows) == VERIFY_PAGE
        upper = int(rows[-1][1]) if full else head.seq
        gaps = await self._chain_page(sql, _PAGE_GAPS, head.tenant_id, after, upper)
        hook_rows = await self._chain_page(sql, self._page_hook_rows, head.tenant_id, after, upper)
        return _Page(rows, gaps, full, upper, hook_rows)

    async def _chain_page(self, sql: Sql, query: str, *args: Any) -> Sequence[Sequence[Any]]:
        """Rows with positional access (asyncpg's records have it)."""
        return await sql.fetch(query, *args)  # type: ignore[return-value]

    async def _head_of(self, sql: Sql, tenant: str) -> ChainHead | None:
        """A tenant's head as it is now (None: it has none)."""
        row = await sql.fetchrow(
            "SELECT tenant_id, seq, hash, base_seq, base_hash FROM audit_chain_heads "
            "WHERE tenant_id = ?",
            tenant,
        )
        return _head(row) if row is not None else None

    async def _verify_tenant(self, sql: Sql, head: ChainHead) -> TenantChain:
        walker = ChainWalker(head)
        # The next page is read while this one is hashed (reading and hashing overlap).
        reading = asyncio.ensure_future(self._verify_page(sql, head, head.base_seq))
        try:
            while True:
                page = await reading
                if page.full:
                    reading = asyncio.ensure_future(self._verify_page(sql, head, page.upper))
                if len(page.rows) >= _WALK_INLINE_MAX:
                    # Hashing is CPU work: off the event loop, so a gateway keeps answering.
                    await asyncio.to_thread(_walk, walker, page)
                else:
                    _walk(walker, page)
                if walker.problem is not None or not page.full:
                    break
        finally:
            if not reading.done():
                reading.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await reading
        walker.finish()
        return tenant_verdict(head, walker, await sql.fetchval(_UNCHAINED_COUNT, head.tenant_id))
