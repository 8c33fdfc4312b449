"""Persist circuit-breaker changes so the panel (and other replicas) can show them.

``BreakerBoard(on_change=BreakerRecorder(store))``: the board calls back synchronously on
the engine's loop; the recorder schedules the write and never lets a storage error reach
the hook chain.
"""

from __future__ import annotations

import asyncio
import time

from hookgate.log import log_event
from hookgate.safeguards import BreakerStatus
from hookgate.store.base import BreakerSnapshot, Caller, NotFound, Store

__all__ = ["BreakerRecorder"]


class BreakerRecorder:
    def __init__(self, store: Store) -> None:
        self.store = store
        self._tasks: set[asyncio.Task[None]] = set()

    def __call__(self, hook_id: str, status: BreakerStatus) -> None:
        snapshot = BreakerSnapshot(
            state=status.state,
            recent_faults=len(status.faults),
            last_fault=status.last_fault,
            changed_at=time.time(),
        )
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            log_event("hookgate.store.breaker_not_saved", hook_id=hook_id, reason="no event loop")
            return
        task = loop.create_task(self._save(hook_id, snapshot))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _save(self, hook_id: str, snapshot: BreakerSnapshot) -> None:
        try:
            await self.store.save_breaker_state(Caller.system(), hook_id, snapshot)
        except NotFound:
            return  # a code-registered hook, or deleted meanwhile: nothing to show
        except Exception as exc:
            log_event("hookgate.store.breaker_not_saved", hook_id=hook_id, error=str(exc))

    async def drain(self) -> None:
        """Wait for the writes already scheduled (shutdown, tests)."""
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)
