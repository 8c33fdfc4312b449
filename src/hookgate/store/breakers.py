"""Circuit breakers in the store: the state the panel shows, and the shared windows.

``BreakerBoard(on_change=BreakerRecorder(store))``: the board calls back synchronously on
the engine's loop; the recorder schedules the write and never lets a storage error reach
the hook chain.

:class:`SqlBreakerBackend` keeps the breakers gateway replicas share when there is no Redis
(table ``hook_breakers``, migration 0009; see :mod:`hookgate.server.shared_breakers`). Each
step is one transaction with the hook's row locked.
"""

from __future__ import annotations

import asyncio
import json
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal, Protocol

from hookgate.log import log_event
from hookgate.safeguards import BreakerStatus
from hookgate.store.base import BreakerSnapshot, Caller, NotFound, Store

if TYPE_CHECKING:
    from hookgate.store.sql import SqlStore

__all__ = ["BreakerBackend", "BreakerRecorder", "SharedBreaker", "SqlBreakerBackend"]


@dataclass(frozen=True, slots=True)
class SharedBreaker:
    """A hook's breaker as the replicas share it (times are epoch seconds)."""

    state: Literal["closed", "open"]
    opened_at: float | None = None
    last_fault: str | None = None
    recent_faults: int = 0


class BreakerBackend(Protocol):
    """Where the shared windows and states live; every method is atomic per hook."""

    async def fault(
        self, hook_id: str, message: str | None, *, now: float, window_s: float, threshold: int
    ) -> SharedBreaker:
        """Add a fault at ``now``; open the breaker when ``threshold`` faults fall within
        ``window_s`` and it was closed. Returns the breaker after the step."""
        ...

    async def reopen(self, hook_id: str, *, now: float) -> None:
        """A probe failed: open again from ``now``."""
        ...

    async def close(self, hook_id: str) -> None:
        """A probe succeeded, or the hook was reset: no fault, closed."""
        ...

    async def open_breakers(self) -> dict[str, SharedBreaker]:
        """Every breaker that is not closed."""
        ...



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


class SqlBreakerBackend:
    """:class:`BreakerBackend` on a SQL store."""

    def __init__(self, store: SqlStore) -> None:
        self.store = store

    async def fault(
        self, hook_id: str, message: str | None, *, now: float, window_s: float, threshold: int
    ) -> SharedBreaker:
        store = self.store
        async with store._write() as sql:
            await sql.execute(
                "INSERT INTO hook_breakers (hook_id, state, faults, updated_at) "
                "VALUES (?, 'closed', '[]', ?) ON CONFLICT (hook_id) DO NOTHING",
                hook_id, now,
            )
            row = await sql.fetchrow(
                "SELECT state, faults, opened_at, last_fault FROM hook_breakers "
                f"WHERE hook_id = ?{store.lock_clause}",
                hook_id,
            )
            assert row is not None  # inserted above when missing
            # Only the last `threshold` faults within the window can matter: bounded.
            faults = [t for t in json.loads(row["faults"]) if now - t <= window_s]
            faults = [*faults, now][-threshold:]
            state, opened_at = str(row["state"]), row["opened_at"]
            if state != "open" and len(faults) >= threshold:
                state, opened_at = "open", now
            last_fault = message or row["last_fault"]
            await sql.execute(
                "UPDATE hook_breakers SET state = ?, faults = ?, opened_at = ?, last_fault = ?, "
                "updated_at = ? WHERE hook_id = ?",
                state, json.dumps(faults), opened_at, last_fault, now, hook_id,
            )
        return SharedBreaker(
            "open" if state == "open" else "closed",
            float(opened_at) if opened_at is not None else None,
            last_fault,
            len(faults),
        )

    async def reopen(self, hook_id: str, *, now: float) -> None:
        async with self.store._write() as sql:
            await sql.execute(
                "INSERT INTO hook_breakers (hook_id, state, faults, opened_at, updated_at) "
                "VALUES (?, 'open', '[]', ?, ?) ON CONFLICT (hook_id) DO UPDATE SET "
                "state = 'open', opened_at = excluded.opened_at, updated_at = excluded.updated_at",
                hook_id, now, now,
            )

    async def close(self, hook_id: str) -> None:
        async with self.store._write() as sql:
            await sql.execute("DELETE FROM hook_breakers WHERE hook_id = ?", hook_id)

    async def open_breakers(self) -> dict[str, SharedBreaker]:
        async with self.store._read() as sql:
            rows = await sql.fetch(
                "SELECT hook_id, opened_at, last_fault FROM hook_breakers WHERE state = 'open'"
            )
        return {
            str(row["hook_id"]): SharedBreaker(
                "open", float(row["opened_at"]), row["last_fault"]
            )
            for row in rows
            if row["opened_at"] is not None
        }
