"""Plain-function hooks on the caller's own thread, interrupted at their timeout by a watchdog.

Handing a batch to a worker thread (:mod:`hookgate.hook_threads`) costs a thread hop per
event, some tens of µs: several times what ten small functions cost. On the main thread of a
POSIX process a timeout can hold without the hop: the functions run right here while a
watchdog thread keeps an eye on the current call (``PlainCalls.current``: which call, when it
started, how long it may take). When the call overruns, the watchdog sends ``SIGALRM`` to the
main thread (``signal.pthread_kill``) and the handler raises inside the hook's own code; that
interrupts Python code, sleeps, socket and lock waits alike, and the watchdog sends it again
every :data:`REPEAT_S` while the hook still runs, so a hook that swallows the interruption
cannot keep the caller either. The handler never raises in hookgate's own batch loop: between
two calls the loop reports an overrun itself from the call's elapsed time, and raising there
would lose replies.

No system call per event: the main thread only assigns Python attributes per call. The
watchdog sleeps until the current call is due, but never longer than its *horizon* (the
shortest allowance it has been told of, at most :data:`HORIZON_S`), so a call that starts
later is due after the watchdog next looks. Only a call due before that rings the watchdog's
bell (one system call): after it parked (no batch for :data:`PARK_AFTER_S`; an idle process
pays nothing) or when a shorter allowance than any before comes along. An allowance under
:data:`REPEAT_S` does not lower the horizon, so such calls may ring each time. The watchdog
needs the GIL to act: behind a hook that runs Python code it waits up to the interpreter's
switch interval (5 ms by default) for it, so it looks that much early for a call's due time;
an overrun is interrupted late by at most that interval plus the scheduler's delay on a
loaded machine. (CPython 3.11 and 3.12 may skip the hook's own
``except`` and ``finally`` blocks when the interruption lands on a tight loop's backward
jump, CPython issue gh-108214; the timeout holds all the same.)

The signal is only borrowed when nobody else uses it: if the application installed a
``SIGALRM`` handler of its own (or ignores the signal), or an interval timer with the default
action is running when the engine would borrow it, :func:`available` answers ``False``,
:func:`run_batch` runs nothing and the caller uses the worker threads; so do calls from other
threads (a thread other than the main one cannot be interrupted inside ``time.sleep``) and
chains fired from inside a hook (one batch is watched at a time). Once borrowed, the
handler stays installed (putting the default back after every event would cost system
calls), so an alarm the application arms later with ``signal.alarm`` and no handler of its
own no longer ends the process: such an application installs its own handler first (the
engine then leaves ``SIGALRM`` alone) or sets ``Settings(interrupt_plain_hooks=False)``.
A forked child has no watchdog thread: it starts
again in the child at its first batch, or at once when the fork came from inside a hook.
"""

from __future__ import annotations

import _signal  # type: ignore[import-not-found]  # CPython: the C side of signal
import math
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Sequence
from types import FrameType
from typing import Any, Final

from hookgate.chain import Call, Reply
from hookgate.plain_calls import Functions, PlainCalls

__all__ = ["HORIZON_S", "PARK_AFTER_S", "REPEAT_S", "available", "run_batch"]

#: How often the watchdog interrupts again while an overrunning hook still runs.
REPEAT_S: Final = 0.01
#: The longest the watchdog sleeps while batches run (read at each wake-up).
HORIZON_S = 1.0
#: With no batch for this long the watchdog parks until a call rings (read at each wake-up).
PARK_AFTER_S = 2.0

_SUPPORTED: Final = hasattr(signal, "pthread_kill") and hasattr(signal, "SIGALRM")
# signal.getsignal turns its answer into an enum member, which costs more than the rest of
# an event's watch; the C function underneath answers the handler as installed.
_handler_of: Final[Callable[[int], object]] = _signal.getsignal
_SIGALRM: Final = int(getattr(signal, "SIGALRM", 14))
_get_ident: Final = threading.get_ident


