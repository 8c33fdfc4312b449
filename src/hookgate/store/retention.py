"""Retention: delete execution rows and dispatch records older than a number of days.

``HOOKGATE_RETENTION_DAYS`` (default 30; ``0`` keeps everything) sets the window.
``HOOKGATE_RETENTION_UNMATCHED_DAYS`` sets a shorter one for the records of dispatches no hook
matched (the bulk of a busy gateway's records; default: the same window). The gateway runs
:class:`RetentionTask` in the background; ``hookgate db prune`` runs it once.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
from collections.abc import Mapping
from typing import Final

from hookgate.log import log_event
from hookgate.store.base import Caller, Store, StoreError

__all__ = [
    "DEFAULT_RETENTION_DAYS",
    "RETENTION_ENV",
    "UNMATCHED_RETENTION_ENV",
    "RetentionTask",
    "prune",
    "prune_dispatches",
    "retention_days",
    "unmatched_retention_days",
]

RETENTION_ENV: Final = "HOOKGATE_RETENTION_DAYS"
UNMATCHED_RETENTION_ENV: Final = "HOOKGATE_RETENTION_UNMATCHED_DAYS"
DEFAULT_RETENTION_DAYS: Final = 30.0
_DAY_S: Final = 86_400.0


def _days(env: Mapping[str, str], name: str, default: float | None) -> float | None:
    text = env.get(name, "").strip()
    if not text:
        return default
    try:
        days = float(text)
    except ValueError:
        raise StoreError(f"{name} must be a number of days, got {text!r}") from None
    if days < 0:
        raise StoreError(f"{name} cannot be negative ({days:g})")
    return days


def retention_days(environ: Mapping[str, str] | None = None) -> float:
    days = _days(os.environ if environ is None else environ, RETENTION_ENV, DEFAULT_RETENTION_DAYS)
    assert days is not None
    return days


def unmatched_retention_days(environ: Mapping[str, str] | None = None) -> float | None:
    """The window for records of dispatches no hook matched (None: the general one)."""
    return _days(os.environ if environ is None else environ, UNMATCHED_RETENTION_ENV, None)


async def prune(store: Store, days: float, *, now: float | None = None) -> int:
    """Delete every tenant's execution rows older than ``days`` (``0`` deletes nothing);
    the number deleted. Dispatch records follow: :func:`prune_dispatches`."""
    if days <= 0:
        return 0
    cutoff = (time.time() if now is None else now) - days * _DAY_S
    return await store.prune_executions(Caller.system(), cutoff)


async def prune_dispatches(
    store: Store, days: float, unmatched_days: float | None = None, *, now: float | None = None
) -> int:
    """Delete dispatch records older than ``days``, and those no hook matched older than
    ``unmatched_days`` (``0`` keeps, ``None``: as ``days``); the number deleted."""
    clock = time.time() if now is None else now
    count = 0
    if days > 0:
        count += await store.prune_dispatches(Caller.system(), clock - days * _DAY_S)
    if unmatched_days and (days <= 0 or unmatched_days < days):
        count += await store.prune_dispatches(
            Caller.system(), clock - unmatched_days * _DAY_S, unmatched_only=True
        )
    return count


class RetentionTask:
    """Prune every ``interval_s`` (default hourly) while the gateway runs."""

    def __init__(
        self,
        store: Store,
        days: float,
        *,
        interval_s: float = 3600.0,
        unmatched_days: float | None = None,
    ) -> None:
        self.store = store
        self.days = days
        self.unmatched_days = unmatched_days
        self.interval_s = interval_s
        self.pruned = 0
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        if self._task is None and (self.days > 0 or self.unmatched_days):
            self._task = asyncio.get_running_loop().create_task(
                self._run(), name="hookgate-retention"
            )

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

    async def _run(self) -> None:
        while True:
            try:
                count = await prune(self.store, self.days)
                records = await prune_dispatches(self.store, self.days, self.unmatched_days)
                self.pruned += count + records
                if count or records:
                    log_event(
                        "hookgate.store.pruned",
                        rows=count,
                        dispatch_records=records,
                        days=self.days,
                    )
            except Exception as exc:
                log_event("hookgate.store.prune_failed", error=str(exc))
            await asyncio.sleep(self.interval_s)
