"""Plain-function hooks on the caller's own thread, interrupted by an alarm at their timeout.

Handing a batch to a worker thread (:mod:`hookgate.hook_threads`) costs a thread hop per
event, some tens of µs: several times what ten small functions cost. On the main thread of a
POSIX process a timeout can hold without the hop: the functions run right here while a
real-time interval timer (``SIGALRM``) is armed for the current call. When it fires past the
call's allowance, the handler raises inside the hook's own code; that interrupts Python code,
sleeps, socket and lock waits alike, and it fires again every :data:`REPEAT_S` while the hook
still runs, so a hook that swallows the interruption cannot keep the caller either.

The alarm is only borrowed when nobody else uses it: if an interval timer is already armed or
the application installed a ``SIGALRM`` handler of its own, :func:`run_batch` answers ``None``
and the caller falls back to the worker threads; so do calls from other threads and chains
fired from inside a hook (the alarm serves one batch at a time). Once borrowed, the handler
stays installed (putting the default back after every event would cost two more system
calls), so an alarm the application arms later with ``signal.alarm`` and no handler of its
own no longer ends the process: such an application installs its own handler first (the
engine then leaves ``SIGALRM`` alone) or sets ``Settings(interrupt_plain_hooks=False)``.
"""

from __future__ import annotations

import _signal  # type: ignore[import-not-found]  # CPython: the C side of signal
import signal
import threading
import time
from collections.abc import Callable, Sequence
from types import FrameType
from typing import Any, Final

from hookgate.chain import Call, Reply
from hookgate.plain_calls import Functions, PlainCalls

__all__ = ["REPEAT_S", "available", "run_batch"]

#: How often the alarm fires again while an interrupted hook still runs.
REPEAT_S: Final = 0.01

_SUPPORTED: Final = hasattr(signal, "setitimer") and hasattr(signal, "SIGALRM")
# signal.getsignal turns its answer into an enum member, which costs more than the rest of
# an event's alarm; the C function underneath answers the handler as installed.
_handler_of: Final[Callable[[int], object]] = _signal.getsignal
_MAIN_THREAD: Final = threading.main_thread().ident

#: The batch the alarm watches (main thread only, one at a time).
_watched: PlainCalls | None = None


class _Interrupted(BaseException):
    """Raised inside a hook past its timeout. A BaseException, so that a hook's
    ``except Exception`` does not swallow it; it never leaves this module."""


#: The longest the timer is set for (a hook without a timeout still gets a finite one).
_LONGEST_S: Final = 365 * 86400.0


def _set_alarm(job: PlainCalls, due: float) -> None:
    job.alarm_due = due
    left = min(max(due - time.perf_counter(), 1e-6), _LONGEST_S)
    signal.setitimer(signal.ITIMER_REAL, left, REPEAT_S)


def _on_alarm(signum: int, frame: FrameType | None) -> None:
    job = _watched
    if job is None or job.current is None:
        return
    index, started, allowed = job.current
    if started + allowed > time.perf_counter():  # due later than the timer said: wait more
        _set_alarm(job, started + allowed)
        return
    # Between two calls, or just after one returned, the batch loop itself reports the
    # overrun from the call's elapsed time: raising there would lose replies.
    if frame is not None and frame.f_code in _OWN_CODE:
        return
    raise _Interrupted


def available() -> bool:
    """Whether a batch may run under the alarm here and now."""
    if not _SUPPORTED or _watched is not None or threading.get_ident() != _MAIN_THREAD:
        return False
    handler = _handler_of(signal.SIGALRM)
    if handler is _on_alarm:
        return True
    if handler != signal.SIG_DFL:  # the application's own: leave it alone
        return False
    signal.signal(signal.SIGALRM, _on_alarm)
    return True


def run_batch(
    calls: Sequence[Call],
    functions: Functions,
    view: Any,
    deadline: float | None,
    clock: Callable[[], float],
) -> list[Reply] | None:
    """Run a batch here under the alarm, with the same replies and stop rules as a worker;
    ``None`` when another user's timer is running (the caller then uses the worker threads).
    Call :func:`available` first."""
    global _watched
    replies: list[Reply] = []
    perf = time.perf_counter
    while calls:
        job = PlainCalls(calls, functions, view, deadline, clock, copy_context=False)
        job.set_alarm = _set_alarm
        # Armed for the first call at once; the batch loop moves it earlier for a call due
        # sooner. The previous setting tells whether somebody else's timer was running.
        allowed = min(max(calls[0][1], 1e-6), _LONGEST_S)
        job.alarm_due = perf() + allowed
        previous = signal.setitimer(signal.ITIMER_REAL, allowed, REPEAT_S)
        if previous[0] and not replies:  # somebody else's timer: give it back untouched
            signal.setitimer(signal.ITIMER_REAL, *previous)
            return None
        _watched = job
        try:
            job.run_calls()
        except _Interrupted:
            interrupted = True
        else:
            interrupted = False
        finally:
            _watched = None
            signal.setitimer(signal.ITIMER_REAL, 0)
        if not interrupted:
            return [*replies, *job.replies]
        assert job.current is not None
        index, started = job.current[0], job.current[1]
        replies += job.replies[:index]
        replies.append((None, None, True, (perf() - started) * 1000))
        if deadline is not None:
            return replies  # a timeout ends a blocking batch
        calls = calls[index + 1 :]
    return replies


_OWN_CODE: Final = frozenset(
    f.__code__ for f in (PlainCalls.run_calls, _on_alarm, _set_alarm, run_batch)
)
