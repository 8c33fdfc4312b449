"""Budgets in both backends: the shared BudgetStore contract, plus cross-process atomicity."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from datetime import datetime

import pytest
from tests.store.conftest import StoreFactory
from tests.support.budget_contract import BudgetStoreContract, MonthClock

from hookgate.llm.budget import BudgetStore
from hookgate.store import BudgetExceeded, Caller, Forbidden, NotFound
from hookgate.store.base import Store
from hookgate.store.budget import SqlBudgetStore


class TestSqlBudgetStore(BudgetStoreContract):
    @pytest.fixture
    def make_store(  # type: ignore[override]
        self, make_store: StoreFactory
    ) -> Callable[[Callable[[], datetime], int], Awaitable[BudgetStore]]:
        async def build(clock: Callable[[], datetime], total: int) -> BudgetStore:
            return SqlBudgetStore(await make_store(), clock=clock, default_total=total)

        return build


async def test_deductions_from_two_processes_are_atomic(make_store: StoreFactory) -> None:
    clock = MonthClock()
    one = SqlBudgetStore(await make_store(), clock=clock, default_total=100_000)
    two = SqlBudgetStore(await make_store(), clock=clock, default_total=100_000)
    results = await asyncio.gather(*((one if n % 2 else two).deduct("t", 3) for n in range(100)))
    assert sum(r.deducted for r in results) == 300
    assert (await one.check("t")).remaining == 100_000 - 300
    # a concurrent rollover happens once: every deduction lands in the new month
    clock.next_month()
    await asyncio.gather(*((one if n % 2 else two).deduct("t", 1) for n in range(20)))
    assert (await two.check("t")).remaining == 100_000 - 20


async def test_budget_api_scoping(store: Store) -> None:
    master = Caller.master_scope()
    tenant = Caller.for_tenant("tenant-a")
    assert (await store.get_budget(tenant, "tenant-a")).remaining == 1_000_000
    with pytest.raises(NotFound):
        await store.get_budget(tenant, "tenant-b")
    with pytest.raises(Forbidden):
        await store.set_budget_total(tenant, "tenant-a", 10**9)
    raised = await store.set_budget_total(master, "tenant-a", 2_000_000)
    assert (raised.budget_total, raised.remaining) == (2_000_000, 2_000_000)
    spent = await store.deduct_budget(tenant, "tenant-a", 500)
    assert spent.remaining == 1_999_500
    with pytest.raises(BudgetExceeded, match="1999500 tokens left"):
        await store.deduct_budget(tenant, "tenant-a", 3_000_000, allow_negative=False)
    assert (await store.get_budget(master, "tenant-a")).remaining == 1_999_500
    with pytest.raises(ValueError, match="negative"):
        await store.deduct_budget(tenant, "tenant-a", -5)
