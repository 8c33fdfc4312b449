"""Execution history: dedup, isolation, filters, cursor pagination, retention."""

from __future__ import annotations

import asyncio
import sqlite3
import time
from pathlib import Path

import pytest
from tests.store.conftest import StoreFactory, hook
from tests.store.helpers import row

from hookgate.store import Caller, ExecutionQuery, NotFound, StoreError
from hookgate.store.base import ExecutionRow, Store
from hookgate.store.retention import prune, retention_days
from hookgate.store.sqlite import SqliteStore

MASTER = Caller.master_scope()
A = Caller.for_tenant("tenant-a")
B = Caller.for_tenant("tenant-b")


async def test_retried_writes_never_double_a_row(store: Store) -> None:
    rows = [row(n) for n in range(10)]
    assert await store.write_executions(rows) == 10
    assert await store.write_executions(rows) == 0
    # a retry that overlaps a new batch inserts only the new rows
    assert await store.write_executions(rows[5:] + [row(10), row(11)]) == 2
    # duplicates inside one batch count once
    assert await store.write_executions([row(12), row(12, id="other")]) == 1
    page = await store.query_executions(MASTER, ExecutionQuery(limit=100))
    assert len(page.items) == 13
    assert len({r.dedup_key for r in page.items}) == 13


async def test_rows_survive_their_hook_with_a_null_hook_id(store: Store) -> None:
    created = await store.create_hook(A, hook(name="guard"))
    await store.write_executions([row(1, hook_id=created.id, dedup_key=f"{created.id}:1")])
    await store.delete_hook(A, created.id)
    # a late row for the deleted hook is kept too, with hook_id NULL
    await store.write_executions([row(2, hook_id=created.id, dedup_key=f"{created.id}:2")])
    page = await store.query_executions(A, ExecutionQuery())
    assert [(r.event_id, r.hook_id, r.hook_name) for r in page.items] == [
        ("ev-2", None, "guard"),
        ("ev-1", None, "guard"),
    ]


async def test_tenants_see_only_their_executions(store: Store) -> None:
    await store.write_executions(
        [row(1, tenant_id="tenant-a"), row(2, tenant_id="tenant-b"), row(3, tenant_id="tenant-a")]
    )
    mine = await store.query_executions(A, ExecutionQuery())
    assert [r.event_id for r in mine.items] == ["ev-3", "ev-1"]
    theirs = await store.query_executions(B, ExecutionQuery())
    assert [r.event_id for r in theirs.items] == ["ev-2"]
    # a tenant cannot widen its scope with the tenant filter; master can narrow
    sneaky = await store.query_executions(A, ExecutionQuery(tenant_id="tenant-b"))
    assert [r.event_id for r in sneaky.items] == ["ev-3", "ev-1"]
    narrowed = await store.query_executions(MASTER, ExecutionQuery(tenant_id="tenant-b"))
    assert [r.event_id for r in narrowed.items] == ["ev-2"]
    with pytest.raises(NotFound):
        await store.get_execution(A, theirs.items[0].id)
    assert (await store.get_execution(B, theirs.items[0].id)).event_id == "ev-2"
    # pruning as a tenant touches only that tenant's rows
    assert await store.prune_executions(A, time.time() + 10) == 2
    assert len((await store.query_executions(MASTER, ExecutionQuery())).items) == 1


