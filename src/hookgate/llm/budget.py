"""Monthly token budgets per tenant for prompt and agent hooks.

A :class:`BudgetStore` holds one row per tenant: the month it covers, the total and what is
left. The rules every implementation keeps (the in-memory one here, the SQLite and
PostgreSQL ones in ``hookgate.store``):

* A tenant without a row has :data:`DEFAULT_MONTHLY_TOKENS` for the current UTC month; the
  row is created on first use.
* :meth:`BudgetStore.check` is the pre-call check: it applies a pending rollover and reports
  what is left. Callers refuse the call when ``status.exhausted``.
* :meth:`BudgetStore.reserve` takes a call's cap (its most tokens) from what is left in one
  atomic step *before* the call, or what is left when that is less; nothing when the budget
  is spent. Concurrent calls therefore share what is left instead of each seeing all of it:
  together they overrun the budget by at most one call's cap.
* :meth:`BudgetStore.settle` replaces a reservation by the *real* usage after the call: the
  unused part goes back (never above the total), usage beyond the reservation is taken down
  to zero. A failed call settles with 0 (the reservation is released). A reservation made in
  a month that has since rolled over is dropped.
* :meth:`BudgetStore.deduct` subtracts real usage in one atomic step without a reservation.
  The tokens were already spent, so an overrun is not refused: ``remaining`` stops at zero
  and ``deducted`` says how much was actually taken.
* Rollover: the first use in a new month resets ``remaining`` to ``budget_total``, and keeps a
  custom total (GoClaw resets it to the default, losing an operator's setting).
* :meth:`BudgetStore.set_total` changes a tenant's total; the difference is added to (or taken
  from) what is left this month.
* A status below :data:`WARN_FRACTION` of the total is ``low``; ``crossed_warning`` is true
  only for the deduction that went below it, so a caller warns once per month.

Implementations take an injectable ``clock`` returning an aware UTC ``datetime`` so tests can
cross a month boundary.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import UTC, date, datetime
from typing import Final, Protocol, runtime_checkable

from hookgate.errors import BudgetError

__all__ = [
    "DEFAULT_MONTHLY_TOKENS",
    "WARN_FRACTION",
    "BudgetExhausted",
    "BudgetReservation",
    "BudgetStatus",
    "BudgetStore",
    "MemoryBudgetStore",
    "month_start",
    "settled_remaining",
    "utc_now",
]

DEFAULT_MONTHLY_TOKENS: Final = 1_000_000
#: Below this share of the total, a budget is "low" and a warning is logged once.
WARN_FRACTION: Final = 0.2


class BudgetExhausted(BudgetError):
    """A tenant has no tokens left this month; the hook must not call the model."""

    def __init__(self, status: BudgetStatus) -> None:
        self.status = status
        super().__init__(
            f"tenant {status.tenant_id!r} has used its monthly token budget of "
            f"{status.budget_total} (month starting {status.month_start.isoformat()})"
        )


def utc_now() -> datetime:
    return datetime.now(UTC)


def month_start(moment: datetime) -> date:
    """The first day of ``moment``'s UTC month."""
    if moment.tzinfo is not None:
        moment = moment.astimezone(UTC)
    return date(moment.year, moment.month, 1)


@dataclass(frozen=True, slots=True)
class BudgetStatus:
    """A tenant's budget after a check or a deduction."""

    tenant_id: str
    month_start: date
    budget_total: int
    remaining: int
    #: Tokens actually taken by the deduction that produced this status (0 for a check).
    deducted: int = 0

    @property
    def exhausted(self) -> bool:
        return self.remaining <= 0

    @property
    def low(self) -> bool:
        return self.remaining < self.budget_total * WARN_FRACTION

    @property
    def crossed_warning(self) -> bool:
        """True only for the deduction that took the budget below the warning line."""
        before = self.remaining + self.deducted
        return self.low and self.deducted > 0 and before >= self.budget_total * WARN_FRACTION


@dataclass(frozen=True, slots=True)
class BudgetReservation:
    """Tokens taken from a tenant's budget before a call, until :meth:`BudgetStore.settle`."""

    tenant_id: str
    month_start: date
    #: Tokens taken (0: the budget was spent and the call must not be made).
    tokens: int
    #: The budget right after the reservation.
    status: BudgetStatus


