"""Store benchmarks: audit throughput per backend and mode, and what ``sync`` adds per event.

* Throughput: rows recorded through :class:`AuditWriter` until all are committed, against the
  raw operation (the same rows handed straight to ``write_executions`` in 5,000-row batches).
* Latency: the real engine firing ``pre_tool_use`` (one callable hook, hooks resolved from
  the store) in bursts of 50 concurrent events; an event's latency runs from its burst's
  arrival to its answer. Reported: the median in ``sync`` minus the median in ``async``.

PostgreSQL rows need the server at ``HOOKGATE_BENCH_DATABASE_URL`` (default the local test
database); each run uses a schema of its own and drops it.
"""

from __future__ import annotations

import asyncio
import os
import statistics
import tempfile
import time
import uuid
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path

import asyncpg

from bench.harness import Row
from hookgate.audit import ExecutionRecord
from hookgate.definition_model import validate_definition
from hookgate.engine import Engine
from hookgate.store.audit_writer import AuditMode, AuditWriter
from hookgate.store.base import Caller, Store
from hookgate.store.postgres import PostgresStore
from hookgate.store.resolver import StoreHookSource
from hookgate.store.sqlite import SqliteStore

PG_URL = os.environ.get("HOOKGATE_BENCH_DATABASE_URL", "postgresql://postgres@127.0.0.1:5432/test")
GOALS = {"sqlite": 100_000.0, "postgres": 50_000.0}
CONCURRENCY = 50


def allow(_event: object) -> None:
    return None


@asynccontextmanager
async def fresh_store(backend: str) -> AsyncIterator[Store]:
    if backend == "sqlite":
        with tempfile.TemporaryDirectory() as tmp:
            store: Store = SqliteStore(Path(tmp))
            await store.open()
            await store.migrate()
            try:
                yield store
            finally:
                await store.close()
        return
    schema = f"hgbench_{uuid.uuid4().hex[:10]}"
    store = PostgresStore(PG_URL, schema=schema)
    await store.open()
    try:
        await store.migrate()
        yield store
    finally:
        await store.close()
        conn = await asyncpg.connect(PG_URL)
        try:
            await conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
        finally:
            await conn.close()


def records(count: int, tag: str) -> list[ExecutionRecord]:
    return [
        ExecutionRecord(
            hook_id=f"bench-{n % 8}",
            hook_version=1,
            hook_name="bench",
            handler_type="callable",
            event="pre_tool_use",
            event_id=f"{tag}-{n}",
            decision="allow" if n % 10 else "block",
            duration_ms=0.25,
            tenant_id=f"tenant-{n % 4}",
            agent_id="agent-1",
            session_id=f"session-{n % 100}",
            input_hash="ab" * 32,
            error="tool refused: see detail" if n % 50 == 0 else None,
            metadata={"matcher_matched": True, "stdout_len": 12},
        )
        for n in range(count)
    ]


async def raw_rows_per_s(backend: str, count: int) -> float:
    async with fresh_store(backend) as store:
        writer = AuditWriter(store)  # only for its row conversion
        rows = [writer._row(r) for r in records(count, "raw")]
        started = time.perf_counter()
        for start in range(0, count, 5000):
            await store.write_executions(rows[start : start + 5000])
        return count / (time.perf_counter() - started)


async def writer_rows_per_s(backend: str, mode: AuditMode, count: int) -> float:
    """Rows recorded by events of 4 rows each, until the last is committed."""
    batch = records(count, mode)
    async with fresh_store(backend) as store:
        writer = AuditWriter(store, mode=mode, max_queue=count * 2)
        await writer.start()
        started = time.perf_counter()
        if mode == "async":
            for start in range(0, count, 4):
                writer.record(batch[start : start + 4])
                await writer.wait_durable()
                if start % 4000 == 0:
                    await asyncio.sleep(0)  # let the writer run, as a serving loop would
        else:
            lanes = [batch[lane::CONCURRENCY] for lane in range(CONCURRENCY)]

            async def agent(mine: list[ExecutionRecord]) -> None:
                for start in range(0, len(mine), 4):
                    writer.record(mine[start : start + 4])
                    await writer.wait_durable()

            await asyncio.gather(*(agent(lane) for lane in lanes))
        await writer.close()
        elapsed = time.perf_counter() - started
        assert writer.stats.committed == count, writer.stats
        return count / elapsed


