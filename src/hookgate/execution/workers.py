"""Worker threads for isolated plain-function hooks: a hard wall-clock deadline, and a loop
that never stalls.

A plain (sync) function cannot be interrupted. A hook marked ``isolate: thread`` (the default
for functions a hooks file names) runs on a reused worker thread while the caller waits with
a deadline: at the deadline the caller gets a timeout (the hook's ``on_timeout`` outcome) and
goes on; the worker is *abandoned*, counted in :attr:`WorkerPool.stuck` until its function
returns, and then taken back into the pool. The rest of its batch is not run by it.

A batch of calls (the chain's unit, see :mod:`hookgate.chain`) goes to one worker, so one
event costs one thread hop however many unconditional hooks it runs: ``python -m bench.run core``
shows the price against calling the functions directly (a hop is some tens of µs on an idle
machine, and grows with the load, since two threads must be scheduled). On the event loop
the loop's thread first waits up to :data:`FAST_WAIT_S` for the answer (most hooks are that
fast), then awaits a wake-up from the worker.

Stuck workers are bounded: past ``max_stuck`` in all, or ``max_stuck_per_tenant`` for the
tenant whose event it is, further calls are refused with an error (a block on blocking
events) rather than starting ever more threads, so one tenant's stalling hooks cannot take
the threads every other tenant's hooks need (issue 24).
"""

from __future__ import annotations

import asyncio
import math
import threading
import time
from collections.abc import Callable, Sequence
from functools import partial
from typing import Any, Final

from hookgate.chain import Call, HookReply, Reply
from hookgate.errors import HookgateError
from hookgate.execution.plain_functions import Functions, PlainCalls
from hookgate.log import log_event

__all__ = ["TooManyStuck", "WorkerPool"]

#: Idle workers kept for reuse; more are let go, and so is one idle for IDLE_EXIT_S (an
#: engine that is never closed does not keep its threads forever).
MAX_IDLE: Final = 16
IDLE_EXIT_S: Final = 60.0
#: How long the event loop's thread waits for a batch before it goes back to serving others
#: and lets the worker wake it (a bounded pause, far below any hook timeout).
FAST_WAIT_S: Final = 0.0001


class TooManyStuck(HookgateError, RuntimeError):
    """Too many hook threads are stuck in functions that overran their timeout."""


class _Worker:
    __slots__ = ("_go", "_job", "_pool", "thread")

    def __init__(self, pool: WorkerPool, number: int) -> None:
        self._pool = pool
        self._go = threading.Lock()
        self._go.acquire()
        self._job: PlainCalls | None = None
        self.thread = threading.Thread(
            target=self._main, name=f"hookgate-hook-{number}", daemon=True
        )
        self.thread.start()

    def start(self, job: PlainCalls) -> None:
        self._job = job
        self._go.release()

    def stop(self) -> None:
        self._job = None
        self._go.release()

    def _main(self) -> None:
        pool = self._pool
        while True:
            if not self._go.acquire(timeout=IDLE_EXIT_S):
                with pool._lock:
                    if self in pool._idle:  # nobody took it meanwhile: let it go
                        pool._idle.remove(self)
                        return
                self._go.acquire()  # a caller took it and is about to start a job
            job = self._job
            if job is None:
                return
            try:
                job.run()
            except BaseException as exc:  # pragma: no cover - run() catches Exception
                log_event("hookgate.hook_thread.failed", error=repr(exc))
            with pool._lock:
                job.finished = True
                notify = None if job.abandoned else job.notify
                if job.abandoned:
                    pool._recovered(job)
                self._job = None
                keep = len(pool._idle) < MAX_IDLE
                if keep:
                    pool._idle.append(self)
            if job.abandoned:
                log_event("hookgate.hook_thread.recovered", stuck=pool.stuck)
            if notify is not None:
                notify()
            if not keep:
                return


