"""Worker threads for plain-function hooks, so that a timeout holds and the loop never stalls.

A plain (sync) function cannot be interrupted. Run on the caller's thread, one that overruns
its timeout holds the caller for its whole run, and on the gateway it freezes the event
loop for every tenant. Here it runs on a reused worker thread while the caller waits with a
deadline: at the deadline the caller gets a timeout (the hook's ``on_timeout`` outcome) and
goes on; the worker is *abandoned*, counted in :attr:`HookThreads.stuck` until its function
returns, and then taken back into the pool. The rest of its batch is not run by it.

A batch of calls (the chain's unit, see :mod:`hookgate.chain`) goes to one worker, so one
event costs one thread hop however many plain hooks it runs: ``python -m bench.run core``
shows the price against calling the functions directly (a hop is some tens of µs on an idle
machine, and grows with the load, since two threads must be scheduled). On the event loop
the loop's thread first waits up to :data:`FAST_WAIT_S` for the answer (most hooks are that
fast), then awaits a wake-up from the worker.

When :data:`MAX_STUCK` workers are stuck, further calls are refused with an error (a block
on blocking events) rather than starting ever more threads.
"""

from __future__ import annotations

import asyncio
import math
import threading
import time
from collections.abc import Callable, Sequence
from functools import partial
from typing import Any, Final

from hookgate.chain import Call, Reply
from hookgate.errors import HookgateError
from hookgate.log import log_event
from hookgate.plain_calls import Functions, PlainCalls

__all__ = ["MAX_STUCK", "HookThreads", "TooManyStuck"]

#: Workers that may be stuck in overrunning functions at once before calls are refused.
MAX_STUCK: Final = 64
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

    def __init__(self, pool: HookThreads, number: int) -> None:
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
                    pool.stuck -= 1
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


class HookThreads:
    """The pool. One per engine; threads are daemons, started on first use."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._idle: list[_Worker] = []
        self._started = 0
        #: Workers currently stuck in a function that overran its timeout.
        self.stuck = 0
        #: Calls abandoned at their deadline since the pool was made.
        self.abandoned = 0

    def _worker(self) -> _Worker:
        with self._lock:
            if self._idle:
                return self._idle.pop()
            if self.stuck >= MAX_STUCK:
                raise TooManyStuck(
                    f"{self.stuck} hook threads are stuck in functions that overran their "
                    "timeout; refusing to start more"
                )
            self._started += 1
            number = self._started
        return _Worker(self, number)

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
            job.abandoned = True
            self.stuck += 1
            self.abandoned += 1
        log_event("hookgate.hook_thread.stuck", stuck=self.stuck, timeout_s=round(allowed, 3))
        return (None, None, True, (now - started) * 1000), index

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
    ) -> tuple[PlainCalls, threading.Lock]:
        """Hand a batch to a worker: the job, and a lock that is released when it is done."""
        job = PlainCalls(calls, functions, view, deadline, clock)
        done = threading.Lock()
        done.acquire()
        job.notify = done.release
        job.current = (0, time.perf_counter(), calls[0][1])
        self._worker().start(job)
        return job, done

    # -- sync callers ---------------------------------------------------------------------

    def run_batch(
        self,
        calls: Sequence[Call],
        functions: Functions,
        view: Any,
        deadline: float | None,
        clock: Callable[[], float],
    ) -> list[Reply]:
        """Run a batch on a worker and wait; a call past its time answers a timeout."""
        replies: list[Reply] = []
        perf = time.perf_counter
        while calls:
            try:
                job, done = self._start(calls, functions, view, deadline, clock)
            except TooManyStuck as exc:
                return [*replies, (None, exc, False, 0.0)]
            timed_out: tuple[Reply, int] | None = None
            while True:
                current = job.current
                assert current is not None
                wait = current[1] + current[2] - perf()
                if done.acquire(timeout=max(wait, 0.0)):
                    break
                timed_out = self._abandon(job, perf())
                if timed_out is not None:
                    break
            if timed_out is None:
                return [*replies, *job.replies]
            reply, index = timed_out
            replies += job.replies[:index]
            replies.append(reply)
            if deadline is not None:
                return replies  # a timeout ends a blocking batch
            calls = calls[index + 1 :]
        return replies

    # -- the event loop -------------------------------------------------------------------

    async def run_batch_async(
        self,
        calls: Sequence[Call],
        functions: Functions,
        view: Any,
        deadline: float | None,
        clock: Callable[[], float],
    ) -> list[Reply]:
        """:meth:`run_batch` for the event loop: it waits without blocking the loop."""
        loop = asyncio.get_running_loop()
        replies: list[Reply] = []
        perf = time.perf_counter
        while calls:
            try:
                job, done = self._start(calls, functions, view, deadline, clock)
            except TooManyStuck as exc:
                return [*replies, (None, exc, False, 0.0)]
            # Most hooks answer within microseconds: waiting that long here (the interpreter
            # lock released) is cheaper than waking the loop from the worker.
            if done.acquire(timeout=FAST_WAIT_S):
                return [*replies, *job.replies]
            finished: asyncio.Future[None] = loop.create_future()
            timed_out: tuple[Reply, int] | None = None
            if not self._rearm(job, partial(loop.call_soon_threadsafe, _settle, finished)):
                return [*replies, *job.replies]
            while True:
                current = job.current
                assert current is not None
                timer = loop.call_later(
                    max(current[1] + current[2] - perf(), 0.0), _settle, finished
                )
                try:
                    await finished
                finally:
                    timer.cancel()
                if job.finished:
                    break
                timed_out = self._abandon(job, perf())
                if timed_out is not None:
                    break
                # Woken by the timer while the worker moved on to a later call: wait again.
                finished = loop.create_future()
                if not self._rearm(job, partial(loop.call_soon_threadsafe, _settle, finished)):
                    break
            if timed_out is None:
                return [*replies, *job.replies]
            reply, index = timed_out
            replies += job.replies[:index]
            replies.append(reply)
            if deadline is not None:
                return replies
            calls = calls[index + 1 :]
        return replies

    async def call(self, fn: Callable[[Any], Any], arg: Any) -> Any:
        """``fn(arg)`` on a worker, awaited; cancelling the await (the engine's timeout)
        abandons the worker and counts it as stuck until ``fn`` returns."""
        loop = asyncio.get_running_loop()
        key = object()
        job = PlainCalls(((key, math.inf, [], 0, 0),), {key: fn}, arg, None, time.monotonic)  # type: ignore[arg-type]
        done = threading.Lock()
        done.acquire()
        job.notify = done.release
        self._worker().start(job)
        finished: asyncio.Future[None] = loop.create_future()
        try:
            if not done.acquire(timeout=FAST_WAIT_S) and self._rearm(
                job, partial(loop.call_soon_threadsafe, _settle, finished)
            ):
                await finished
        except asyncio.CancelledError:
            with self._lock:
                if not job.finished:
                    job.abandoned = True
                    self.stuck += 1
                    self.abandoned += 1
            raise
        reply = job.replies[0]
        if isinstance(reply, float):  # abstained (a reply by its duration alone)
            return None
        answer, error, _, _ = reply
        if error is not None:
            raise error
        return answer

    def close(self) -> None:
        """Let the idle workers go (stuck ones end when their function returns)."""
        with self._lock:
            idle, self._idle = self._idle, []
        for worker in idle:
            worker.stop()


def _settle(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)
