"""Audit hash chain benchmarks, per backend.

* Verify: ``store.verify_chain`` over one tenant's chain; goal ≥ 100,000 records/s. Also
  with one to three hook rows per record, as real dispatches have them (each record's hash
  covers them, so verify reads and hashes them too). Per backend: records per second of wall
  time (with the load average) and per CPU second, against the floor on the same rows: the
  driver reading them alone, and reading them plus one SHA-256 per row with no chain logic.
  And every tenant of a store with thousands of five-record chains at once (one pass across
  tenants). Under ``python -m bench.callgrind audit_chain`` each verify is one sample.
* Cost of linking on the write path: dispatch records written in 5,000-row batches through
  ``write_dispatches`` (digests, the locked head, links) against the same rows inserted as
  before the chain (one plain insert, no head, no digests); and the commit time of a
  one-record batch (what ``--audit-mode sync`` waits for) both ways.
* Contention: two store objects (two replicas) writing the same tenant at once.

PostgreSQL rows need the server at ``HOOKGATE_BENCH_DATABASE_URL`` (see bench_store).
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import resource
import sqlite3
import statistics
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass

import orjson

from bench.bench_store import fresh_store, postgres_up
from bench.callgrind import measured
from bench.harness import Row
from hookgate.store.base import Caller, DispatchRow, ExecutionRow, Store
from hookgate.store.postgres import _DISPATCH_INSERT as PG_INSERT
from hookgate.store.postgres import PostgresStore, _rowcount
from hookgate.store.sql import dispatches
from hookgate.store.sql.dispatches import (
    DISPATCH_INSERT,
    LINK_COLUMNS,
    PG_PAGE_HOOK_ROWS,
    dispatch_params,
)
from hookgate.store.sqlite import SqliteStore

VERIFY_GOAL = 100_000.0
BATCH = 5_000
#: ``hook_rows_of``'s "one to three hook rows per record".
MIXED = -1


def dispatch_rows(count: int, tenant: str = "bench") -> list[DispatchRow]:
    now = time.time()
    return [
        DispatchRow(
            id=str(uuid.uuid4()),
            tenant_id=tenant,
            event="pre_tool_use",
            event_id=str(uuid.uuid4()),
            decision="allow" if n % 10 else "block",
            duration_ms=0.042,
            created_at=now + n * 1e-6,
            tool_name="exec",
            agent_id="agent-1",
            session_id=f"s-{n % 100}",
            reason=None if n % 10 else "no rm",
            hooks=[
                {
                    "execution_id": str(n),
                    "hook_name": "no rm",
                    "decision": "allow",
                    "duration_ms": 0.01,
                    "reason": None,
                    "error": None,
                }
            ],
            input_size=120,
            input_hash="ab" * 32,
            input_summary='{"cmd": "ls -la"}',
            detail=b"\x01" * 160,
        )
        for n in range(count)
    ]


def hook_rows_of(records: Sequence[DispatchRow], per_record: int) -> list[ExecutionRow]:
    """``per_record`` hook rows for each dispatch record, as the audit writer stores them;
    ``MIXED``: 1, 2, 3, 1, … (2 on average, as real dispatches run one to three hooks)."""
    return [
        ExecutionRow(
            id=str(uuid.uuid4()),
            hook_id=None,
            hook_version=1,
            hook_name=f"hook {n}",
            handler_type="callable",
            event="pre_tool_use",
            event_id=record.event_id,
            decision=record.decision,
            duration_ms=0.01,
            tenant_id=record.tenant_id,
            agent_id=record.agent_id,
            session_id=record.session_id,
            input_hash=record.input_hash,
            dedup_key=f"hook-{n}:{record.event_id}",
            error=None,
            error_detail=None,
            metadata={"matcher_matched": True},
            created_at=record.created_at,
            tool_name=record.tool_name,
            input_summary=record.input_summary,
            reason=record.reason,
            hook_ref=f"hook-{n}",
            dispatch_id=record.id,
        )
        for index, record in enumerate(records)
        for n in range(index % 3 + 1 if per_record == MIXED else per_record)
    ]


async def write_unchained(store: Store, rows: Sequence[DispatchRow]) -> int:
    """The rows inserted as before the chain: one plain insert, hook rows and links NULL."""
    unlinked = (None,) * len(LINK_COLUMNS.split(","))
    params = [(*dispatch_params(r), *unlinked) for r in rows]
    if store.backend == "postgres":
        pool = store._audit_pool  # type: ignore[attr-defined]
        async with pool.acquire() as conn:
            return _rowcount(await conn.execute(PG_INSERT, *zip(*params, strict=True)))
    async with store._write() as sql:  # type: ignore[attr-defined]
        return int(await sql.executemany(DISPATCH_INSERT, params))


async def batches_per_s(backend: str, count: int, *, chained: bool) -> float:
    rows = dispatch_rows(count)
    async with fresh_store(backend) as store:
        started = time.perf_counter()
        for start in range(0, count, BATCH):
            chunk = rows[start : start + BATCH]
            if chained:
                await store.write_dispatches(chunk)
            else:
                await write_unchained(store, chunk)
        return count / (time.perf_counter() - started)


async def single_commit_ms(backend: str, commits: int) -> dict[str, float]:
    """Median time to commit a one-record batch, chained and not (interleaved)."""
    samples: dict[str, list[float]] = {"chained": [], "plain": []}
    async with fresh_store(backend) as store:
        for _ in range(commits):
            for kind in ("chained", "plain"):
                (row,) = dispatch_rows(1)
                started = time.perf_counter()
                if kind == "chained":
                    await store.write_dispatches([row])
                else:
                    await write_unchained(store, [row])
                samples[kind].append((time.perf_counter() - started) * 1000)
    return {kind: statistics.median(values) for kind, values in samples.items()}


async def two_replicas_per_s(backend: str, count: int) -> tuple[float, bool]:
    """Two store objects write one tenant at once in 500-row batches; the rate and whether
    the chain came out whole."""
    rows = dispatch_rows(count, tenant="shared")
    async with fresh_store(backend) as first:
        second: Store
        if isinstance(first, SqliteStore):
            second = SqliteStore(first.data_dir)
        else:
            assert isinstance(first, PostgresStore)
            second = PostgresStore(first.database_url, schema=first.schema)
        await second.open()
        try:

            async def writes(store: Store, part: list[DispatchRow]) -> None:
                for start in range(0, len(part), 500):
                    await store.write_dispatches(part[start : start + 500])

            half = count // 2
            started = time.perf_counter()
            await asyncio.gather(writes(first, rows[:half]), writes(second, rows[half:]))
            rate = count / (time.perf_counter() - started)
            report = await first.verify_chain(Caller.system(), "shared")
            return rate, report.intact and report.records == count
        finally:
            await second.close()


@dataclass(frozen=True)
class Verified:
    """Records per second of wall time (best of three) and per CPU second of this process
    (every thread; PostgreSQL's server work not counted), and whether the chain held."""

    wall: float
    cpu: float
    whole: bool
    #: The bare floor on the same rows: records per CPU second to read them (and their hook
    #: rows) with the driver alone, and to read them and SHA-256 each row once, no chain logic.
    read_only: float
    read_and_hash: float


def _cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


async def _fill(store: Store, count: int, hooks: int) -> None:
    rows = dispatch_rows(count)
    for start in range(0, count, BATCH):
        chunk = rows[start : start + BATCH]
        if hooks:  # the audit writer commits a batch's hook rows before its records
            await store.write_executions(hook_rows_of(chunk, hooks))
        await store.write_dispatches(chunk)


async def _raw_pages(store: Store, count: int, *, hashed: bool) -> float:
    """CPU seconds to read the chain's records and hook rows page by page with the driver
    (the verifier's queries), and with ``hashed`` orjson-encode and SHA-256 each row once:
    what any check of every stored byte costs before its own logic."""
    records, hook_rows = dispatches._PAGE_RECORDS, dispatches._PAGE_HOOK_ROWS
    sha, dumps, page = hashlib.sha256, orjson.dumps, dispatches.VERIFY_PAGE

    def digest(rows: Sequence[Sequence[object]]) -> None:
        if hashed:
            for row in rows:
                sha(dumps(row[:-1]) + (row[-1] or b"")).hexdigest()  # type: ignore[operator]

    started = _cpu_s()
    if isinstance(store, SqliteStore):
        conn = sqlite3.connect(f"file:{store.path}?mode=ro", uri=True)
        try:
            conn.execute("BEGIN")
            for after in range(0, count, page):
                upper = after + page
                digest(conn.execute(records, ("bench", after, upper, page)).fetchall())
                digest(conn.execute(hook_rows, ("bench", after, upper)).fetchall())
        finally:
            conn.close()
    else:
        assert isinstance(store, PostgresStore)
        async with store._read() as sql:
            for after in range(0, count, page):
                upper = after + page
                digest(await sql.fetch(records, "bench", after, upper, page))  # type: ignore[arg-type]
                digest(await sql.fetch(PG_PAGE_HOOK_ROWS, "bench", after, upper))  # type: ignore[arg-type]
    return _cpu_s() - started


async def verify_per_s(backend: str, count: int, hooks: int = 0) -> Verified:
    async with fresh_store(backend) as store:
        await _fill(store, count, hooks)
        best_wall = best_cpu = 0.0
        whole = True
        for _ in range(3):  # the best of three: the machine is shared
            with measured(f"audit chain:verify {backend} {hooks} hook rows"):
                cpu, started = _cpu_s(), time.perf_counter()
                report = await store.verify_chain(Caller.system(), "bench")
                elapsed, cpu = time.perf_counter() - started, _cpu_s() - cpu
            whole = whole and report.intact and report.records == count
            best_wall = max(best_wall, report.records / elapsed)
            best_cpu = max(best_cpu, report.records / cpu)
        read_only = min([await _raw_pages(store, count, hashed=False) for _ in range(3)])
        read_and_hash = min([await _raw_pages(store, count, hashed=True) for _ in range(3)])
        return Verified(best_wall, best_cpu, whole, count / read_only, count / read_and_hash)


async def many_tenants_per_s(backend: str, tenants: int, per_tenant: int) -> tuple[float, bool]:
    """Records per second of wall time (best of three) verifying every tenant at once, many
    small chains (one pass across tenants, not a walk per tenant)."""
    rows = [row for n in range(tenants) for row in dispatch_rows(per_tenant, tenant=f"t{n:05d}")]
    async with fresh_store(backend) as store:
        for start in range(0, len(rows), BATCH):
            await store.write_dispatches(rows[start : start + BATCH])
        best, whole = 0.0, True
        for _ in range(3):
            started = time.perf_counter()
            report = await store.verify_chain(Caller.system())
            best = max(best, report.records / (time.perf_counter() - started))
            whole = whole and report.intact and report.records == len(rows)
        return best, whole


def _hooks_label(hooks: int) -> str:
    return "1-3 hook rows each" if hooks == MIXED else f"{hooks} hook rows each"


def _verify_rows(backend: str, count: int, hooks: int, found: Verified) -> list[Row]:
    load = os.getloadavg()[0]
    what = f"{backend} ({count:,} records, {_hooks_label(hooks)})"
    broken = "" if found.whole else " BROKEN"
    return [
        Row(
            group="audit chain",
            name=f"verify records/s {what}, wall, load {load:.1f}{broken}",
            value=found.wall / 1000,
            unit="k/s",
            goal=f">= {VERIFY_GOAL / 1000:.0f} k/s",
            passed=found.whole and found.wall >= VERIFY_GOAL,
        ),
        Row(
            group="audit chain",
            name=f"verify records per CPU second {what}{broken}",
            value=found.cpu / 1000,
            unit="k/s",
            baseline=f"read + SHA-256 per row, no chain logic ({found.read_and_hash / 1e3:.0f}k/s)",
            baseline_value=found.read_and_hash / 1000,
            passed=found.whole,
        ),
        Row(
            group="audit chain",
            name=f"floor: read the same rows with the driver alone, per CPU second {what}",
            value=found.read_only / 1000,
            unit="k/s",
        ),
    ]


def run(quick: bool) -> list[Row]:
    count = 20_000 if quick else 100_000
    backends = ["sqlite"] + (["postgres"] if asyncio.run(postgres_up()) else [])
    rows: list[Row] = []
    for backend in backends:
        for hooks in (0, MIXED):
            found = asyncio.run(verify_per_s(backend, count, hooks))
            rows += _verify_rows(backend, count, hooks, found)
        tenants = 400 if quick else 2_000
        rate, whole = asyncio.run(many_tenants_per_s(backend, tenants, 5))
        rows.append(
            Row(
                group="audit chain",
                name=f"verify records/s {backend}, every tenant ({tenants:,} tenants x 5 records)"
                f", wall, load {os.getloadavg()[0]:.1f}" + ("" if whole else " BROKEN"),
                value=rate / 1000,
                unit="k/s",
                passed=whole,
            )
        )
        plain = asyncio.run(batches_per_s(backend, count, chained=False))
        chained = asyncio.run(batches_per_s(backend, count, chained=True))
        rows.append(
            Row(
                group="audit chain",
                name=f"dispatch records written/s {backend}, chained, {BATCH}-row batches",
                value=chained / 1000,
                unit="k/s",
                baseline=f"same rows, plain insert ({plain / 1000:.0f} k/s)",
                baseline_value=plain / 1000,
            )
        )
        commit = asyncio.run(single_commit_ms(backend, 50 if quick else 300))
        rows.append(
            Row(
                group="audit chain",
                name=f"one-record batch commit {backend}, chained (sync mode waits for it)",
                value=commit["chained"],
                unit="ms",
                baseline=f"plain insert ({commit['plain']:.2f} ms)",
                baseline_value=commit["plain"],
            )
        )
        contended, whole = asyncio.run(two_replicas_per_s(backend, count // 2))
        rows.append(
            Row(
                group="audit chain",
                name=f"two replicas on one tenant {backend}, 500-row batches"
                + ("" if whole else " FORKED"),
                value=contended / 1000,
                unit="k/s",
                passed=whole,
            )
        )
    return rows