class WorkerPool:
    """The pool. One per engine; threads are daemons, started on first use."""

    def __init__(self, *, max_stuck: int, max_stuck_per_tenant: int) -> None:
        """``max_stuck``: workers that may be stuck at once before calls are refused;
        ``max_stuck_per_tenant``: how many of them one tenant's events may hold (events with
        no tenant, an embedding program's, are bound by ``max_stuck`` alone). The engine
        takes both from its :class:`~hookgate.settings.Settings`."""
        self._lock = threading.Lock()
        self._idle: list[_Worker] = []
        self._started = 0
        self.max_stuck = max_stuck
        self.max_stuck_per_tenant = max_stuck_per_tenant
        #: Workers currently stuck in a function that overran its timeout.
        self.stuck = 0
        #: The same, by the tenant whose event the stuck call was for.
        self.stuck_by_tenant: dict[str, int] = {}
        #: Calls abandoned at their deadline since the pool was made.
        self.abandoned = 0

    def _worker(self, tenant: str | None) -> _Worker:
        with self._lock:
            if tenant is not None and (
                self.stuck_by_tenant.get(tenant, 0) >= self.max_stuck_per_tenant
            ):
                raise TooManyStuck(
                    f"{self.stuck_by_tenant[tenant]} hook threads are stuck in this tenant's "
                    "functions that overran their timeout; refusing to start more"
                )
            if self._idle:
                return self._idle.pop()
            if self.stuck >= self.max_stuck:
                raise TooManyStuck(
                    f"{self.stuck} hook threads are stuck in functions that overran their "
                    "timeout; refusing to start more"
                )
            self._started += 1
            number = self._started
        return _Worker(self, number)

    def _stuck(self, job: PlainCalls) -> None:
        """Count an abandoned job's worker as stuck (under the lock)."""
        job.abandoned = True
        self.stuck += 1
        self.abandoned += 1
        if job.tenant is not None:
            self.stuck_by_tenant[job.tenant] = self.stuck_by_tenant.get(job.tenant, 0) + 1

    def _recovered(self, job: PlainCalls) -> None:
        """An abandoned job's function returned: its worker is free again (under the lock)."""
        self.stuck -= 1
        if job.tenant is not None:
            left = self.stuck_by_tenant[job.tenant] - 1
            if left:
                self.stuck_by_tenant[job.tenant] = left
            else:
                del self.stuck_by_tenant[job.tenant]

    def _abandon(self, job: PlainCalls, now: float) -> tuple[Reply, int] | None:
        """Give up on the job's current call if its time is up: the timeout reply and the
        call's index, or None (it finished meanwhile, or moved on to a later call)."""
        current = job.current
        if current is None:
            return None
        index, started, allowed = current
        with self._lock:
            if job.finished or job.current is not current or now - started < allowed:
                return None
            self._stuck(job)
        log_event("hookgate.hook_thread.stuck", stuck=self.stuck, timeout_s=round(allowed, 3))
        return HookReply(None, None, True, (now - started) * 1000), index

    def _rearm(self, job: PlainCalls, notify: Callable[[], object]) -> bool:
        """Point the job's wake-up at a new waiter; False when it already finished."""
        with self._lock:
            if job.finished:
                return False
            job.notify = notify
            return True

    def _start(
        self,
        calls: Sequence[Call],
        functions: Functions,
        view: Any,
        deadline: float | None,
        clock: Callable[[], float],
        tenant: str | None,
    ) -> tuple[PlainCalls, threading.Lock]:
        """Hand a batch to a worker: the job, and a lock that is released when it is done."""
        worker = self._worker(tenant)
        job = PlainCalls(calls, functions, view, deadline, clock)
        job.tenant = tenant
        done = threading.Lock()
        done.acquire()
        job.notify = done.release
        job.current = (0, time.perf_counter(), calls[0][1])
        worker.start(job)
        return job, done

    def _begin(
        self,
        calls: Sequence[Call],
        functions: Functions,
        view: Any,
        deadline: float | None,
        clock: Callable[[], float],
        tenant: str | None,
        replies: list[Reply],
    ) -> tuple[PlainCalls, threading.Lock] | None:
        """:meth:`_start`, or ``None`` with the refusal added to ``replies`` (too many stuck
        workers: an error reply, which a blocking event's policy turns into a block)."""
        try:
            return self._start(calls, functions, view, deadline, clock, tenant)
        except TooManyStuck as exc:
            replies.append(HookReply(None, exc, False, 0.0))
            return None

    @staticmethod
    def _collect(
        job: PlainCalls,
        timed_out: tuple[Reply, int] | None,
        calls: Sequence[Call],
        deadline: float | None,
        replies: list[Reply],
    ) -> Sequence[Call]:
        """Add what a job answered to ``replies``: all of it when it finished, else the calls
        before the one abandoned and that one's timeout. The calls still to run: after an
        abandoned call of a non-blocking batch (a timeout ends a blocking one), else none."""
        if timed_out is None:
            replies += job.replies
            return ()
        reply, index = timed_out
        replies += job.replies[:index]
        replies.append(reply)
        return () if deadline is not None else calls[index + 1 :]

    # -- sync callers ---------------------------------------------------------------------

    def run_batch(
        self,
        calls: Sequence[Call],
        functions: Functions,
        view: Any,
        deadline: float | None,
        clock: Callable[[], float],
        tenant: str | None = None,
    ) -> list[Reply]:
        """Run a batch on a worker and wait; a call past its time answers a timeout.
        ``tenant``: whose event it is (the bound on stuck workers per tenant)."""
        replies: list[Reply] = []
        while calls:
            started = self._begin(calls, functions, view, deadline, clock, tenant, replies)
            if started is None:
                break
            job, done = started
            calls = self._collect(job, self._wait(job, done), calls, deadline, replies)
        return replies

    def _wait(self, job: PlainCalls, done: threading.Lock) -> tuple[Reply, int] | None:
        """Block until the job is done (``None``) or its current call's time is up (that
        call's timeout reply and index: the worker is abandoned)."""
        perf = time.perf_counter
        while True:
            current = job.current
            assert current is not None
            wait = current[1] + current[2] - perf()
            if done.acquire(timeout=max(wait, 0.0)):
                return None
            timed_out = self._abandon(job, perf())
            if timed_out is not None:
                return timed_out

    # -- the event loop -------------------------------------------------------------------

    async def run_batch_async(
        self,
        calls: Sequence[Call],
        functions: Functions,
        view: Any,
        deadline: float | None,
        clock: Callable[[], float],
        tenant: str | None = None,
    ) -> list[Reply]:
        """:meth:`run_batch` for the event loop: it waits without blocking the loop."""
        replies: list[Reply] = []
        while calls:
            started = self._begin(calls, functions, view, deadline, clock, tenant, replies)
            if started is None:
                break
            job, done = started
            timed_out = await self._wait_async(job, done)
            calls = self._collect(job, timed_out, calls, deadline, replies)
        return replies

    async def _wait_async(
        self, job: PlainCalls, done: threading.Lock
    ) -> tuple[Reply, int] | None:
        """:meth:`_wait` on the event loop."""
        # Most hooks answer within microseconds: waiting that long here (the interpreter lock
        # released) is cheaper than waking the loop from the worker.
        if done.acquire(timeout=FAST_WAIT_S):
            return None
        loop = asyncio.get_running_loop()
        perf = time.perf_counter
        finished: asyncio.Future[None] = loop.create_future()
        if not self._rearm(job, partial(loop.call_soon_threadsafe, _settle, finished)):
            return None
        while True:
            current = job.current
            assert current is not None
            timer = loop.call_later(max(current[1] + current[2] - perf(), 0.0), _settle, finished)
            try:
                await finished
            finally:
                timer.cancel()
            if job.finished:
                return None
            timed_out = self._abandon(job, perf())
            if timed_out is not None:
                return timed_out
            # Woken by the timer while the worker moved on to a later call: wait again.
            finished = loop.create_future()
            if not self._rearm(job, partial(loop.call_soon_threadsafe, _settle, finished)):
                return None

    async def call(self, fn: Callable[[Any], Any], arg: Any, tenant: str | None = None) -> Any:
        """``fn(arg)`` on a worker, awaited; cancelling the await (the engine's timeout)
        abandons the worker and counts it as stuck until ``fn`` returns."""
        loop = asyncio.get_running_loop()
        worker = self._worker(tenant)
        key = object()
        job = PlainCalls(((key, math.inf, [], 0, 0),), {key: fn}, arg, None, time.monotonic)  # type: ignore[arg-type]
        job.tenant = tenant
        done = threading.Lock()
        done.acquire()
        job.notify = done.release
        worker.start(job)
        finished: asyncio.Future[None] = loop.create_future()
        try:
            if not done.acquire(timeout=FAST_WAIT_S) and self._rearm(
                job, partial(loop.call_soon_threadsafe, _settle, finished)
            ):
                await finished
        except asyncio.CancelledError:
            with self._lock:
                if not job.finished:
                    self._stuck(job)
            raise
        reply = job.replies[0]
        assert isinstance(reply, HookReply)  # a call with a row never replies with one
        if reply.error is not None:
            raise reply.error
        return reply.answer

    def close(self) -> None:
        """Let the idle workers go (stuck ones end when their function returns)."""
        with self._lock:
            idle, self._idle = self._idle, []
        for worker in idle:
            worker.stop()


def _settle(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)
