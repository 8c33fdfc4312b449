"""Retention: delete execution rows older than a number of days.

``HOOKGATE_RETENTION_DAYS`` (default 30; ``0`` keeps everything) sets the window. The
gateway runs :class:`RetentionTask` in the background; ``hookgate db prune`` runs it once.
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

__all__ = ["DEFAULT_RETENTION_DAYS", "RETENTION_ENV", "RetentionTask", "prune", "retention_days"]

RETENTION_ENV: Final = "HOOKGATE_RETENTION_DAYS"
DEFAULT_RETENTION_DAYS: Final = 30.0
_DAY_S: Final = 86_400.0


def retention_days(environ: Mapping[str, str] | None = None) -> float:
    env = os.environ if environ is None else environ
    text = env.get(RETENTION_ENV, "").strip()
    if not text:
        return DEFAULT_RETENTION_DAYS
    try:
        days = float(text)
    except ValueError:
        raise StoreError(f"{RETENTION_ENV} must be a number of days, got {text!r}") from None
    if days < 0:
        raise StoreError(f"{RETENTION_ENV} cannot be negative ({days:g})")
    return days


async def prune(store: Store, days: float, *, now: float | None = None) -> int:
    """Delete every tenant's rows older than ``days``; ``0`` deletes nothing."""
    if days <= 0:
        return 0
    cutoff = (time.time() if now is None else now) - days * _DAY_S
    return await store.prune_executions(Caller.system(), cutoff)


class RetentionTask:
    """Prune every ``interval_s`` (default hourly) while the gateway runs."""

    def __init__(self, store: Store, days: float, *, interval_s: float = 3600.0) -> None:
        self.store = store
        self.days = days
        self.interval_s = interval_s
        self.pruned = 0
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        if self._task is None and self.days > 0:
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
                self.pruned += count
                if count:
                    log_event("hookgate.store.pruned", rows=count, days=self.days)
            except Exception as exc:
                log_event("hookgate.store.prune_failed", error=str(exc))
            await asyncio.sleep(self.interval_s)
