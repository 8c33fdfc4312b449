"""One batch of plain-function hook calls, run in order with the chain driver's stop rules.

The same loop (:func:`call_in_order`) runs in place on the caller's thread
(:func:`run_in_place`) or as a worker's job (:class:`PlainCalls`, :mod:`.workers`); only the
worker's caller can give up on it at a deadline.
"""

from __future__ import annotations

import contextvars
import math
import time
from collections.abc import Callable, Mapping, Sequence
from time import monotonic, perf_counter
from typing import Any, Final

from hookgate.chain import Call, HookReply, Reply
from hookgate.outcome import abstained_row

__all__ = ["Functions", "PlainCalls", "call_in_order", "run_in_place"]

#: The functions of a batch's hooks, by hook.
Functions = Mapping[Any, Callable[[Any], Any]]

#: perf_counter and the monotonic clock read the same clock (Linux: CLOCK_MONOTONIC), so a
#: deadline on the monotonic clock needs no conversion.
_SAME_CLOCK: Final = (
    time.get_clock_info("perf_counter").implementation
    == time.get_clock_info("monotonic").implementation
)


def run_in_place(
    calls: Sequence[Call],
    functions: Functions,
    view: Any,
    deadline: float | None,
    clock: Callable[[], float],
) -> list[Reply]:
    """Run a batch on the caller's thread, as pluggy calls its hooks: nothing interrupts a
    function, so one that overran its time is reported as a timeout when it returns (on a
    blocking event that blocks: its answer came too late)."""
    replies: list[Reply] = []
    call_in_order(calls, functions, view, deadline, clock, replies, None)
    return replies


class PlainCalls:
    """A worker's job: one batch of plain-function calls (:func:`call_in_order`).

    Written by the thread that runs it, read by the one that waits for it (which reads
    ``current`` to know which call is due when, and sets ``abandoned`` when it gives up)."""

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
        "tenant",
        "view",
    )

    def __init__(
        self,
        calls: Sequence[Call],
        functions: Functions,
        view: Any,
        deadline: float | None,
        clock: Callable[[], float],
    ) -> None:
        self.calls = calls
        self.functions = functions
        self.view = view
        self.deadline = deadline
        self.clock = clock
        self.replies: list[Reply] = []
        # (index, perf_counter at start, seconds allowed): one reference, swapped whole.
        self.current: tuple[int, float, float] | None = None
        self.abandoned = False
        self.finished = False
        self.notify: Callable[[], object] | None = None
        #: Whose event it is, on a worker (the pool bounds stuck workers per tenant).
        self.tenant: str | None = None
        # The caller's context variables (tracing, "inside a review"…) follow the calls.
        self.context = contextvars.copy_context()

    def run(self) -> None:
        self.context.run(self.run_calls)

    def run_calls(self) -> None:
        call_in_order(
            self.calls, self.functions, self.view, self.deadline, self.clock, self.replies, self
        )


def call_in_order(
    calls: Sequence[Call],
    functions: Functions,
    view: Any,
    deadline: float | None,
    clock: Callable[[], float],
    replies: list[Reply],
    job: PlainCalls | None,
) -> None:
    """The calls in order, each reply appended to ``replies``; a blocking batch (one with a
    deadline) stops at its first call that matters (an answer, an error, a timeout) or when
    the deadline has passed. ``job``: the worker's job, which says which call runs since
    when (its waiter's deadline) and whether the waiter gave up on it.

    An abstention is the common answer: an unconditional run's hook (a call with no trace row)
    replies with its final :class:`~hookgate.outcome.TraceRow`, which the fold keeps
    as it is; every other reply is a :class:`~hookgate.chain.HookReply`."""
    perf = perf_counter
    # One perf_counter reading per call: the end of one call is the start of the next, and
    # the deadline is moved to perf_counter's time (``due``) to be checked against it. A
    # clock other than the monotonic one (a test's fake clock) is read before each call.
    started = perf()
    other_clock = deadline is not None and clock is not monotonic
    if deadline is None:
        due = math.inf
    elif _SAME_CLOCK and not other_clock:
        due = deadline  # a clock read is worth skipping: ~45 ns, as much as two calls
    else:
        due = started + (deadline - clock())
    # Counted by hand: an enumerate costs more than the loop around one call.
    index = -1
    for hook, timeout_s, row, _, _ in calls:
        index += 1
        if other_clock:
            due = started + (deadline - clock())  # type: ignore[operator]
        if started + timeout_s > due:
            timeout_s = due - started
            if timeout_s <= 0:
                return
        if job is not None:
            if job.abandoned:
                return
            job.current = (index, started, timeout_s)
        try:
            answer = functions[hook](view)
        except Exception as exc:
            replies.append(HookReply(None, exc, False, (perf() - started) * 1000))
            if deadline is not None:
                return
            started = perf()
            continue
        ended = perf()
        elapsed = ended - started
        if elapsed > timeout_s:
            replies.append(HookReply(None, None, True, elapsed * 1000))
            if deadline is not None:
                return
        elif answer is None:
            if row is None:  # an unconditional run's hook: its final trace row (hookgate.chain)
                #       hook, matched, skipped, decision, duration, error, breaker, details
                replies.append(abstained_row(hook, elapsed * 1000))
            else:
                replies.append(HookReply(None, None, False, elapsed * 1000))
        else:
            replies.append(HookReply(answer, None, False, elapsed * 1000))
            if deadline is not None:
                return
        started = ended