class _Interrupted(BaseException):
    """Raised inside a hook past its timeout. A BaseException, so that a hook's
    ``except Exception`` does not swallow it; it never leaves this module."""


class _Watchdog:
    """The process's watchdog thread and what it shares with the main thread.

    The main thread writes :attr:`job` (per batch), ``job.current`` (per call) and rings;
    the watchdog writes :attr:`wake_at` after each look, then checks that nothing started
    meanwhile, so a call either is seen by that look or compares its due time with the new
    :attr:`wake_at` (most calls only their allowance with :attr:`below`). :attr:`rung`
    spares the system call of a second ring before the watchdog has looked; a ring the
    watchdog did not wait for only wakes it once more."""

    __slots__ = (
        "batches",
        "bell",
        "below",
        "horizon",
        "job",
        "main",
        "rings",
        "rung",
        "spare",
        "thread",
        "wake_at",
    )

    def __init__(self) -> None:
        #: The batch running under watch on the main thread, if any.
        self.job: PlainCalls | None = None
        #: Batches started: how the watchdog tells a busy process from an idle one.
        self.batches = 0
        #: Bell rings (system calls), for tests and benchmarks.
        self.rings = 0
        self.main = threading.main_thread().ident or 0
        self.thread: threading.Thread | None = None
        #: The job every batch on the main thread reuses (one runs at a time).
        self.spare = PlainCalls((), {}, None, None, time.monotonic, copy_context=False)
        self.spare.watch = self
        self._reset()

    def _reset(self) -> None:
        self.bell = threading.Lock()
        self.bell.acquire()  # held: the watchdog's acquire waits until a ring releases it
        self.rung = False
        #: The watchdog looks again by then (inf: parked); a call due sooner rings the bell.
        self.wake_at = math.inf
        #: The horizon wake_at was planned with (inf: parked): a call allowed as long or
        #: longer, started since, is due after wake_at (the one comparison most calls make).
        self.below = math.inf
        self.horizon = HORIZON_S

    def ring(self, allowed: float) -> None:
        """Wake the watchdog for a call due before it would look (main thread)."""
        if REPEAT_S <= allowed < self.horizon:
            self.horizon = allowed
        if not self.rung:
            self.rung = True
            self.rings += 1
            # Only this thread releases: a bell still unlocked was rung before and the
            # watchdog has not waited on it since.
            if self.bell.locked():
                self.bell.release()

    def start(self) -> None:
        self.thread = threading.Thread(target=self._watch, name="hookgate-alarm", daemon=True)
        self.thread.start()

    def after_fork(self) -> None:
        """In a forked child, whose only thread is the one that forked."""
        if threading.get_ident() != self.main:
            self.job = None  # its batch runs on a thread the child does not have
        self.main = threading.get_ident()
        self.thread = None
        self._reset()
        if self.job is not None:  # forked from inside a hook: its timeout still holds
            self.start()

    def _watch(self) -> None:
        perf = time.perf_counter
        seen_batches, active_at = -1, perf()
        while True:
            job = self.job
            current = None if job is None else job.current
            now = perf()
            look_at, horizon = 0.0, self.horizon
            if job is not None or self.batches != seen_batches:
                seen_batches, active_at = self.batches, now
            if current is not None and current[1] + current[2] <= now:
                if _handler_of(_SIGALRM) is _on_alarm:
                    signal.pthread_kill(self.main, signal.SIGALRM)
                # Behind a hook that runs Python code the next look first waits up to a
                # switch interval for the GIL: sleep that much less.
                wake_at = now + max(REPEAT_S - sys.getswitchinterval(), REPEAT_S / 4)
            elif current is not None:
                due = current[1] + current[2]
                wake_at = min(due, now + horizon)
                # Behind a hook that runs Python code, getting the GIL takes a switch
                # interval: look that much early, so the signal goes about on time.
                lead = sys.getswitchinterval()
                if wake_at == due and due - now > lead:
                    look_at = due - lead
            elif now - active_at < PARK_AFTER_S:
                wake_at = now + horizon
            else:
                wake_at = horizon = math.inf
                self.horizon = HORIZON_S
            self.wake_at, self.below = wake_at, horizon
            # Calls from here on compare their due time with the new wake_at and ring again
            # if need be; one that started before is seen by the check below.
            self.rung = False
            if self.job is not job or (job is not None and job.current is not current):
                continue  # a call started while we looked: look at it before sleeping
            if wake_at == math.inf:
                self.bell.acquire()
            else:
                self.bell.acquire(timeout=max((look_at or wake_at) - perf(), 0.0))


