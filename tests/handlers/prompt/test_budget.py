"""The in-memory budget store against the shared BudgetStore contract."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

import pytest
from tests.support.budget_contract import BudgetStoreContract

from hookgate.llm.budget import MemoryBudgetStore


class TestMemoryBudgetStore(BudgetStoreContract):
    @pytest.fixture
    def make_store(self) -> Callable[[Callable[[], datetime], int], MemoryBudgetStore]:
        return lambda clock, total: MemoryBudgetStore(clock=clock, default_total=total)


async def test_negative_amounts_are_refused() -> None:
    store = MemoryBudgetStore()
    with pytest.raises(ValueError, match="negative"):
        await store.deduct("t", -1)
    with pytest.raises(ValueError, match="negative"):
        await store.set_total("t", -5)
