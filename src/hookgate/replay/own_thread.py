"""A batch of records replayed on a thread of its own, its plain functions in place there,
each call watched against its deadline by the caller: one thread hop per batch instead of
one per ``isolate: thread`` call.

The replay thread runs each chain's plain functions in place as a worker's job
(:class:`~hookgate.execution.plain_functions.PlainCalls`: it says which call runs since when).
The caller waits for the batch as :class:`~hookgate.execution.workers.WorkerPool` waits for a
worker: until the running call's time is up. Then it gives up on the thread, as the pool
gives up on a worker (the call is a timeout at its deadline, its late answer is dropped), and
the record being replayed is finished by the caller with the replies the thread had given
(:class:`Abandoned` then unwinds the thread when the call returns, with nothing written).
"""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

from hookgate.chain import HookReply, Reply
from hookgate.execution.plain_functions import PlainCalls

__all__ = ["Abandoned", "GaveUp", "Watched", "call_off", "watch"]


class Abandoned(BaseException):
    """Unwinds a replay thread its caller gave up on (no ``except Exception`` stops it)."""


class Watched:
    """What the replay thread shares with its caller: the batch of calls it runs now, the
    verdicts so far, and the replies of the record in progress."""

    __slots__ = ("abandoned", "done", "job", "lock", "verdicts")

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.abandoned = False
        #: The batch of calls running now (None between batches).
        self.job: PlainCalls | None = None
        #: Verdicts of the records finished, in order (their own type: the replayer's).
        self.verdicts: list[Any] = []
        #: Replies of the record in progress, one list per batch its chain ran.
        self.done: list[list[Reply]] = []

    def next_record(self) -> None:
        """A record starts on the replay thread (:class:`Abandoned` when given up on)."""
        if self.abandoned:
            raise Abandoned
        self.done = []

    def ran(self, job: PlainCalls) -> list[Reply]:
        """A batch's job has returned on the replay thread: its replies, or
        :class:`Abandoned` when the caller gave up on it."""
        with self.lock:
            if self.abandoned:
                raise Abandoned
            self.job = None
        self.done.append(job.replies)
        return job.replies


class GaveUp:
    """Where the caller gave up: the record (index into the batch) and the replies its chain
    had, batch by batch, the last one ending with the timeout."""

    __slots__ = ("index", "script")

    def __init__(self, index: int, script: list[list[Reply]]) -> None:
        self.index = index
        self.script = script


#: How long the caller sleeps between looks when no call is running (between records).
_IDLE_LOOK_S = 0.05


async def watch(batch: asyncio.Future[Any], watched: Watched) -> GaveUp | None:
    """Wait for ``batch`` (the replay thread's run); give up on it when a call's time is up:
    None when it finished, else where it stopped."""
    perf = time.perf_counter
    while True:
        job = watched.job
        current = job.current if job is not None else None
        wait = _IDLE_LOOK_S if current is None else max(0.0, current[1] + current[2] - perf())
        done, _ = await asyncio.wait((batch,), timeout=wait)
        if done:
            return None
        job = watched.job
        current = job.current if job is not None else None
        if job is None or current is None:
            continue
        index, started, allowed = current
        now = perf()
        if now - started < allowed:
            continue
        with watched.lock:
            if watched.job is not job or job.current is not current or batch.done():
                continue
            watched.abandoned = job.abandoned = True
            record = len(watched.verdicts)
            script = [*watched.done, [*job.replies[:index], _timeout(now - started)]]
        # The thread's batch ends with Abandoned once the call returns: nobody waits for it.
        batch.add_done_callback(_forget)
        return GaveUp(record, script)


def call_off(batch: asyncio.Future[Any], watched: Watched) -> None:
    """The caller no longer waits (its replay was cancelled): the thread stops at its next
    call or record (it runs plain code that never gives its loop a turn to see a cancel)."""
    with watched.lock:
        watched.abandoned = True
        if watched.job is not None:
            watched.job.abandoned = True
    batch.add_done_callback(_forget)


def _timeout(seconds: float) -> Reply:
    return HookReply(None, None, True, seconds * 1000)


def _forget(batch: asyncio.Future[Any]) -> None:
    if not batch.cancelled():
        batch.exception()  # retrieved: an abandoned batch ends with Abandoned
