"""The ``tenant_hook_budget`` table: each tenant's monthly token budget, rolled over
and deducted in one transaction."""

from __future__ import annotations

import time
from datetime import date
from typing import Any, Literal, cast

from hookgate.llm.budget import (
    BudgetStatus,
    month_start,
    settled_remaining,
    utc_now,
)
from hookgate.store.base import (
    DEFAULT_BUDGET_TOKENS,
    BudgetExceeded,
    Caller,
    Forbidden,
    NotFound,
    TenantBudget,
)
from hookgate.store.sql.base import SqlBackend

__all__ = ["BudgetOp", "BudgetTable"]

BudgetOp = Literal["check", "deduct", "set_total", "reserve", "settle"]


class BudgetTable(SqlBackend):
    """Tenant budgets: check, deduct, set the monthly total."""

    async def budget_apply(
        self,
        tenant_id: str,
        op: BudgetOp,
        amount: int = 0,
        *,
        today: date | None = None,
        default_total: int = DEFAULT_BUDGET_TOKENS,
        reserved: int = 0,
        reserved_month: date | None = None,
    ) -> BudgetStatus:
        """Check, deduct, reserve, settle or set a tenant's budget in one transaction, rolling
        over first.

        ``today`` is any day of the current month (UTC); the SQL budget store passes its
        clock's. Deductions and reservations stop at zero and report what was actually taken.
        ``settle`` replaces ``reserved`` tokens taken in ``reserved_month`` by ``amount`` of
        real usage (see :func:`~hookgate.llm.budget.settled_remaining`).
        """
        if amount < 0:
            what = "set a budget total of" if op == "set_total" else op
            raise ValueError(f"cannot {what} a negative number of tokens ({amount})")
        month = month_start(utc_now()) if today is None else date(today.year, today.month, 1)
        now = time.time()
        async with self._write() as sql:
            await sql.execute(
                "INSERT INTO tenant_hook_budget (tenant_id, month_start, budget_total, "
                "remaining, updated_at) VALUES (?, ?, ?, ?, ?) "
                "ON CONFLICT (tenant_id) DO NOTHING",
                tenant_id,
                self._date_param(month),
                default_total,
                default_total,
                now,
            )
            row = await sql.fetchrow(
                "SELECT month_start, budget_total, remaining FROM tenant_hook_budget "
                f"WHERE tenant_id = ?{self.lock_clause}",
                tenant_id,
            )
            assert row is not None  # inserted above when missing
            stored_month = _as_date(row["month_start"])
            total = int(row["budget_total"])
            remaining = int(row["remaining"])
            if stored_month < month:  # rollover keeps a custom total
                stored_month, remaining = month, total
            taken = 0
            if op in ("deduct", "reserve"):
                taken = min(amount, max(remaining, 0))
                remaining -= taken
            elif op == "settle":
                if stored_month == reserved_month:  # else that month is over: nothing to do
                    remaining, taken = settled_remaining(remaining, total, reserved, amount)
            elif op == "set_total":
                remaining = max(0, remaining + amount - total)
                total = amount
            await sql.execute(
                "UPDATE tenant_hook_budget SET month_start = ?, budget_total = ?, "
                "remaining = ?, updated_at = ? WHERE tenant_id = ?",
                self._date_param(stored_month),
                total,
                remaining,
                now,
                tenant_id,
            )
        return BudgetStatus(tenant_id, stored_month, total, remaining, taken)

    def _budget_scope(self, caller: Caller, tenant_id: str) -> None:
        if not (caller.master or tenant_id == caller.tenant_id):
            raise NotFound(f"no budget for tenant {tenant_id!r}")

    async def get_budget(self, caller: Caller, tenant_id: str) -> TenantBudget:
        self._budget_scope(caller, tenant_id)
        return _tenant_budget(await self.budget_apply(tenant_id, "check"))

    async def deduct_budget(
        self, caller: Caller, tenant_id: str, tokens: int, *, allow_negative: bool = True
    ) -> TenantBudget:
        self._budget_scope(caller, tenant_id)
        if not allow_negative:
            status = await self.budget_apply(tenant_id, "check")
            if tokens > status.remaining:
                raise BudgetExceeded(
                    f"tenant {tenant_id!r} has {status.remaining} tokens left this month, "
                    f"not {tokens}"
                )
        return _tenant_budget(await self.budget_apply(tenant_id, "deduct", tokens))

    async def set_budget_total(self, caller: Caller, tenant_id: str, total: int) -> TenantBudget:
        if not caller.master:
            raise Forbidden("only master scope can set a tenant's budget")
        return _tenant_budget(await self.budget_apply(tenant_id, "set_total", total))


def _as_date(value: Any) -> date:
    if isinstance(value, date):
        return value
    return date.fromisoformat(cast(str, value))


def _tenant_budget(status: BudgetStatus) -> TenantBudget:
    return TenantBudget(
        tenant_id=status.tenant_id,
        month_start=status.month_start.isoformat(),
        budget_total=status.budget_total,
        remaining=status.remaining,
        updated_at=time.time(),
    )
