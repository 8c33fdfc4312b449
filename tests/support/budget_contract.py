"""The behaviour every :class:`hookgate.llm.budget.BudgetStore` must have, as
reusable tests.

A store's test module subclasses :class:`BudgetStoreContract` and provides a ``make_store``
fixture: a callable ``(clock, default_total) -> store`` (or an awaitable of one)::

    class TestSqliteBudget(BudgetStoreContract):
        @pytest.fixture
        def make_store(self, tmp_path):
            return lambda clock, total: SqliteBudgetStore(tmp_path / "db", clock=clock,
                                                          default_total=total)
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable
from datetime import UTC, date, datetime
from typing import Any

from hookgate.llm.budget import BudgetStore


class MonthClock:
    """A UTC clock a test moves across month boundaries."""

    def __init__(self, now: datetime | None = None) -> None:
        self.now = now or datetime(2026, 3, 14, 12, 0, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now

    def next_month(self) -> None:
        if self.now.month == 12:
            year, month = self.now.year + 1, 1
        else:
            year, month = self.now.year, self.now.month + 1
        self.now = self.now.replace(year=year, month=month, day=1, hour=0, minute=0)


class BudgetStoreContract:
    """Tests inherited by every budget store's test class."""

    async def _store(
        self, make_store: Callable[..., Any], clock: MonthClock, total: int = 1000
    ) -> BudgetStore:
        store = make_store(clock, total)
        if inspect.isawaitable(store):
            store = await store
        assert isinstance(store, BudgetStore)
        return store

    async def test_new_tenant_gets_the_default_total(self, make_store: Any) -> None:
        store = await self._store(make_store, MonthClock())
        status = await store.check("tenant-a")
        assert (status.budget_total, status.remaining, status.deducted) == (1000, 1000, 0)
        assert status.month_start == date(2026, 3, 1)
        assert not status.exhausted and not status.low

    async def test_deduct_takes_real_usage_and_check_takes_nothing(self, make_store: Any) -> None:
        store = await self._store(make_store, MonthClock())
        first = await store.deduct("tenant-a", 120)
        assert (first.remaining, first.deducted) == (880, 120)
        await store.check("tenant-a")
        assert (await store.check("tenant-a")).remaining == 880
        zero = await store.deduct("tenant-a", 0)
        assert (zero.remaining, zero.deducted) == (880, 0)

    async def test_overrun_stops_at_zero_and_exhausts(self, make_store: Any) -> None:
        store = await self._store(make_store, MonthClock())
        await store.deduct("tenant-a", 900)
        status = await store.deduct("tenant-a", 500)
        assert (status.remaining, status.deducted) == (0, 100)
        assert status.exhausted
        assert (await store.check("tenant-a")).exhausted

    async def test_tenants_are_isolated(self, make_store: Any) -> None:
        store = await self._store(make_store, MonthClock())
        await store.deduct("tenant-a", 700)
        assert (await store.check("tenant-b")).remaining == 1000
        assert (await store.check("tenant-a")).remaining == 300

    async def test_rollover_refills_and_keeps_a_custom_total(self, make_store: Any) -> None:
        clock = MonthClock()
        store = await self._store(make_store, clock)
        await store.set_total("tenant-a", 5000)
        await store.deduct("tenant-a", 5000)
        await store.deduct("tenant-b", 1000)
        clock.next_month()
        custom = await store.check("tenant-a")
        assert (custom.budget_total, custom.remaining) == (5000, 5000)
        assert custom.month_start == date(2026, 4, 1)
        default = await store.deduct("tenant-b", 10)
        assert (default.budget_total, default.remaining) == (1000, 990)

    async def test_set_total_moves_what_is_left(self, make_store: Any) -> None:
        store = await self._store(make_store, MonthClock())
        await store.deduct("tenant-a", 400)
        raised = await store.set_total("tenant-a", 2000)
        assert (raised.budget_total, raised.remaining) == (2000, 1600)
        lowered = await store.set_total("tenant-a", 300)
        assert (lowered.budget_total, lowered.remaining) == (300, 0)

    async def test_warning_line_is_crossed_once(self, make_store: Any) -> None:
        store = await self._store(make_store, MonthClock())
        above = await store.deduct("tenant-a", 790)
        assert not above.low and not above.crossed_warning
        crossing = await store.deduct("tenant-a", 20)
        assert crossing.low and crossing.crossed_warning
        below = await store.deduct("tenant-a", 20)
        assert below.low and not below.crossed_warning

    async def test_concurrent_deductions_lose_nothing(self, make_store: Any) -> None:
        store = await self._store(make_store, MonthClock(), total=10_000)
        results = await asyncio.gather(*(store.deduct("tenant-a", 7) for _ in range(50)))
        assert sum(r.deducted for r in results) == 350
        assert (await store.check("tenant-a")).remaining == 10_000 - 350

    async def test_reserve_takes_the_cap_and_settle_keeps_real_usage(
        self, make_store: Any
    ) -> None:
        store = await self._store(make_store, MonthClock())
        reservation = await store.reserve("tenant-a", 300)
        assert reservation.tokens == 300 and reservation.status.remaining == 700
        assert (await store.check("tenant-a")).remaining == 700  # held while the call runs
        settled = await store.settle(reservation, 120)
        assert (settled.remaining, settled.deducted) == (880, 120)

    async def test_released_reservation_gives_everything_back(self, make_store: Any) -> None:
        store = await self._store(make_store, MonthClock())
        reservation = await store.reserve("tenant-a", 400)
        released = await store.settle(reservation, 0)
        assert (released.remaining, released.deducted) == (1000, 0)

    async def test_usage_beyond_the_reservation_is_taken_down_to_zero(
        self, make_store: Any
    ) -> None:
        store = await self._store(make_store, MonthClock())
        await store.deduct("tenant-a", 950)
        reservation = await store.reserve("tenant-a", 300)
        assert reservation.tokens == 50  # what was left
        refused = await store.reserve("tenant-a", 300)
        assert refused.tokens == 0 and refused.status.exhausted
        settled = await store.settle(reservation, 280)
        assert (settled.remaining, settled.deducted) == (0, 50)

    async def test_concurrent_reservations_overrun_by_at_most_one_cap(
        self, make_store: Any
    ) -> None:
        store = await self._store(make_store, MonthClock(), total=1200)
        cap, used = 250, 230
        reservations = await asyncio.gather(*(store.reserve("tenant-a", cap) for _ in range(12)))
        granted = [r for r in reservations if r.tokens > 0]
        assert sum(r.tokens for r in granted) == 1200
        # Every granted call spends its real usage; the model bills it all.
        settled = await asyncio.gather(*(store.settle(r, used) for r in granted))
        assert len(granted) == 5 and len(granted) * used <= 1200 + cap
        # Usage beyond a reservation is charged only while tokens are left (down to zero).
        charged = sum(s.deducted for s in settled)
        assert 1200 - 5 * used <= 1200 - charged == (await store.check("tenant-a")).remaining

    async def test_a_reservation_from_a_past_month_is_dropped(self, make_store: Any) -> None:
        clock = MonthClock()
        store = await self._store(make_store, clock)
        reservation = await store.reserve("tenant-a", 600)
        clock.next_month()
        settled = await store.settle(reservation, 100)
        assert (settled.remaining, settled.deducted) == (1000, 0)