async def test_filters_per_hook_session_decision_event_and_time(store: Store) -> None:
    t0 = 1_700_000_000.0
    await store.write_executions(
        [
            row(1, hook_name="a", session_id="s1", decision="allow", created_at=t0),
            row(2, session_id="s1", decision="block", event="post_tool_use", created_at=t0 + 10),
            row(3, session_id="s2", decision="block", created_at=t0 + 20),
            row(4, session_id="s2", decision="error", created_at=t0 + 30),
        ]
    )

    async def ids(**query: object) -> list[str]:
        page = await store.query_executions(A, ExecutionQuery(**query))  # type: ignore[arg-type]
        return [r.event_id for r in page.items]

    assert await ids(session_id="s1") == ["ev-2", "ev-1"]
    assert await ids(decision="block") == ["ev-3", "ev-2"]
    assert await ids(event="post_tool_use") == ["ev-2"]
    assert await ids(since=t0 + 10, until=t0 + 30) == ["ev-3", "ev-2"]
    assert await ids(session_id="s2", decision="block") == ["ev-3"]
    created = await store.create_hook(A, hook(name="h"))
    await store.write_executions([row(5, hook_id=created.id)])
    assert await ids(hook_id=created.id) == ["ev-5"]


async def test_pagination_stays_correct_while_rows_are_added(make_store: StoreFactory) -> None:
    reader = await make_store()
    writer = await make_store()
    await writer.write_executions([row(n, dedup_key=f"old-{n}") for n in range(95)])
    seen: list[str] = []
    cursor: str | None = None
    added = 0

    async def add_more() -> None:
        nonlocal added
        for burst in range(10):
            await writer.write_executions(
                [row(1000 + burst * 5 + i, dedup_key=f"new-{burst}-{i}") for i in range(5)]
            )
            added += 5
            await asyncio.sleep(0)

    adder = asyncio.create_task(add_more())
    while True:
        page = await reader.query_executions(A, ExecutionQuery(limit=10, cursor=cursor))
        seen.extend(r.dedup_key for r in page.items)
        await asyncio.sleep(0)
        if page.next_cursor is None:
            break
        cursor = page.next_cursor
    await adder
    old = [key for key in seen if key.startswith("old-")]
    # every row that existed at the start is seen exactly once, newest first
    assert old == [f"old-{n}" for n in reversed(range(95))]
    assert len(seen) == len(set(seen))
    assert added == 50


async def test_a_bad_cursor_is_refused(store: Store) -> None:
    with pytest.raises(StoreError, match="invalid history cursor"):
        await store.query_executions(A, ExecutionQuery(cursor="%%%"))


async def test_page_size_is_clamped(store: Store) -> None:
    await store.write_executions([row(n) for n in range(3)])
    page = await store.query_executions(A, ExecutionQuery(limit=0))
    assert len(page.items) == 1 and page.next_cursor is not None


async def test_retention_prunes_old_rows(store: Store) -> None:
    now = time.time()
    day = 86_400.0
    await store.write_executions(
        [
            row(1, created_at=now - 40 * day),
            row(2, created_at=now - 31 * day, tenant_id="tenant-b"),
            row(3, created_at=now - 29 * day),
            row(4, created_at=now),
        ]
    )
    assert await prune(store, 0) == 0  # 0 keeps everything
    assert await prune(store, 30, now=now) == 2
    left = await store.query_executions(MASTER, ExecutionQuery())
    assert sorted(r.event_id for r in left.items) == ["ev-3", "ev-4"]


def test_retention_setting_from_the_environment() -> None:
    assert retention_days({}) == 30
    assert retention_days({"HOOKGATE_RETENTION_DAYS": "7.5"}) == 7.5
    with pytest.raises(StoreError, match="number of days"):
        retention_days({"HOOKGATE_RETENTION_DAYS": "week"})
    with pytest.raises(StoreError, match="negative"):
        retention_days({"HOOKGATE_RETENTION_DAYS": "-1"})


async def test_sqlite_batches_wait_for_another_process_lock(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path)
    await store.open()
    await store.migrate()
    other = sqlite3.connect(tmp_path / "hookgate.db", isolation_level=None)
    try:
        other.execute("BEGIN IMMEDIATE")  # another process is writing

        async def release_later() -> None:
            await asyncio.sleep(0.3)
            other.execute("COMMIT")

        releaser = asyncio.create_task(release_later())
        started = time.perf_counter()
        # small enough for the loop-thread path, which must not wait: the thread path does
        assert await store.write_executions([row(1), row(2)]) == 2
        assert time.perf_counter() - started >= 0.25
        await releaser
        page = await store.query_executions(MASTER, ExecutionQuery())
        assert [r.event_id for r in page.items] == ["ev-2", "ev-1"]
    finally:
        other.close()
        await store.close()


