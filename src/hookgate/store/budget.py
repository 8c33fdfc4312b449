"""Monthly token budgets in the store: :class:`hookgate.llm.budget.BudgetStore`
over SQL.

Each call is one transaction in the store (a row lock on PostgreSQL, the write lock on
SQLite), so checks, reservations, settlements, deductions and rollovers from many processes
(gateway replicas) never lose an update. The
prompt and agent handlers use this class through the ``BudgetStore`` protocol.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

from hookgate.llm.budget import (
    DEFAULT_MONTHLY_TOKENS,
    BudgetReservation,
    BudgetStatus,
    month_start,
    utc_now,
)
from hookgate.store.base import Store

__all__ = ["SqlBudgetStore"]


class SqlBudgetStore:
    """Per-tenant monthly token budgets kept in a :class:`~hookgate.store.base.Store`."""

    def __init__(
        self,
        store: Store,
        *,
        default_total: int = DEFAULT_MONTHLY_TOKENS,
        clock: Callable[[], datetime] = utc_now,
    ) -> None:
        self.store = store
        self.default_total = default_total
        self.clock = clock

    async def check(self, tenant_id: str) -> BudgetStatus:
        return await self.store.budget_apply(
            tenant_id, "check", today=month_start(self.clock()), default_total=self.default_total
        )

    async def deduct(self, tenant_id: str, tokens: int) -> BudgetStatus:
        return await self.store.budget_apply(
            tenant_id,
            "deduct",
            tokens,
            today=month_start(self.clock()),
            default_total=self.default_total,
        )

    async def set_total(self, tenant_id: str, total: int) -> BudgetStatus:
        return await self.store.budget_apply(
            tenant_id,
            "set_total",
            total,
            today=month_start(self.clock()),
            default_total=self.default_total,
        )

    async def reserve(self, tenant_id: str, tokens: int) -> BudgetReservation:
        status = await self.store.budget_apply(
            tenant_id,
            "reserve",
            tokens,
            today=month_start(self.clock()),
            default_total=self.default_total,
        )
        return BudgetReservation(tenant_id, status.month_start, status.deducted, status)

    async def settle(self, reservation: BudgetReservation, used: int) -> BudgetStatus:
        return await self.store.budget_apply(
            reservation.tenant_id,
            "settle",
            used,
            today=month_start(self.clock()),
            default_total=self.default_total,
            reserved=reservation.tokens,
            reserved_month=reservation.month_start,
        )
