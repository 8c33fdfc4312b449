"""Breakers shared by replicas: two boards (two "replicas") on one shared backend, in the SQL
store (SQLite and PostgreSQL) and in Redis."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest
from tests.conftest import require_service
from tests.store.conftest import StoreFactory, need_postgres

from hookgate.handlers.prompt.redis_state import connect
from hookgate.safeguards import BreakerBoard
from hookgate.server.redis_breakers import RedisBreakerBackend
from hookgate.server.shared_breakers import SharedBreakers
from hookgate.store.breakers import BreakerBackend, SqlBreakerBackend
from hookgate.testing import FakeClock

REDIS_URL = "redis://127.0.0.1:6379/0"
MakeBackend = Callable[[], Awaitable[BreakerBackend]]


@pytest.fixture(params=["sqlite", "postgres", "redis"])
def backend(request: pytest.FixtureRequest) -> str:
    """Where the shared breakers live (the store fixtures' ``backend``, plus Redis)."""
    if request.param == "postgres":
        need_postgres()
    return str(request.param)


@pytest.fixture
async def make_backend(make_store: StoreFactory, backend: str) -> AsyncIterator[MakeBackend]:
    if backend != "redis":
        store = await make_store()

        async def sql() -> BreakerBackend:
            return SqlBreakerBackend(store)  # type: ignore[arg-type]

        yield sql
        return
    client = connect(REDIS_URL)
    try:
        await client.ping()
        available, why = True, ""
    except Exception as exc:
        available, why = False, str(exc)
    require_service("Redis", available, why)
    prefix = f"hookgate-test-{uuid.uuid4().hex[:12]}:"

    async def redis() -> BreakerBackend:
        return RedisBreakerBackend(client, prefix=prefix)

    yield redis
    keys = [key async for key in client.scan_iter(match=prefix + "*")]
    if keys:
        await client.delete(*keys)
    await client.aclose()


class Replica:
    def __init__(self, backend: BreakerBackend, clock: FakeClock, wall: Callable[[], float]):
        self.board = BreakerBoard(threshold=5, window_s=60, cooldown_s=30, clock=clock)
        self.shared = SharedBreakers(self.board, backend, wall=wall)

    async def fault(self, hook_id: str) -> None:
        self.board.fault(hook_id, "connection refused")
        await self.shared.settle()


async def two_replicas(make_backend: MakeBackend) -> tuple[Replica, Replica, FakeClock]:
    clock = FakeClock()
    backend = await make_backend()

    def wall() -> float:
        return 1_700_000_000.0 + clock()

    return Replica(backend, clock, wall), Replica(backend, clock, wall), clock


async def test_the_threshold_counts_faults_of_every_replica(make_backend: MakeBackend) -> None:
    a, b, _ = await two_replicas(make_backend)
    for n in range(4):
        await (a if n % 2 else b).fault("h1")
    assert a.board.admit("h1") == "closed" and b.board.admit("h1") == "closed"
    await a.fault("h1")  # the fifth in total: a has seen only three
    assert a.board.status("h1").state == "open"
    await b.shared.sync_once()
    assert b.board.admit("h1") == "open"
    assert b.board.status("h1").last_fault == "connection refused"


async def test_a_reset_and_a_successful_probe_close_it_everywhere(
    make_backend: MakeBackend,
) -> None:
    a, b, clock = await two_replicas(make_backend)
    for _ in range(5):
        await a.fault("h1")
    await b.shared.sync_once()
    b.board.reset("h1")  # the hook was re-enabled on b
    await b.shared.settle()
    await a.shared.sync_once()
    assert a.board.admit("h1") == "closed"
    # Open again; the cool-down passes and a's probe succeeds: b closes too.
    for _ in range(5):
        await b.fault("h1")
    await a.shared.sync_once()
    clock.advance(31)
    assert a.board.admit("h1") == "half_open"
    a.board.success("h1")
    await a.shared.settle()
    await b.shared.sync_once()
    assert b.board.admit("h1") == "closed"


async def test_a_failed_probe_reopens_it_everywhere(make_backend: MakeBackend) -> None:
    a, b, clock = await two_replicas(make_backend)
    for _ in range(5):
        await a.fault("h1")
    await b.shared.sync_once()
    clock.advance(31)
    assert a.board.admit("h1") == "half_open"
    await a.fault("h1")  # the probe failed: open for another cool-down, on b too
    await b.shared.sync_once()
    assert b.board.admit("h1") == "open"
    clock.advance(20)
    assert b.board.admit("h1") == "open"  # b's cool-down restarted with a's probe


class _Down:
    """A backend whose store is unreachable."""

    async def fault(self, *args: Any, **kwargs: Any) -> Any:
        raise ConnectionError("refused")

    reopen = close = open_breakers = fault


async def test_without_the_shared_store_faults_count_per_replica() -> None:
    clock = FakeClock()
    board = BreakerBoard(threshold=5, window_s=60, cooldown_s=30, clock=clock)
    shared = SharedBreakers(board, _Down())  # type: ignore[arg-type]
    for _ in range(5):
        board.fault("h1", "boom")
        await shared.settle()
    assert board.admit("h1") == "open"


class _Wedged:
    """A shared store whose reads never return and that does not stop when cancelled (as
    a client stuck deep in a connection can be): only the bound ends the wait."""

    released = False

    async def open_breakers(self) -> dict[str, Any]:
        import asyncio

        while True:
            try:
                await asyncio.Event().wait()
            except asyncio.CancelledError:
                if self.released:  # the test is over
                    raise


async def test_close_is_bounded_and_says_which_part_overran(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    import asyncio
    import logging

    from hookgate.server import shared_breakers

    monkeypatch.setattr(shared_breakers, "CLOSE_TIMEOUT_S", 0.2)
    wedged = _Wedged()
    shared = SharedBreakers(BreakerBoard(), wedged)  # type: ignore[arg-type]
    shared.start()
    loop_task = shared._task
    assert loop_task is not None
    await asyncio.sleep(0)  # the sync loop is in its read
    try:
        with caplog.at_level(logging.INFO, logger="hookgate"):
            await shared.close()
    finally:
        wedged.released = True
        loop_task.cancel()
        await asyncio.wait({loop_task})
    overran = [r for r in caplog.records
               if getattr(r, "event_key", "") == "hookgate.breakers.close_timeout"]
    assert [r.fields["part"] for r in overran] == ["sync loop"]  # type: ignore[attr-defined]
    assert "open_breakers" in overran[0].fields["stack"]  # type: ignore[attr-defined]
