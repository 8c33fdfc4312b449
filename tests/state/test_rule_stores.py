"""Rule counters and stamps on every hook state store: exact under concurrency (two store
objects on one SQLite file, PostgreSQL database or Redis, as two replicas hold them), later
stamps win, tenants apart, expiry."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from tests.conftest import require_service
from tests.server.test_replicas_redis import REDIS_URL
from tests.store.conftest import PG_URL, drop_schema, need_postgres
from tests.support.waiting import wait_until_async

from hookgate.state import FileStateStore, MemoryStateStore
from hookgate.state.rules import RuleKey, RuleStateStore, Stamp
from hookgate.state.shared import RedisStateStore, SqlStateStore
from hookgate.store.postgres import PostgresStore
from hookgate.store.sqlite import SqliteStore

BACKENDS = ("memory", "file", "sqlite", "postgres", "redis")


class Clock:
    def __init__(self) -> None:
        self.now = 2_000_000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture(params=BACKENDS)
async def pair(request: pytest.FixtureRequest, tmp_path: Path
               ) -> AsyncIterator[tuple[RuleStateStore, RuleStateStore, Clock | None]]:
    """Two store objects over the same state (one for the memory store), and the clock they
    share (None for Redis, which expires keys itself)."""
    backend = request.param
    clock = Clock()
    if backend == "memory":
        store = MemoryStateStore(clock=clock)
        yield store, store, clock
    elif backend == "file":
        store = FileStateStore(tmp_path / "state.json", clock=clock)
        yield store, store, clock
    elif backend == "redis":
        from hookgate.handlers.prompt.redis_state import connect

        prefix = f"hgtest-{uuid.uuid4().hex[:8]}:"
        clients = [connect(REDIS_URL), connect(REDIS_URL)]
        try:
            await clients[0].ping()
        except Exception as exc:  # any failure to reach it is "not available"
            require_service("Redis", False, f"{REDIS_URL}: {exc}")
        yield (RedisStateStore(clients[0], prefix=prefix),
               RedisStateStore(clients[1], prefix=prefix), None)
        keys = [key async for key in clients[0].scan_iter(match=f"{prefix}*")]
        if keys:
            await clients[0].delete(*keys)
        for client in clients:
            await client.aclose()
    else:
        schema = f"hgtest_{uuid.uuid4().hex[:12]}"
        stores: list[Any] = []
        for _ in range(2):
            if backend == "sqlite":
                sql: Any = SqliteStore(tmp_path / "data")
            else:
                need_postgres()
                sql = PostgresStore(PG_URL, schema=schema, max_pool=8)
            await sql.open()
            await sql.migrate()
            stores.append(sql)
        yield SqlStateStore(stores[0], clock=clock), SqlStateStore(stores[1], clock=clock), clock
        for sql in stores:
            await sql.close()
        if backend == "postgres":
            await drop_schema(schema)


def counter(tenant: str = "t1", subject: str = "s1") -> RuleKey:
    return RuleKey(tenant, ("limit", "rule-a", "session", subject, 7))


async def test_concurrent_admits_never_overshoot_the_limit(
    pair: tuple[RuleStateStore, RuleStateStore, Clock | None],
) -> None:
    first, second, _ = pair
    key = counter()
    answers = await asyncio.gather(*(
        (first if n % 2 else second).admit(key, 7, 60.0) for n in range(40)))
    admitted = sorted(answer.calls for answer in answers if answer.admitted)
    assert admitted == [1, 2, 3, 4, 5, 6, 7]  # each slot taken once, no lost update
    assert all(answer.calls == 7 for answer in answers if not answer.admitted)
    assert await first.peek(key) == 7 and await second.peek(key) == 7
    # Another tenant, same parts: a counter of its own.
    assert (await second.admit(counter(tenant="t2"), 7, 60.0)).calls == 1


async def test_a_counter_starts_again_once_expired(
    pair: tuple[RuleStateStore, RuleStateStore, Clock | None],
) -> None:
    first, second, clock = pair
    key = counter(subject="expiring")
    ttl = 60.0 if clock is not None else 0.3
    assert (await first.admit(key, 1, ttl)).admitted
    assert not (await second.admit(key, 1, ttl)).admitted
    if clock is not None:
        clock.now += 61
    else:
        await wait_until_async(lambda: _gone(first, key), "the Redis counter expired", 10)
    assert await first.peek(key) == 0
    assert (await second.admit(key, 1, ttl)).calls == 1


async def _gone(store: RuleStateStore, key: RuleKey) -> bool:
    return await store.peek(key) == 0


async def test_the_later_stamp_wins_and_only_live_stamps_are_recalled(
    pair: tuple[RuleStateStore, RuleStateStore, Clock | None],
) -> None:
    first, second, clock = pair
    seen = RuleKey("t1", ("seen", "session", "s1", "^Read$"))
    other_tenant = RuleKey("t2", ("seen", "session", "s1", "^Read$"))
    never = RuleKey("t1", ("seen", "session", "s1", "^Write$"))
    await first.record([Stamp(seen, 2_000_010.5, 600.0)])
    await second.record([Stamp(seen, 2_000_005.0, 600.0)])  # an earlier one arrives late
    assert await second.recall([seen, other_tenant, never]) == {seen: 2_000_010.5}
    await second.record([Stamp(seen, 2_000_020.25, 600.0)])
    assert await first.recall([seen]) == {seen: 2_000_020.25}
    if clock is not None:
        clock.now += 601
        assert await first.recall([seen]) == {}
