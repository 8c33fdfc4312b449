"""``verify_chain``: each visible tenant's audit chain walked from its base to its head.

One tenant is walked page by page (:mod:`hookgate.store.sql.dispatches`). Several are checked
in one pass: records read in (tenant, place) order a page at a time across tenants, each
page's rows fed to their tenant's walker. Checking tenant by tenant costs four queries per
tenant (and, on SQLite, a connection and a thread hop): 2,000 tenants of 5 records verified
at ~4,000 records/s however fast each record is. A page of the pass costs three queries
whatever the number of tenants in it, and each walker sees what the tenant-by-tenant walk
feeds it (its records past its base up to the head read before the pass, merged with its
gaps by place), so the verdicts are the same.

A tenant with chained records and no head row had its head deleted: that is a break (the
walk would otherwise stop at place 0 and call an emptied chain intact).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Mapping, Sequence
from typing import Any, Final

from hookgate.store.base import Caller
from hookgate.store.chain import (
    GENESIS,
    HASHED_SELECT,
    ChainBreak,
    ChainHead,
    ChainReport,
    ChainWalker,
    TenantChain,
)
from hookgate.store.sql import dispatches
from hookgate.store.sql.base import Sql
from hookgate.store.sql.dispatches import (
    HOOK_ROWS_SELECT,
    DispatchTable,
    Fetch,
    found_hook_rows,
    hashed_hook_columns,
    tenant_verdict,
    walk_page,
)

__all__ = [
    "ChainVerify",
    "GAPS",
    "GAPS_REST",
    "HOOK_ROWS",
    "PG_HOOK_ROWS",
    "RECORDS",
    "START",
    "UNCHAINED",
    "TenantsPass",
    "walk_tenants_here",
]

#: The key before every chained record: (tenant_id, chain_seq), places start at 1.
START: Final = ("", 0)
_AFTER: Final = "(tenant_id, chain_seq) > (?, ?)"
_SPAN: Final = f"{_AFTER} AND (tenant_id, chain_seq) <= (?, ?)"
#: The next page of chained records after a key (the index on (tenant_id, chain_seq)).
RECORDS: Final = (
    f"SELECT seq, chain_seq, prev_hash, record_hash, {HASHED_SELECT} FROM dispatch_records "
    f"WHERE chain_seq IS NOT NULL AND {_AFTER} ORDER BY tenant_id, chain_seq LIMIT ?"
)
#: The gaps in a page's span (after its first key, up to its last record's).
GAPS: Final = (
    "SELECT tenant_id, chain_seq, prev_hash, record_hash FROM audit_chain_gaps "
    f"WHERE {_SPAN} ORDER BY tenant_id, chain_seq"
)
#: The gaps after the last page's first key (those past every record included).
GAPS_REST: Final = (
    "SELECT tenant_id, chain_seq, prev_hash, record_hash FROM audit_chain_gaps "
    f"WHERE {_AFTER} ORDER BY tenant_id, chain_seq"
)
#: The hook rows of a page's records (see dispatches' page queries for why two forms).
HOOK_ROWS: Final = (
    f"SELECT h.seq, {hashed_hook_columns('h.')} FROM dispatch_records d "
    "JOIN hook_executions h ON h.dispatch_id = d.id WHERE d.chain_seq IS NOT NULL AND "
    "(d.tenant_id, d.chain_seq) > (?, ?) AND (d.tenant_id, d.chain_seq) <= (?, ?) "
    "AND d.hook_rows IS NOT NULL"
)
PG_HOOK_ROWS: Final = (
    f"{HOOK_ROWS_SELECT} WHERE dispatch_id = ANY(ARRAY(SELECT id FROM dispatch_records "
    f"WHERE chain_seq IS NOT NULL AND {_SPAN} AND hook_rows IS NOT NULL))"
)
#: Records from before the chain, per tenant.
UNCHAINED: Final = (
    "SELECT tenant_id, count(*) AS records FROM dispatch_records WHERE chain_seq IS NULL "
    "GROUP BY tenant_id"
)
_TENANT: Final = 5  # a record row's tenant_id (after seq and the links, then id)


def _key(row: Sequence[Any]) -> tuple[str, int]:
    return str(row[_TENANT]), int(row[1])


class TenantsPass:
    """The walkers of one pass, fed page by page."""

    def __init__(self, heads: Mapping[str, ChainHead]) -> None:
        self.walkers = {name: ChainWalker(head) for name, head in heads.items()}

    @staticmethod
    def span(rows: Sequence[Sequence[Any]], after: tuple[str, int]) -> tuple[Any, ...] | None:
        """The arguments bounding a page's gaps and hook rows; None: no records in it."""
        return (*after, *_key(rows[-1])) if rows else None

    def feed(
        self,
        rows: Sequence[Sequence[Any]],
        gaps: Sequence[Sequence[Any]],
        hook_rows: Sequence[Sequence[Any]],
    ) -> None:
        """One page: records (``RECORDS``), gaps (tenant first) and hook rows."""
        found = found_hook_rows(hook_rows)
        gaps_of: dict[str, list[Sequence[Any]]] = {}
        for gap in gaps:
            gaps_of.setdefault(gap[0], []).append(gap[1:])
        start, count = 0, len(rows)
        while start < count:
            tenant = rows[start][_TENANT]
            end = start + 1
            while end < count and rows[end][_TENANT] == tenant:
                end += 1
            self._feed_tenant(tenant, rows[start:end], gaps_of.pop(tenant, []), found)
            start = end
        for tenant, rest in gaps_of.items():
            self._feed_tenant(tenant, (), rest, found)

    def _feed_tenant(
        self,
        tenant: str,
        rows: Sequence[Sequence[Any]],
        gaps: Sequence[Sequence[Any]],
        found: Mapping[str, str],
    ) -> None:
        walker = self.walkers.get(tenant)
        if walker is None or walker.problem is not None:
            return  # a tenant newer than the heads read (the next check's), or already broken
        low, high = walker.head.base_seq, walker.head.seq
        # This check covers places past the base up to the head read before the pass.
        if rows and (rows[0][1] <= low or rows[-1][1] > high):
            rows = [row for row in rows if low < row[1] <= high]
        if gaps and (gaps[0][0] <= low or gaps[-1][0] > high):
            gaps = [gap for gap in gaps if low < gap[0] <= high]
        walk_page(walker, rows, gaps, found)

    def verdicts(self, unchained: Mapping[str, int]) -> dict[str, TenantChain]:
        """After the last page: each chain must end at its head."""
        verdicts: dict[str, TenantChain] = {}
        for name, walker in self.walkers.items():
            walker.finish()
            verdicts[name] = tenant_verdict(walker.head, walker, unchained.get(name, 0))
        return verdicts


