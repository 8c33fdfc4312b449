"""One hook's work on the event loop, under its deadline: cancelled when its time is up."""

from __future__ import annotations

import asyncio
import heapq
import itertools
import math
import threading
import time
from collections.abc import Awaitable, Callable
from typing import Any, Final

from hookgate.chain import HookReply

__all__ = ["run_with_deadline"]

#: How early a loop runs a timer (asyncio's own ``_clock_resolution``): an entry that close
#: to its deadline when the timer runs is due.
_RESOLUTION: Final = time.get_clock_info("monotonic").resolution
#: Done entries the heap may hold before they are swept out all at once (when they are also
#: most of it).
_SWEEP_ABOVE: Final = 64


#: A watched call: ``[deadline, order, task, fired]``, a list so that the heap compares it
#: in C (``order`` is unique: the task is never compared). ``task`` is ``None`` once the entry
#: is done (the call ended, or its time was up and it was cancelled: then ``fired``).
_Entry = list[Any]
_DEADLINE, _TASK, _FIRED = 0, 2, 3


class _Deadlines:
    """The deadlines of the hooks running on one loop, behind one loop timer.

    A timer per call (``call_later``, then ``cancel``) is ~16k instructions in Python 3.11's
    asyncio, more than the rest of a quick hook's deadline handling. Here a call's deadline
    goes onto a heap and one timer waits for the earliest one; a call that ends marks its
    entry done and leaves it there. When the timer runs it cancels the tasks whose time is up
    and waits for the next live entry. Done entries are dropped when they reach the top, or
    all at once when they are most of the heap, so it holds about as many entries as there
    are calls running."""

    __slots__ = ("armed_at", "done", "heap", "loop", "now", "order", "timer")

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        #: The loop's clock (``loop.time``), read without a Python call when it is asyncio's.
        self.now: Callable[[], float] = (
            time.monotonic if type(loop).time is asyncio.BaseEventLoop.time else loop.time
        )
        self.heap: list[_Entry] = []
        self.order = itertools.count()
        self.timer: asyncio.TimerHandle | None = None
        self.armed_at = math.inf
        #: Done entries still in the heap.
        self.done = 0

    def sweep(self) -> None:
        """Drop the done entries at once when they are most of the heap."""
        if self.done * 2 > len(self.heap):
            self.heap = [entry for entry in self.heap if entry[_TASK] is not None]
            heapq.heapify(self.heap)
            self.done = 0

    def arm(self, deadline: float) -> None:
        if self.timer is not None:
            self.timer.cancel()
        self.timer = self.loop.call_at(deadline, self._expire)
        self.armed_at = deadline

    def _expire(self) -> None:
        self.timer = None
        self.armed_at = math.inf
        heap = self.heap
        due = self.loop.time() + _RESOLUTION
        while heap and (heap[0][_DEADLINE] <= due or heap[0][_TASK] is None):
            entry = heapq.heappop(heap)
            task = entry[_TASK]
            if task is None:
                self.done -= 1
            else:
                entry[_TASK] = None
                entry[_FIRED] = True
                task.cancel()
        if heap:
            self.arm(heap[0][_DEADLINE])


class _PerThread(threading.local):
    deadlines: _Deadlines | None = None


#: Each thread's watch, for the loop it runs (a loop runs on one thread; a thread may run
#: several loops one after another, as ``asyncio.run`` does).
_watches: Final = _PerThread()
#: The running task of each loop, as :func:`asyncio.current_task` reads it (Python 3.11's is
#: a Python function: ~1.1k instructions per call); ``None`` where asyncio keeps it elsewhere.
_CURRENT_TASKS: Final[dict[asyncio.AbstractEventLoop, asyncio.Task[Any]] | None] = getattr(
    asyncio.tasks, "_current_tasks", None
)
#: ``HookReply(...)`` without the named tuple's Python ``__new__`` (~1.4k instructions less,
#: once per call).
_reply: Final = tuple.__new__


async def run_with_deadline(
    work: Awaitable[Any], timeout_s: float, finish: Callable[[Any], None] | None = None
) -> HookReply:
    """Await ``work`` for at most ``timeout_s`` seconds: its answer, its error or a timeout.

    A coroutine is cancelled at its deadline. Code that never gives the loop back (a plain
    function run in place) cannot be cancelled: past its time it is a timeout all the same,
    reported when it returns. A caller's own cancellation is passed on. ``finish`` sees the
    answer first, within the time (the runner drops state changes a hook may not make).
    """
    started = time.perf_counter()
    # The deadline cancels this task; ``uncancel`` tells our expiry from a caller's
    # cancellation.
    loop = asyncio.get_running_loop()
    task = _CURRENT_TASKS.get(loop) if _CURRENT_TASKS is not None else asyncio.current_task()
    assert task is not None
    deadlines = _watches.deadlines
    if deadlines is None or deadlines.loop is not loop:
        deadlines = _watches.deadlines = _Deadlines(loop)
    # Watched: onto the heap, and the timer moved up when this deadline is the earliest.
    deadline = deadlines.now() + timeout_s
    entry = [deadline, next(deadlines.order), task, False]
    heapq.heappush(deadlines.heap, entry)
    if deadline < deadlines.armed_at:
        deadlines.arm(deadline)
    try:
        answer = await work
        if finish is not None:
            finish(answer)
    except asyncio.CancelledError:
        if entry[_FIRED] and task.uncancel() == 0:
            return _reply(HookReply, (None, None, True, (time.perf_counter() - started) * 1000))
        raise
    except Exception as exc:
        return _reply(HookReply, (None, exc, False, (time.perf_counter() - started) * 1000))
    finally:
        if entry[_TASK] is not None:  # done (unless its time was up: already out)
            entry[_TASK] = None
            deadlines.done += 1
            if deadlines.done > _SWEEP_ABOVE:
                deadlines.sweep()
    elapsed = time.perf_counter() - started
    if entry[_FIRED]:
        # The handler swallowed the cancellation and answered late: still a timeout.
        task.uncancel()
        return _reply(HookReply, (None, None, True, elapsed * 1000))
    if elapsed > timeout_s:
        # It held the loop past its time.
        return _reply(HookReply, (None, None, True, elapsed * 1000))
    return _reply(HookReply, (answer, None, False, elapsed * 1000))