async def test_large_batches_dedup_and_null_deleted_hooks_too(store: Store) -> None:
    # Past 500 rows PostgreSQL switches from one INSERT … unnest to COPY: same rules.
    gone = await store.create_hook(A, hook(name="gone"))
    await store.delete_hook(A, gone.id)
    rows = [row(n, hook_id=gone.id if n % 2 else None) for n in range(1200)]
    assert await store.write_executions(rows) == 1200
    assert await store.write_executions(rows[:700] + [row(5000)]) == 1
    seen: list[ExecutionRow] = []
    cursor = None
    while True:
        page = await store.query_executions(A, ExecutionQuery(limit=1000, cursor=cursor))
        seen.extend(page.items)
        if page.next_cursor is None:
            break
        cursor = page.next_cursor
    assert len(seen) == 1201
    assert all(r.hook_id is None for r in seen)
    # insertion order is kept within a batch
    assert [r.event_id for r in seen[-3:]] == ["ev-2", "ev-1", "ev-0"]


async def test_a_large_batch_keeps_order_dedup_and_hook_links(store: Store) -> None:
    # Larger than one SQLite statement (1,800 rows) and than PostgreSQL's unnest path, so
    # rows cross statement boundaries: order, dedup and the hook link must hold across them.
    live = await store.create_hook(A, hook(name="live"))
    gone = await store.create_hook(A, hook(name="gone"))
    await store.delete_hook(A, gone.id)
    rows = [
        row(
            n,
            hook_id=(live.id, gone.id, None)[n % 3],
            dedup_key=f"key-{n}",
        )
        for n in range(4000)
    ]
    # a duplicate of row 10 near the end, in a later statement than the original
    rows.append(row(10_000, dedup_key="key-10"))
    assert await store.write_executions(rows) == 4000
    assert await store.write_executions(rows[1790:1810]) == 0
    page = await store.query_executions(MASTER, ExecutionQuery(limit=500))
    items = page.items
    # newest first, in the order given, across the statement boundary at row 3,600
    assert [r.event_id for r in items] == [f"ev-{n}" for n in range(3999, 3499, -1)]
    by_event = {r.event_id: r.hook_id for r in items}
    assert by_event["ev-3999"] == live.id
    assert by_event["ev-3998"] is None  # its hook was deleted before the write
    assert by_event["ev-3997"] is None
    assert by_event["ev-3996"] == live.id


async def test_timings_and_hook_name_filter_stay_in_the_callers_tenant(store: Store) -> None:
    now = time.time()
    await store.write_executions([
        row(1, tenant_id="tenant-a", hook_name="guard", decision="block", created_at=now - 10),
        row(2, tenant_id="tenant-a", hook_name="other", created_at=now - 5),
        row(3, tenant_id="tenant-b", hook_name="guard", created_at=now - 1),
        row(4, tenant_id="tenant-a", hook_name="guard", created_at=now - 7200),
    ])
    named = await store.query_executions(A, ExecutionQuery(hook_name="guard"))
    assert [r.event_id for r in named.items] == ["ev-4", "ev-1"]
    # The window bounds the rows; the tenant filter cannot widen a tenant's scope.
    timings = await store.execution_timings(A, "tenant-b", now - 3600, now + 1, 100)
    assert [(t.hook_name, t.decision) for t in timings] == [("other", "allow"), ("guard", "block")]
    assert await store.execution_timings(B, None, now - 3600, now + 1, 100) == tuple(
        t for t in await store.execution_timings(MASTER, "tenant-b", now - 3600, now + 1, 100)
    )
    assert len(await store.execution_timings(MASTER, None, now - 3600, now + 1, 2)) == 2