async def fire_latencies_ms(backend: str, mode: AuditMode, events: int) -> list[float]:
    async with fresh_store(backend) as store:
        definition = validate_definition(
            {
                "name": "bench-allow",
                "event": "pre_tool_use",
                "handler_type": "callable",
                "scope": "global",
                "config": {"callable": "bench.bench_store:allow"},
            }
        )
        await store.create_hook(Caller.master_scope(), definition)
        source = StoreHookSource(store, poll_interval_s=0)
        await source.start()
        writer = AuditWriter(store, mode=mode)
        await writer.start()
        engine = Engine(source=source, audit=writer)
        latencies: list[float] = []

        async def event(burst: int, lane: int, arrived: float) -> None:
            outcome = await engine.fire(
                "pre_tool_use",
                tool_name="exec",
                tool_input={"cmd": "ls"},
                tenant_id="tenant-a",
                session_id=f"s-{lane}",
                event_id=f"{mode}-{burst}-{lane}",
            )
            latencies.append((time.perf_counter() - arrived) * 1000)
            assert outcome.decision == "allow"

        async def bursts() -> None:
            # 50 events arrive at once; each one's latency runs from that moment to its
            # answer, so both modes pay for the queueing the burst causes.
            for burst in range(events // CONCURRENCY):
                arrived = time.perf_counter()
                await asyncio.gather(*(event(burst, lane, arrived) for lane in range(CONCURRENCY)))
                await asyncio.sleep(0.005)

        try:
            await bursts()
        finally:
            await engine.aclose()
            await writer.close()
            await source.close()
        return latencies


async def postgres_up() -> bool:
    try:
        conn = await asyncpg.connect(PG_URL, timeout=3)
    except Exception:
        return False
    await conn.close()
    return True


def median_of(runs: int, measure: Callable[[], float]) -> float:
    return statistics.median(measure() for _ in range(runs))


def run(quick: bool) -> list[Row]:
    count = 20_000 if quick else 200_000
    events = 1_000 if quick else 10_000
    runs = 1 if quick else 3
    backends = ["sqlite"] + (["postgres"] if asyncio.run(postgres_up()) else [])
    rows: list[Row] = []
    for backend in backends:
        raw = median_of(runs, lambda b=backend: asyncio.run(raw_rows_per_s(b, count)))  # type: ignore[misc]
        for mode in ("async", "sync"):
            rate = median_of(
                runs,
                lambda b=backend, m=mode: asyncio.run(writer_rows_per_s(b, m, count)),  # type: ignore[misc]
            )
            goal = GOALS[backend] if mode == "async" else None
            rows.append(
                Row(
                    group="store",
                    name=f"audit rows/s {backend} {mode}"
                    + (f" ({CONCURRENCY} agents)" if mode == "sync" else ""),
                    value=rate / 1000,
                    unit="k/s",
                    baseline=f"write_executions, 5000-row batches ({raw / 1000:.0f} k/s)",
                    baseline_value=raw / 1000,
                    goal=f">= {GOALS[backend] / 1000:.0f} k/s" if goal else None,
                    passed=rate >= goal if goal else None,
                )
            )
        medians: dict[str, float] = {}
        for mode in ("async", "sync"):
            samples = asyncio.run(fire_latencies_ms(backend, mode, events))  # type: ignore[arg-type]
            medians[mode] = statistics.median(samples)
            rows.append(
                Row(
                    group="store",
                    name=f"fire median, {CONCURRENCY} concurrent, {backend} {mode}",
                    value=medians[mode],
                    unit="ms",
                )
            )
        added = medians["sync"] - medians["async"]
        rows.append(
            Row(
                group="store",
                name=f"sync adds per event, {backend} ({CONCURRENCY} concurrent)",
                value=added,
                unit="ms",
                baseline="async median",
                baseline_value=medians["async"],
                goal="<= 2 ms",
                passed=added <= 2.0,
            )
        )
    if "postgres" not in backends:
        rows.append(
            Row(group="store", name="postgres rows skipped: server unreachable", value=0, unit="")
        )
    return rows
