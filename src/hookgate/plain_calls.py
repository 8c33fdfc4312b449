"""One batch of plain-function hook calls, run in order with the chain driver's stop rules."""

from __future__ import annotations

import contextvars
import math
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final, Protocol

from hookgate.chain import Call, Reply

__all__ = ["UNWATCHED", "Functions", "PlainCalls", "Watch"]

#: The functions of a batch's hooks, by hook.
Functions = Mapping[Any, Callable[[Any], Any]]


class Watch(Protocol):
    """Who interrupts a call on the caller's thread at its timeout (the watchdog of
    :mod:`hookgate.hook_alarm`): told only of a call due before it next looks."""

    #: When it looks next; only a call allowed less than ``below`` can be due before.
    wake_at: float
    below: float

    def ring(self, allowed: float) -> None: ...


class _Unwatched:
    """The watch of a batch on a worker: nothing to tell."""

    wake_at = below = -math.inf

    def ring(self, allowed: float) -> None:
        return None


UNWATCHED: Final[Watch] = _Unwatched()


#: perf_counter and the monotonic clock read the same clock (Linux: CLOCK_MONOTONIC), so a
#: deadline on the monotonic clock needs no conversion.
_SAME_CLOCK: Final = (
    time.get_clock_info("perf_counter").implementation
    == time.get_clock_info("monotonic").implementation
)


class PlainCalls:
    """One batch of plain-function calls, run in order with the driver contract's stop rules.

    Run on the caller's thread (:func:`hookgate.drivers.sync_caller`, the watchdog of
    :mod:`hookgate.hook_alarm`) or on a worker (:mod:`hookgate.hook_threads`): written by the
    thread that runs it, read by the one that waits for it."""

    __slots__ = (
        "abandoned",
        "calls",
        "clock",
        "context",
        "current",
        "deadline",
        "finished",
        "functions",
        "notify",
        "replies",
        "view",
        "watch",
    )

    def __init__(
        self,
        calls: Sequence[Call],
        functions: Functions,
        view: Any,
        deadline: float | None,
        clock: Callable[[], float],
        *,
        copy_context: bool = True,
    ) -> None:
        self.replies: list[Reply]
        # (index, perf_counter at start, seconds allowed): one reference, swapped whole.
        self.current: tuple[int, float, float] | None
        self.reuse(calls, functions, view, deadline, clock)
        self.abandoned = False
        self.finished = False
        self.notify: Callable[[], object] | None = None
        # The caller's context variables (tracing, "inside a review"…) follow the calls.
        self.context = contextvars.copy_context() if copy_context else None
        # The watchdog of :mod:`hookgate.hook_alarm` (UNWATCHED: the calls run on a worker).
        self.watch = UNWATCHED

    def reuse(
        self,
        calls: Sequence[Call],
        functions: Functions,
        view: Any,
        deadline: float | None,
        clock: Callable[[], float],
    ) -> None:
        """Make this finished job the next batch's, for a runner that runs one batch at a
        time (the watchdog's main thread): cheaper than a new one, which costs as much as
        two of its calls. The fields it leaves are those only a worker's batch changes (and
        which ``__init__`` sets after calling this)."""
        self.calls = calls
        self.functions = functions
        self.view = view
        self.deadline = deadline
        self.clock = clock
        self.replies = []
        self.current = None

    def run(self) -> None:
        if self.context is None:
            self.run_calls()
        else:
            self.context.run(self.run_calls)

    def run_calls(self) -> None:
        """The calls in order; a blocking batch (one with a deadline) stops at its first
        call that matters (an answer, an error, a timeout) or when the deadline has passed.

        An abstention is the common answer, so it replies with no more than the chain's fold
        needs (see :data:`Reply`): a plain run's hook (a call with no trace row) with its
        final trace row, which the fold keeps as it is, any other hook with its duration
        alone (a float)."""
        deadline, clock, perf = self.deadline, self.clock, time.perf_counter
        functions, view, replies, watch = self.functions, self.view, self.replies, self.watch
        # One perf_counter reading per call: the end of one call is the start of the next,
        # and the deadline is moved to perf_counter's time (``due``) to be checked against it.
        # A clock other than the monotonic one (a test's fake clock) is read before each call.
        started = perf()
        other_clock = deadline is not None and clock is not time.monotonic
        if deadline is None:
            due = math.inf
        elif _SAME_CLOCK and not other_clock:
            due = deadline  # a clock read is worth skipping: ~45 ns, as much as two calls
        else:
            due = started + (deadline - clock())
        for index, (hook, timeout_s, row, _, _) in enumerate(self.calls):
            if self.abandoned:
                return
            if other_clock:
                due = started + (deadline - clock())  # type: ignore[operator]
            if started + timeout_s > due:
                timeout_s = due - started
                if timeout_s <= 0:
                    return
            self.current = (index, started, timeout_s)
            if timeout_s < watch.below and started + timeout_s < watch.wake_at:
                watch.ring(timeout_s)
            try:
                answer = functions[hook](view)
            except Exception as exc:
                replies.append((None, exc, False, (perf() - started) * 1000))
                if deadline is not None:
                    return
                started = perf()
                continue
            ended = perf()
            elapsed = ended - started
            if elapsed > timeout_s:
                replies.append((None, None, True, elapsed * 1000))
                if deadline is not None:
                    return
            elif answer is None:
                if row is None:  # a plain run's hook: its final trace row (hookgate.chain)
                    #       hook, matched, skipped, decision, duration, error, breaker, details
                    replies.append(
                        (hook, True, None, "abstain", elapsed * 1000, None, "closed", None)
                    )
                else:
                    replies.append(elapsed * 1000)
            else:
                replies.append((answer, None, False, elapsed * 1000))
                if deadline is not None:
                    return
            started = ended
