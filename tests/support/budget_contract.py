"""The behaviour every :class:`hookgate.handlers.prompt.budget.BudgetStore` must have, as
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

from hookgate.handlers.prompt.budget import BudgetStore


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