def walk_tenants_here(
    fetch: Fetch, heads: Mapping[str, ChainHead], hook_rows: str = HOOK_ROWS
) -> dict[str, TenantChain]:
    """The pass in the calling thread (SQLite's way, on one read transaction)."""
    walkers = TenantsPass(heads)
    after: tuple[str, int] = START
    while True:
        rows = fetch(RECORDS, *after, dispatches.VERIFY_PAGE)
        full = len(rows) == dispatches.VERIFY_PAGE
        span = walkers.span(rows, after)
        gaps = fetch(GAPS, *span) if full and span else fetch(GAPS_REST, *after)
        walkers.feed(rows, gaps, fetch(hook_rows, *span) if span else ())
        if not full:
            break
        after = _key(rows[-1])
    return walkers.verdicts({str(name): int(count) for name, count in fetch(UNCHAINED)})


def _headless(tenant: str) -> TenantChain:
    return TenantChain(
        tenant,
        0,
        None,
        ChainBreak(
            1,
            None,
            "removed",
            "the tenant has chained records but no head: its head row was deleted",
        ),
    )


class ChainVerify(DispatchTable):
    """:meth:`verify_chain` over the dispatch table's chain queries."""

    #: The hook rows of a page of the pass (PostgreSQL's planner needs its own form).
    _pass_hook_rows: str = HOOK_ROWS

    async def verify_chain(self, caller: Caller, tenant_id: str | None = None) -> ChainReport:
        """Walk each visible tenant's chain from its base to its head (see
        :class:`~hookgate.store.chain.ChainWalker`); the first break per tenant."""
        started = time.perf_counter()
        tenant = tenant_id if caller.master else caller.tenant_id
        heads = {head.tenant_id: head for head in await self.chain_heads(caller, tenant)}
        headless: list[str] = []
        async with self._read() as sql:
            for name in await self._chained_tenants(sql, tenant) - heads.keys():
                now = await self._head_of(sql, name)  # None: not one written since either
                if now is None:
                    headless.append(name)
                else:
                    heads[name] = now
            if tenant is not None and tenant not in heads and not headless:
                heads[tenant] = ChainHead(tenant, 0, GENESIS)  # no chain at all
            if len(heads) > 1:
                verdicts = await self._verify_tenants(sql, heads)
            else:
                verdicts = {name: await self._verify_tenant(sql, h) for name, h in heads.items()}
            for name, verdict in list(verdicts.items()):
                if not verdict.intact:
                    # Retention may have moved the base while we walked: check once more.
                    now = await self._head_of(sql, name)
                    if now is not None and now.base_seq != heads[name].base_seq:
                        verdicts[name] = await self._verify_tenant(sql, now)
        verdicts.update((name, _headless(name)) for name in headless)
        return ChainReport(
            tuple(verdicts[name] for name in sorted(verdicts)), time.perf_counter() - started
        )

    async def _chained_tenants(self, sql: Sql, tenant: str | None) -> set[str]:
        if tenant is None:
            rows = await sql.fetch(
                "SELECT DISTINCT tenant_id FROM dispatch_records WHERE chain_seq IS NOT NULL"
            )
            return {str(row["tenant_id"]) for row in rows}
        found = await sql.fetchval(
            "SELECT count(*) FROM (SELECT 1 FROM dispatch_records "
            "WHERE tenant_id = ? AND chain_seq IS NOT NULL LIMIT 1) one",
            tenant,
        )
        return {tenant} if found else set()

    async def _verify_tenants(
        self, sql: Sql, heads: Mapping[str, ChainHead]
    ) -> dict[str, TenantChain]:
        """The pass on the event loop's connection, the next page read while one is hashed."""
        walkers = TenantsPass(heads)
        reading = asyncio.ensure_future(self._pass_page(sql, START))
        try:
            while True:
                rows, gaps, hook_rows = await reading
                full = len(rows) == dispatches.VERIFY_PAGE
                if full:
                    reading = asyncio.ensure_future(self._pass_page(sql, _key(rows[-1])))
                # (the module's name: a test lowers it to take the threaded path)
                if len(rows) >= dispatches._WALK_INLINE_MAX:
                    await asyncio.to_thread(walkers.feed, rows, gaps, hook_rows)
                else:
                    walkers.feed(rows, gaps, hook_rows)
                if not full:
                    break
        finally:
            if not reading.done():
                reading.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await reading
        unchained = await sql.fetch(UNCHAINED)
        return walkers.verdicts({str(row["tenant_id"]): int(row["records"]) for row in unchained})

    async def _pass_page(
        self, sql: Sql, after: tuple[str, int]
    ) -> tuple[Sequence[Sequence[Any]], Sequence[Sequence[Any]], Sequence[Sequence[Any]]]:
        page = dispatches.VERIFY_PAGE
        rows: Sequence[Sequence[Any]] = await sql.fetch(RECORDS, *after, page)  # type: ignore[assignment]
        span = TenantsPass.span(rows, after)
        if len(rows) == page and span:
            gaps = await sql.fetch(GAPS, *span)
        else:
            gaps = await sql.fetch(GAPS_REST, *after)
        hook_rows = await sql.fetch(self._pass_hook_rows, *span) if span else []
        return rows, gaps, hook_rows  # type: ignore[return-value]