_WATCHDOG: Final = _Watchdog()
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_WATCHDOG.after_fork)


def _on_alarm(signum: int, frame: FrameType | None) -> None:
    job = _WATCHDOG.job
    if job is None or job.current is None:
        return
    index, started, allowed = job.current
    if started + allowed > time.perf_counter():  # a later call, not due yet
        return
    # Between two calls, or just after one returned, the batch loop itself reports the
    # overrun from the call's elapsed time: raising there would lose replies. The watchdog
    # tries again in REPEAT_S if the call is still running.
    if frame is not None and frame.f_code in _OWN_CODE:
        return
    raise _Interrupted


def available() -> bool:
    """Whether a batch may run under the watchdog here and now (:func:`run_batch` asks
    it itself)."""
    watchdog = _WATCHDOG
    if (
        watchdog.job is None
        and _get_ident() == watchdog.main
        and _handler_of(_SIGALRM) is _on_alarm
    ):
        return True  # the common case, checked first
    return _borrow()


def _borrow() -> bool:
    watchdog = _WATCHDOG
    if not _SUPPORTED or watchdog.job is not None or _get_ident() != watchdog.main:
        return False
    handler = _handler_of(_SIGALRM)
    if handler is _on_alarm:
        return True
    if handler != signal.SIG_DFL:  # the application's own: leave it alone
        return False
    if hasattr(signal, "getitimer") and signal.getitimer(signal.ITIMER_REAL)[0]:
        return False  # somebody's alarm is meant to end the process: do not catch it
    signal.signal(signal.SIGALRM, _on_alarm)
    return True


def run_batch(
    calls: Sequence[Call],
    functions: Functions,
    view: Any,
    deadline: float | None,
    clock: Callable[[], float],
) -> list[Reply] | None:
    """Run a batch here under the watchdog, with the same replies and stop rules as a
    worker; ``None`` (nothing run) when it may not run here and now (see :func:`available`,
    whose common case is repeated here: a call less per event)."""
    watchdog = _WATCHDOG
    if not (
        watchdog.job is None
        and _get_ident() == watchdog.main
        and _handler_of(_SIGALRM) is _on_alarm
    ) and not _borrow():
        return None
    if watchdog.thread is None:
        watchdog.start()
    replies: list[Reply] = []
    job = watchdog.spare
    while calls:
        job.reuse(calls, functions, view, deadline, clock)
        watchdog.batches += 1
        watchdog.job = job
        try:
            job.run_calls()
        except _Interrupted:
            interrupted = True
        else:
            interrupted = False
        finally:
            watchdog.job = None
        if not interrupted:
            if replies:
                replies += job.replies
                return replies
            return job.replies
        assert job.current is not None
        index, started = job.current[0], job.current[1]
        replies += job.replies[:index]
        replies.append((None, None, True, (time.perf_counter() - started) * 1000))
        if deadline is not None:
            return replies  # a timeout ends a blocking batch
        calls = calls[index + 1 :]
    return replies


_OWN_CODE: Final = frozenset(
    f.__code__ for f in (PlainCalls.run_calls, _Watchdog.ring, _on_alarm, run_batch)
)