def settled_remaining(remaining: int, total: int, reserved: int, used: int) -> tuple[int, int]:
    """``(remaining, charged)`` once a reservation of ``reserved`` tokens is replaced by
    ``used``: the unused part goes back (capped at the total), more is taken down to zero."""
    if used <= reserved:
        return min(total, remaining + reserved - used), used
    extra = min(used - reserved, max(remaining, 0))
    return remaining - extra, reserved + extra


@runtime_checkable
class BudgetStore(Protocol):
    """Per-tenant monthly token budgets. Every method is atomic per tenant."""

    async def check(self, tenant_id: str) -> BudgetStatus:
        """The budget as it stands (rollover applied, row created if missing)."""
        ...

    async def deduct(self, tenant_id: str, tokens: int) -> BudgetStatus:
        """Subtract ``tokens`` of real usage, never going below zero."""
        ...

    async def set_total(self, tenant_id: str, total: int) -> BudgetStatus:
        """Give a tenant a custom monthly total (kept across rollovers)."""
        ...

    async def reserve(self, tenant_id: str, tokens: int) -> BudgetReservation:
        """Take up to ``tokens`` (a call's cap) before the call; none when the budget is spent."""
        ...

    async def settle(self, reservation: BudgetReservation, used: int) -> BudgetStatus:
        """Replace a reservation by the real usage (0 releases it); ``deducted`` is the
        call's whole charge."""
        ...


class MemoryBudgetStore:
    """:class:`BudgetStore` in one process's memory (library use and tests)."""

    def __init__(
        self,
        *,
        default_total: int = DEFAULT_MONTHLY_TOKENS,
        clock: Callable[[], datetime] = utc_now,
    ) -> None:
        self.default_total = default_total
        self.clock = clock
        self._rows: dict[str, BudgetStatus] = {}
        # A thread lock, not an asyncio one: the store may be shared by an engine's loop
        # thread and the caller's loop, and no critical section awaits anything.
        self._lock = threading.Lock()

    def _current(self, tenant_id: str) -> BudgetStatus:
        month = month_start(self.clock())
        row = self._rows.get(tenant_id)
        if row is None:
            row = BudgetStatus(tenant_id, month, self.default_total, self.default_total)
        elif row.month_start < month:
            row = BudgetStatus(tenant_id, month, row.budget_total, row.budget_total)
        self._rows[tenant_id] = row
        return row

    async def check(self, tenant_id: str) -> BudgetStatus:
        with self._lock:
            return self._current(tenant_id)

    async def deduct(self, tenant_id: str, tokens: int) -> BudgetStatus:
        if tokens < 0:
            raise ValueError(f"cannot deduct a negative number of tokens ({tokens})")
        with self._lock:
            row = self._current(tenant_id)
            taken = min(tokens, max(row.remaining, 0))
            updated = replace(row, remaining=row.remaining - taken, deducted=0)
            self._rows[tenant_id] = updated
            return replace(updated, deducted=taken)

    async def reserve(self, tenant_id: str, tokens: int) -> BudgetReservation:
        if tokens < 0:
            raise ValueError(f"cannot reserve a negative number of tokens ({tokens})")
        with self._lock:
            row = self._current(tenant_id)
            taken = min(tokens, max(row.remaining, 0))
            updated = replace(row, remaining=row.remaining - taken, deducted=0)
            self._rows[tenant_id] = updated
            return BudgetReservation(
                tenant_id, row.month_start, taken, replace(updated, deducted=taken)
            )

    async def settle(self, reservation: BudgetReservation, used: int) -> BudgetStatus:
        if used < 0:
            raise ValueError(f"cannot settle a negative number of tokens ({used})")
        with self._lock:
            row = self._current(reservation.tenant_id)
            if row.month_start != reservation.month_start:
                return row  # the month the tokens were reserved in is over
            remaining, charged = settled_remaining(
                row.remaining, row.budget_total, reservation.tokens, used
            )
            updated = replace(row, remaining=remaining, deducted=0)
            self._rows[reservation.tenant_id] = updated
            return replace(updated, deducted=charged)

    async def set_total(self, tenant_id: str, total: int) -> BudgetStatus:
        if total < 0:
            raise ValueError(f"a budget total cannot be negative ({total})")
        with self._lock:
            row = self._current(tenant_id)
            remaining = max(0, row.remaining + total - row.budget_total)
            updated = replace(row, budget_total=total, remaining=remaining)
            self._rows[tenant_id] = updated
            return updated
