"""Circuit breakers shared by gateway replicas: one fault window and one state per hook.

Each replica keeps its :class:`~hookgate.safeguards.BreakerBoard` (the hook chain reads it
synchronously, on its hot path); :class:`SharedBreakers` is the board's
:class:`~hookgate.safeguards.BreakerSync`. A fault is added to the hook's shared window in one
atomic step (a :class:`~hookgate.store.breakers.BreakerBackend`: Redis when the gateway has
``--redis-url``, else the SQL store); the step that reaches the threshold opens the shared
breaker, so a failing hook trips after ``threshold`` faults in total, wherever they happened.
Every replica reads the open breakers every :data:`SYNC_INTERVAL_S` and applies what changed:
an opened breaker, one reopened by a failed probe, one closed by a successful probe or reset
because the hook was re-enabled. ``hooks.dispatch`` answers only once its faults are recorded
(:meth:`SharedBreakers.settle`).

Half-open: when the cool-down is over, each replica lets at most one probe through; the first
verdict is shared (a success closes the breaker everywhere, a fault reopens it everywhere).

The shared store failing is never the hook's fault: its faults are then counted in the
replica's own window (the breaker still works, per replica), and sharing resumes when the
store answers again.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Coroutine
from typing import Any, Final

from hookgate.log import log_event
from hookgate.safeguards import BreakerBoard
from hookgate.store.breakers import BreakerBackend, SharedBreaker

__all__ = ["SYNC_INTERVAL_S", "SharedBreakers"]

#: Seconds between two reads of the shared breakers (the propagation delay's bound).
SYNC_INTERVAL_S: Final = 0.2
#: After the shared store failed, faults are counted locally for this long before trying again.
RETRY_AFTER_S: Final = 1.0
#: How long each part of :meth:`SharedBreakers.close` may take.
CLOSE_TIMEOUT_S: Final = 5.0


class SharedBreakers:
    def __init__(
        self,
        board: BreakerBoard,
        backend: BreakerBackend,
        *,
        sync_interval_s: float = SYNC_INTERVAL_S,
        wall: Callable[[], float] = time.time,
    ) -> None:
        self.board = board
        self.backend = backend
        self.sync_interval_s = sync_interval_s
        self.wall = wall
        #: The shared ``opened_at`` this board last applied, by hook (changes are applied once).
        self._applied: dict[str, float] = {}
        self._pending: set[asyncio.Task[None]] = set()
        self._down_until = 0.0
        self._available = True
        self._task: asyncio.Task[None] | None = None
        board.sync = self

    # -- lifecycle ---------------------------------------------------------------------------

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._sync_loop())

    async def close(self) -> None:
        """Share what is pending, then stop the sync loop; each part bounded and named in the
        log when it overruns (a replica's shutdown once waited here for its whole bound)."""
        settled = asyncio.ensure_future(self.settle())
        if not (await asyncio.wait({settled}, timeout=CLOSE_TIMEOUT_S))[0]:
            settled.cancel()
            log_event("hookgate.breakers.close_timeout", level=logging.ERROR,
                      part="pending writes", pending=len(self._pending))
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            # wait() and not ``await task``: a cancellation of this close stays this close's
            if not (await asyncio.wait({task}, timeout=CLOSE_TIMEOUT_S))[0]:
                log_event("hookgate.breakers.close_timeout", level=logging.ERROR,
                          part="sync loop", stack=_stack_of(task))

    async def settle(self) -> None:
        """Wait until every fault and verdict recorded so far is in the shared store."""
        while self._pending:
            await asyncio.gather(*list(self._pending), return_exceptions=True)

    # -- BreakerSync -----------------------------------------------------------------------------

    def fault(self, hook_id: str, message: str) -> bool:
        if time.monotonic() < self._down_until:
            return False
        self._spawn(self._fault(hook_id, message))
        return True

    def reopened(self, hook_id: str) -> None:
        now = self.wall()
        self._applied[hook_id] = now
        self._spawn(self._call(hook_id, self.backend.reopen(hook_id, now=now)))

    def closed(self, hook_id: str) -> None:
        self._applied.pop(hook_id, None)
        self._spawn(self._call(hook_id, self.backend.close(hook_id)))

    def reset(self, hook_id: str) -> None:
        self.closed(hook_id)

    # -- the work --------------------------------------------------------------------------------

    def _spawn(self, work: Coroutine[Any, Any, None]) -> None:
        try:
            task = asyncio.get_running_loop().create_task(work)
        except RuntimeError:  # no loop (a library caller outside asyncio): local only
            work.close()
            return
        self._pending.add(task)
        task.add_done_callback(self._pending.discard)

    async def _fault(self, hook_id: str, message: str) -> None:
        board = self.board
        try:
            shared = await self.backend.fault(
                hook_id, message, now=self.wall(), window_s=board.window_s,
                threshold=board.threshold,
            )
        except Exception as exc:
            self._unavailable(exc)
            board.count_locally(hook_id)
            return
        if shared.state == "open" and shared.opened_at is not None:
            self._apply_open(hook_id, shared)

    async def _call(self, hook_id: str, work: Coroutine[Any, Any, None]) -> None:
        try:
            await work
        except Exception as exc:
            self._unavailable(exc)

    def _unavailable(self, exc: BaseException) -> None:
        if self._available:  # said once per outage, not once per fault
            self._available = False
            log_event(
                "hookgate.breakers.shared_unavailable", level=logging.WARNING, error=repr(exc),
                message="circuit breakers count faults per replica until the store is back",
            )
        self._down_until = time.monotonic() + RETRY_AFTER_S

    def _reachable(self) -> None:
        if not self._available:
            self._available = True
            log_event("hookgate.breakers.shared_available", level=logging.INFO)

    def _apply_open(self, hook_id: str, shared: SharedBreaker) -> None:
        assert shared.opened_at is not None
        if self._applied.get(hook_id) == shared.opened_at:
            return
        self._applied[hook_id] = shared.opened_at
        # The shared time is the wall clock; the board's is monotonic: carry the age over.
        age = max(0.0, self.wall() - shared.opened_at)
        self.board.apply_open(hook_id, self.board.clock() - age, shared.last_fault)

    async def sync_once(self) -> None:
        """Apply the shared breakers to this board (one read)."""
        shared = await self.backend.open_breakers()
        self._reachable()
        for hook_id, breaker in shared.items():
            if breaker.state == "open" and breaker.opened_at is not None:
                self._apply_open(hook_id, breaker)
        for hook_id in [h for h in self._applied if h not in shared]:
            # Closed elsewhere: a probe succeeded or the hook was re-enabled.
            del self._applied[hook_id]
            self.board.apply_closed(hook_id)

    async def _sync_loop(self) -> None:
        while True:
            try:
                await self.sync_once()
            except Exception as exc:
                self._unavailable(exc)
            await asyncio.sleep(self.sync_interval_s)


def _stack_of(task: asyncio.Task[None]) -> str:
    """Where a task that does not stop is waiting (for the log)."""
    names: list[str] = []
    awaited: Any = task.get_coro()
    while awaited is not None and len(names) < 12:  # the chain of awaits, outermost first
        frame = getattr(awaited, "cr_frame", None) or getattr(awaited, "gi_frame", None)
        if frame is None:
            break
        names.append(f"{frame.f_code.co_name}:{frame.f_lineno}")
        awaited = getattr(awaited, "cr_await", None) or getattr(awaited, "gi_yieldfrom", None)
    return " -> ".join(names)
