"""The chain: every rule for folding hook answers into one outcome lives in :func:`run_chain`.

:func:`run_chain` makes a :class:`Chain`, a state machine taken step by step. It decides which
hooks run, in what order and with which timeout, and gives :data:`Batch` es of calls; a driver
executes them (with or without an event loop) and hands back one :data:`Reply` per call it ran
(:meth:`Chain.resume`), until the step is the :class:`Outcome`. Because the driver only
executes and the chain only decides, the outcome is the same whichever driver runs it and
whichever hook finishes first.

The driver contract: a batch with a ``deadline`` (a blocking event) runs in order, each call
within ``min(its timeout, deadline - now)``, and stops after the first call that answered
something (not ``None``), failed or timed out, or when the deadline has passed; a batch without
one (non-blocking) runs every call concurrently. Running abstaining hooks back to back is the
same as running them one at a time, because an abstention changes nothing the next hook sees;
admissions past the stopping point are discarded and made again against the new payload.

Rules, in order of application:

* Order: priority, higher first; ties by ``order`` (registration order / creation time), then
  by hook id. The caller passes hooks already sorted by :func:`hookgate.registry.sort_key`.
* An event deeper than ``max_depth`` (sub-agent loops) blocks a blocking event and runs no
  hooks on a non-blocking one.
* A hook is skipped when disabled, when its matcher does not match the event's match field,
  or when its ``if_expr`` is false or fails to evaluate (the failure is in the trace).
* An open circuit breaker never opens a door: on a blocking event the hook's ``on_error``
  policy applies without calling it (block by default); on a non-blocking event it is skipped.
* Blocking events run hooks in order; each sees the rewrites of those before it.
  The first block (``decision: block``, ``continue: false``, an ``ask``/``defer`` with no
  approver, an abort) ends the chain, and so does a synthetic result. Context from every hook
  is kept in order.
* Approvals (when an approver is configured): an ``ask``/``defer`` answer, or any answer that
  lets the call through from a hook with ``approval: required``, marks the outcome as needing
  a person (the first such hook is the one named) and the chain goes on, so a later block
  still wins without bothering anyone and the person sees the input the later hooks
  rewrote. The engine then asks the approver. Without an approver both block.
* Failures on blocking events: a malformed answer always blocks; an error follows
  ``on_error``; a timeout follows ``on_timeout``; an exhausted chain budget blocks.
* Non-blocking events run their hooks concurrently; nothing they answer can block, every
  answer is folded in hook order and recorded in the trace.
* Faults (errors, timeouts, malformed answers) count toward the breaker; deliberate blocks
  do not.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from time import perf_counter
from typing import TYPE_CHECKING, Any, NamedTuple

from hookgate.compiled_hook import HookList
from hookgate.events import (
    ABORT,
    BLOCK,
    CONTEXT,
    LONG_WAIT_ABOVE_S,
    RESULT,
    UPDATED_INPUT,
    EventSpec,
)
from hookgate.matching import FilterBudgetError, FilterError, cel_activation
from hookgate.outcall_types import OUTCALL_TYPES
from hookgate.outcome import (
    BLOCKING_DECISIONS,
    HookError,
    HookResult,
    InfrastructureError,
    MalformedAnswer,
    Outcome,
    PendingApproval,
    TraceRow,
    abstained_outcome,
    check_result,
    coerce_result,
    matched_row,
)

if TYPE_CHECKING:
    from hookgate.compiled_hook import CompiledHook
    from hookgate.safeguards import BreakerBoard

__all__ = [
    "Batch",
    "Call",
    "Chain",
    "ChainSettings",
    "Execute",
    "HookReply",
    "Reply",
    "drive_sync",
    "stops_blocking_batch",
    "run_chain",
]


# Calls and batches are plain tuples, named here and unpacked by name where read: a NamedTuple
# costs ~0.3 µs more to build, once per hook per event (bench/bench_core.py).

#: A call is ``(hook, timeout_s, row, position, rows_after)``: run ``hook`` within
#: ``timeout_s`` seconds. The rest is the chain's bookkeeping: the hook's trace ``row``
#: (``None`` in an unconditional run: the fold makes it), its ``position`` in the sorted hook
#: list, and how many trace rows existed once it was admitted.
Call = tuple["CompiledHook", float, TraceRow | None, int, int]
#: A batch is ``(calls, payload, deadline)``: the payload every call of the batch sees, and the
#: chain deadline (clock time) on blocking events, ``None`` on non-blocking ones.
Batch = tuple[tuple[Call, ...], Mapping[str, Any], float | None]


class HookReply(NamedTuple):
    """What one hook's call came to: the handler's raw answer (``None``: it abstained), or
    the exception it raised, or a timeout."""

    answer: Any
    error: BaseException | None
    timed_out: bool
    duration_ms: float


#: A call's reply: a :class:`HookReply`, or an unconditional run's abstention as its final
#: :class:`~hookgate.outcome.TraceRow`, made by :mod:`hookgate.execution.unconditional`'s call loop
#: (one object per hook instead of two); told apart by class.
Reply = HookReply | TraceRow
#: What a caller that runs each batch at once passes to :func:`drive_sync`: runs a batch's
#: ``(calls, payload, deadline)``.
Execute = Callable[[tuple[Call, ...], Mapping[str, Any], float | None], Sequence[Reply]]
#: An unconditional run (see :func:`_unconditional_run`): from which position every hook is
#: unconditional (admitted without a look at the payload), and the calls for those hooks.
UnconditionalRun = tuple[int, tuple[Call, ...]]


def stops_blocking_batch(reply: Reply) -> bool:
    """Whether a blocking batch stops after this reply (an answer, a failure, a timeout)."""
    if reply.__class__ is not HookReply:
        return False  # an unconditional run's abstention
    return reply[0] is not None or reply[1] is not None or bool(reply[2])


@dataclass(slots=True)
class ChainSettings:
    chain_budget_s: float = 10.0
    max_depth: int = 3
    clock: Callable[[], float] = time.monotonic
    breakers: BreakerBoard | None = None
    #: Dry runs (``hooks.test``) ignore the breaker and do not feed it.
    dry_run: bool = False
    #: An approver is configured: ``ask``/``defer`` wait for a person instead of blocking.
    approvals: bool = False
    #: The breaker entries the chain reads (none in a dry run). Hooks that never faulted
    #: have none: one dict miss per hook.
    faulted: Mapping[str, Any] = field(init=False)

    def __post_init__(self) -> None:
        breakers = None if self.dry_run else self.breakers
        self.faulted = breakers.statuses if breakers is not None else {}


def run_chain(
    hooks: Sequence[CompiledHook],
    spec: EventSpec,
    payload: Mapping[str, Any],
    settings: ChainSettings,
) -> Chain:
    """The chain that folds the answers of ``hooks`` for one event into one :class:`Outcome`,
    at its first step (:attr:`Chain.first`): a driver takes it from there.

    A hook list that is one unconditional run (see :func:`_unconditional_run`; the common case)
    with no breaker entry at all has its one batch known before the chain's state is made:
    when every hook abstains, the replies are the trace and that state is never needed."""
    # Chain(...) without a Python __init__: this is once per event.
    chain: Chain = _new(Chain)
    chain.hooks = hooks
    chain.spec = spec
    chain.payload = payload
    chain.settings = settings
    if spec.blocking and hooks and not settings.faulted and "depth" not in payload:
        # _unconditional_run, inline for a list that keeps its run: this is once per event.
        run = hooks.unconditional_run if type(hooks) is HookList else None
        if run is None:
            run = _unconditional_run(hooks)
        if run[0] == 0:
            chain.state = None
            chain.run = run
            deadline = chain.deadline = settings.clock() + settings.chain_budget_s
            chain.first = (run[1], payload, deadline)
            return chain
    state = chain.state = _Chain(hooks, spec, payload, settings)
    if "depth" in payload and state.too_deep(payload):
        chain.first = state.outcome
    else:
        chain.first = chain._admit(state)
    return chain


class Chain:
    """One event's chain, as a driver takes it: :attr:`first` is its first step,
    :meth:`resume` gives the next once the driver ran a batch and has its replies. A step is a
    :data:`Batch` to run (a tuple) or the final :class:`Outcome`.

    A state machine rather than a generator: a generator's return is a ``StopIteration``
    raised and caught once per event, which costs more than the steps of a chain whose hooks
    all abstain (bench/bench_core.py). For drivers written against the generator protocol it
    also has ``next`` and ``send`` (the outcome as ``StopIteration``'s value): the same
    steps."""

    __slots__ = (
        "calls",
        "deadline",
        "first",
        "hooks",
        "payload",
        "run",
        "settings",
        "spec",
        "state",
    )

    hooks: Sequence[CompiledHook]
    spec: EventSpec
    payload: Mapping[str, Any]
    settings: ChainSettings
    #: The first step, made by :func:`run_chain`.
    first: Batch | Outcome
    #: The chain's state, made once a hook answers (at once off the unconditional path);
    #: ``None`` while the unconditional run's batch is out.
    state: _Chain | None
    #: The unconditional run out as the first batch, and its deadline.
    run: UnconditionalRun
    deadline: float
    #: The batch out on the general path (admitted by ``state``).
    calls: tuple[Call, ...]

    def resume(self, replies: Sequence[Reply]) -> Batch | Outcome:
        """The next step, given the replies to the batch of the last one."""
        chain = self.state
        if chain is None:  # the unconditional run's batch
            run = self.run
            run_calls = run[1]
            # Every hook abstained when the batch ran to its end and its last reply is a row
            # (the driver stops at the first reply that matters): the replies are the trace.
            last = replies[-1] if len(replies) == len(run_calls) else None
            if isinstance(last, TraceRow):  # every hook abstained
                rows: Any = replies if replies.__class__ is list else list(replies)
                return abstained_outcome(rows)
            # As admission would have made it, with the batch in flight: fold its replies.
            chain = self.state = _Chain(
                self.hooks, self.spec, self.payload, self.settings, self.deadline, run
            )
            chain.index = len(run_calls)
            if chain.fold_blocking(run_calls, replies):
                return chain.outcome
        elif chain.fold(self.calls, replies):
            return chain.outcome
        return self._admit(chain)

    def _admit(self, chain: _Chain) -> Batch | Outcome:
        if chain.index < len(self.hooks):
            calls = chain.admit()
            if calls is not None:
                self.calls = calls
                return (calls, chain.current, chain.deadline)
        return chain.outcome

    # -- the generator protocol -----------------------------------------------------------------

    def __iter__(self) -> Chain:
        return self

    def __next__(self) -> Batch:
        """The first batch (:attr:`first`); ``StopIteration`` with the outcome when none."""
        return _batch(self.first)

    def send(self, replies: Sequence[Reply]) -> Batch:
        """The next batch (:meth:`resume`); ``StopIteration`` with the outcome when done."""
        return _batch(self.resume(replies))


def _batch(step: Batch | Outcome) -> Batch:
    if isinstance(step, Outcome):
        raise StopIteration(step)
    return step


def drive_sync(chain: Chain, run_batch: Execute) -> Outcome:
    """Drive a chain for a caller that runs each batch at once in its own thread (plain
    functions, in place or on a worker it waits for): each batch the chain gives goes to
    ``run_batch``, and its replies back."""
    step = chain.first
    while step.__class__ is tuple:
        step = chain.resume(run_batch(*step))
    return step  # type: ignore[return-value]


_new: Any = object.__new__


def _unconditional_run(hooks: Sequence[CompiledHook]) -> UnconditionalRun:
    """Where the run of unconditional hooks at the end of ``hooks`` starts, and its calls.

    An unconditional hook (:attr:`CompiledHook.unconditional`: enabled, no matcher, no
    ``if_expr``, no required approval, no long wait) is admitted whatever the payload, so the
    calls of a run of them are made once per hook list (kept on it:
    :attr:`HookList.unconditional_run`) instead of once per event; the driver (an abstention)
    or the fold makes their trace rows. Blocking chains only: that is where the caller waits.
    """
    if isinstance(hooks, HookList):
        kept: UnconditionalRun | None = hooks.unconditional_run
        if kept is not None:
            return kept
    start = count = len(hooks)
    while start and hooks[start - 1].unconditional:
        start -= 1
    calls = tuple((hooks[p], hooks[p].timeout_s, None, p, p + 1) for p in range(start, count))
    run = (start, calls)
    if isinstance(hooks, HookList):
        hooks.unconditional_run = run
    return run


# -- trace rows ---------------------------------------------------------------------------------
# A row is a TraceRow (made in ``_Chain.admit``, or in the fold for an unconditional run's
# hook), turned into a TraceEntry only when read. An unconditional run's abstention is final:
# the call loop makes its row.


def _record(row: TraceRow, decision: str, error: str | None = None) -> None:
    row.decision = decision
    if error is not None:
        row.error = error


def _details(row: TraceRow) -> dict[str, Any]:
    details = row.details
    if details is None:
        details = row.details = {}
    return details


class _Chain:
    """The state of one chain run; each method is one phase of :func:`run_chain`."""

    __slots__ = (
        "activation",
        "blocking",
        "breakers",
        "copied",
        "current",
        "deadline",
        "ended",
        "faulted",
        "hooks",
        "index",
        "outcome",
        "unconditional_calls",
        "unconditional_from",
        "rows",
        "settings",
        "spec",
    )

    def __init__(
        self,
        hooks: Sequence[CompiledHook],
        spec: EventSpec,
        payload: Mapping[str, Any],
        settings: ChainSettings,
        deadline: float | None = None,
        run: UnconditionalRun | None = None,
    ) -> None:
        """``deadline``: a blocking chain's, when the caller read the clock for it; ``run``:
        the hook list's unconditional run, when the caller looked it up."""
        self.hooks = hooks
        self.spec = spec
        self.settings = settings
        self.outcome = outcome = Outcome()
        #: Trace rows: lists while the chain may still change them, a tuple once final.
        self.rows: list[TraceRow] = []
        outcome._rows = self.rows
        self.blocking = blocking = spec.blocking
        self.breakers = None if settings.dry_run else settings.breakers
        self.faulted = settings.faulted
        #: The payload the next hooks see (a copy once a hook rewrote the input).
        self.current: Mapping[str, Any] = payload
        self.copied = False
        #: The if_expr activation of ``current``, made on first use.
        self.activation: dict[str, Any] | None = None
        self.index = 0
        #: The outcome is final (a block, a synthetic result, an abort).
        self.ended = False
        if blocking:
            #: Clock time by which a blocking chain must be done (long waits extend it).
            self.deadline: float | None = (
                deadline if deadline is not None else settings.clock() + settings.chain_budget_s
            )
            self.unconditional_from, self.unconditional_calls = run or _unconditional_run(hooks)
        else:
            self.deadline = None
            self.unconditional_from, self.unconditional_calls = len(hooks), ()

    # -- admission ------------------------------------------------------------------------------

    def too_deep(self, payload: Mapping[str, Any]) -> bool:
        """The loop guard: an event nested deeper than ``max_depth`` runs no hooks."""
        depth = payload.get("depth", 0)
        if isinstance(depth, int) and depth > self.settings.max_depth:
            self.refuse_too_deep(depth)
            return True
        return False

    def refuse_too_deep(self, depth: int) -> None:
        from hookgate.log import log_event

        max_depth = self.settings.max_depth
        log_event(
            "security.hook.loop_depth_exceeded",
            event=self.spec.name,
            depth=depth,
            max_depth=max_depth,
        )
        if self.blocking:
            self._block(f"sub-agent depth {depth} exceeds the limit of {max_depth} (loop guard)")

    def admit(self) -> tuple[Call, ...] | None:
        """The next batch: every remaining hook, judged against the current payload.

        ``None`` when the chain is over (nothing left to run, or admission decided it). On a
        blocking event a hook whose breaker has faulted starts a batch of its own, so that a
        half-open probe is never admitted and then discarded.
        """
        index = self.index
        if index >= self.unconditional_from:
            run_calls = self._unconditional_calls(index)
            if run_calls:
                self.index = index + len(run_calls)
                return run_calls
        hooks = self.hooks
        count = len(hooks)
        rows, blocking = self.rows, self.blocking
        watching = self.breakers is not None
        faulted = self.faulted
        budgeted = self.deadline is not None  # (a long wait moves the deadline, never unsets it)
        batch: list[Call] = []
        while index < count:
            hook = hooks[index]
            watched = watching and hook.definition.id in faulted
            if watched and blocking and batch:
                break
            index += 1
            row = TraceRow(hook)
            rows.append(row)
            timeout_s = self._judge(hook, row, watched)
            if timeout_s is None:
                if self.ended:
                    return None
                continue
            if (
                budgeted
                and (not batch or hook.timeout_s > LONG_WAIT_ABOVE_S)
                and not self._within_budget(hook, row, batch)
            ):
                return None
            batch.append((hook, timeout_s, row, index - 1, len(rows)))
            if watched and blocking:
                break
        self.index = index
        return tuple(batch) if batch else None

    def _unconditional_calls(self, index: int) -> tuple[Call, ...]:
        """The calls of the unconditional run from ``index`` (see _unconditional_run), up to
        the first hook with a breaker entry: that one is admitted by the general admission, in
        a batch of its own. The driver checks the deadline; when it stopped there,
        fold_blocking ends unconditional runs so that the admission reports the spent
        budget."""
        run_calls = self.unconditional_calls[index - self.unconditional_from :]
        faulted = self.faulted
        if faulted:
            for at, call in enumerate(run_calls):
                if call[0].definition.id in faulted:
                    return run_calls[:at]
        return run_calls

    def _judge(self, hook: CompiledHook, row: TraceRow, watched: bool) -> float | None:
        """Whether ``hook`` runs against the current payload: its timeout, or ``None`` when it
        is skipped (``ended`` set when that ends the chain). ``watched``: it has a breaker
        entry."""
        if not hook.definition.enabled:
            row.skipped = "disabled"
            return None
        if hook.matcher is not None:
            match_field = self.spec.match_field
            subject = self.current.get(match_field) if match_field else ""
            matched = hook.matcher.matches(subject if isinstance(subject, str) else "")
            _details(row)["matcher_matched"] = matched
            if not matched:
                row.skipped = "matcher did not match"
                return None
        timeout_s = hook.timeout_s
        if hook.condition is not None:
            left = self._filter(hook, row)
            if left is None:
                return None
            timeout_s = left
        row.matched = True
        if watched and not self._breaker_admits(hook, row):
            return None
        return timeout_s

    def _filter(self, hook: CompiledHook, row: TraceRow) -> float | None:
        """Evaluate the hook's ``if_expr``: the time left of its timeout, or ``None`` to skip
        it (``ended`` set when that failure blocks the chain)."""
        assert hook.condition is not None
        definition = hook.definition
        filter_started = perf_counter()
        try:
            if self.activation is None:
                self.activation = cel_activation(self.spec.name, self.current)
            passed = hook.condition.evaluate(self.activation)
        except FilterBudgetError as exc:
            # Input too large to filter: the hook cannot tell whether it applies, so it
            # fails, by its on_error policy (padding must not slip past a guard).
            row.matched = True
            _record(row, "error", str(exc))
            if self.blocking and definition.on_error != "allow":
                self._fail_closed(definition, str(exc))
            else:
                row.skipped = "if_expr input over its bound"
            return None
        except FilterError as exc:
            _details(row)["cel_eval_result"] = None
            row.skipped = "if_expr could not be evaluated"
            row.error = str(exc)
            return None
        _details(row)["cel_eval_result"] = passed
        if not passed:
            row.skipped = "if_expr is false"
            return None
        # The filter's time counts against the hook's timeout.
        spent = perf_counter() - filter_started
        timeout_s = hook.timeout_s - spent
        if timeout_s > 0:
            return timeout_s
        row.matched = True
        _record(
            row,
            "timeout",
            f"if_expr took {spent * 1000:.0f} ms, the whole {definition.timeout_ms} ms timeout",
        )
        if self.blocking and definition.on_timeout == "block":
            self._fail_closed(definition, row.error or "timed out")
        return None

    def _breaker_admits(self, hook: CompiledHook, row: TraceRow) -> bool:
        """An open breaker never opens a door: skipped when observing, else ``on_error``."""
        assert self.breakers is not None
        definition = hook.definition
        state = self.breakers.admit(definition.id)
        if state == "closed":
            return True
        row.breaker = state
        if state != "open":
            return True  # half-open: this call is the probe
        if not self.blocking:
            row.skipped = "circuit breaker open"
            return False
        _record(row, "error", "circuit breaker open; handler not called")
        if definition.on_error == "allow":
            row.skipped = "circuit breaker open (on_error=allow)"
            return False
        self._block(
            f"hook {definition.label!r} is failing (circuit breaker open); "
            "blocked by its failure policy"
        )
        return False

    def _within_budget(self, hook: CompiledHook, row: TraceRow, batch: list[Call]) -> bool:
        """Check (and for long waits, extend) the chain deadline; False ends the chain.
        ``admit`` calls it only where it can matter (first call of a batch, a long wait)."""
        deadline = self.deadline
        assert deadline is not None
        clock = self.settings.clock
        if not batch and clock() >= deadline:
            _record(row, "timeout", "chain budget exhausted before this hook ran")
            self._block(f"hook chain exceeded its {self.settings.chain_budget_s:g} s budget")
            return False
        if hook.timeout_s > LONG_WAIT_ABOVE_S:
            # Only approval and quality-gate hooks may take longer than 10 s: such a hook gets
            # its whole timeout from now, past the chain budget.
            self.deadline = max(deadline, clock() + hook.timeout_s)
        return True

    # -- blocking fold --------------------------------------------------------------------------

    def fold(self, calls: tuple[Call, ...], replies: Sequence[Reply]) -> bool:
        """Apply a batch's replies by the chain's kind; True when the outcome is final (a
        non-blocking chain's never is: it runs every hook)."""
        if self.blocking:
            return self.fold_blocking(calls, replies)
        self.fold_observing(calls, replies)
        return False

    def fold_blocking(self, calls: tuple[Call, ...], replies: Sequence[Reply]) -> bool:
        """Apply a blocking batch's replies in order; True when the outcome is final.

        The driver stops after the first reply that matters, so at most the last reply
        answered; admission then resumes after it, against the payload it left.
        """
        breakers, faulted, rows = self.breakers, self.faulted, self.rows
        # An unconditional run's batch that ran to its end, every hook abstaining (see
        # run_chain): its replies are its rows.
        if replies and len(replies) == len(calls) and isinstance(replies[-1], TraceRow):
            rows.extend(replies)  # type: ignore[arg-type]  # each a TraceRow: checked above
            return False
        resumed = False
        # Not strict: a blocking batch's driver stops early by contract (and zip's keyword
        # costs ~1.7k instructions here, once per answer).
        for call, reply in zip(calls, replies):  # noqa: B905
            hook, _, row, position, rows_after = call
            if isinstance(reply, TraceRow):
                # An unconditional run's hook (see _unconditional_run) has no breaker entry and
                # needs no approval: its abstention is its final trace row, made by the call loop.
                rows.append(reply)
                continue
            answer, failure, timed_out, duration = reply
            if row is None:  # an unconditional run's hook that answered: its row, as admit makes it
                row = matched_row(hook, duration)
                rows.append(row)
            else:
                row.duration_ms = duration
            definition = hook.definition
            if definition.handler_type in OUTCALL_TYPES:
                row.answer = reply  # sealed into the dispatch record, for replay
            result: HookResult | None = None
            if failure is None and not timed_out:
                if answer is None:
                    # Abstaining is the common case: nothing to fold.
                    if breakers is not None and definition.id in faulted:
                        breakers.success(definition.id)
                    row.decision = "abstain"
                    approval = definition.approval
                    if (
                        approval is not None
                        and approval.required
                        and self._ask(row, definition, "required", None)
                    ):
                        return True
                    continue
                try:
                    result = self._read(answer)
                except MalformedAnswer as exc:
                    failure = exc
            # Admissions after the answering hook were judged on the old payload: drop them.
            del rows[rows_after:]
            self.index = position + 1
            resumed = True
            if timed_out or failure is not None:
                if self._failed(row, definition, failure, timed_out, duration) == "block":
                    self._fail_closed(definition, row.error or "failed")
                    return True
                break
            if breakers is not None and definition.id in faulted:
                breakers.success(definition.id)
            if result is None:
                row.decision = "abstain"
                continue
            self._note(row, result)
            if self._decide(row, definition, result):
                return True
            break  # a blocking batch stops after an answer
        if not resumed and len(replies) < len(calls):
            # The driver stopped at the deadline; the next admission reports the budget (not
            # an unconditional run's, which does not look at the clock).
            _, _, _, position, rows_after = calls[len(replies)]
            del rows[rows_after - 1 :]
            self.index = position
            self.unconditional_from = len(self.hooks)
        return False

    def _decide(self, row: TraceRow, definition: Any, result: HookResult) -> bool:
        """One answer on a blocking event; True when it ends the chain."""
        outcome = self.outcome
        if result.abort is not None:
            label = definition.label
            row.decision = "abort"
            outcome.abort = result.abort
            outcome.continue_ = result.continue_ and result.abort != "hard"
            outcome.retry = result.retry
            self._block(
                result.reason
                or (
                    f"hook {label!r} aborted the turn"
                    if result.abort == "turn"
                    else f"hook {label!r} stopped the agent loop (hard abort)"
                )
            )
            return True
        if result.decision in ("ask", "defer") and result.continue_ and self.settings.approvals:
            self._ask(
                row,
                definition,
                result.decision,
                result.reason,
                result.details.get("approval_override"),
            )
            if result.updated_input is not None:
                self._rewrite(result)
            return False  # like an allow: the chain goes on; the person decides at the end
        if result.decision in BLOCKING_DECISIONS or not result.continue_:  # result.blocks
            label = definition.label
            row.decision = "block"
            outcome.continue_ = result.continue_
            outcome.retry = result.retry
            if result.decision in ("ask", "defer"):
                self._block(
                    f"hook {label!r} asked for approval ({result.decision}) and no approver "
                    "is configured" + (f": {result.reason}" if result.reason else "")
                )
            else:
                self._block(result.reason or f"blocked by hook {label!r}")
            return True
        if result.updated_input is not None:
            self._rewrite(result)
        required = definition.approval is not None and definition.approval.required
        if result.result is not None:
            row.decision = "respond"
            outcome.result = result.result
            outcome.reason = result.reason
            if required:
                self._ask(row, definition, "required", result.reason)
            self.ended = True
            return True
        row.decision = "allow"
        if result.decision == "allow":
            # Said so, rather than only rewrote or added context (see Outcome).
            self.outcome.explicitly_allowed = True
        return required and self._ask(row, definition, "required", result.reason)

    # -- observing fold -------------------------------------------------------------------------

    def fold_observing(self, calls: tuple[Call, ...], replies: Sequence[Reply]) -> None:
        """Apply a non-blocking batch's replies in hook order: recorded, never enforced."""
        breakers, faulted, outcome, spec = self.breakers, self.faulted, self.outcome, self.spec
        for call, reply in zip(calls, replies, strict=False):
            hook, _, row, position, rows_after = call
            # Non-blocking chains have no unconditional runs: every call has a row, every reply is a
            # HookReply.
            assert row is not None and isinstance(reply, HookReply)
            answer, failure, timed_out, duration = reply
            definition = hook.definition
            row.duration_ms = duration
            if definition.handler_type in OUTCALL_TYPES:
                row.answer = reply  # sealed into the dispatch record, for replay
            result: HookResult | None = None
            if failure is None and not timed_out:
                if answer is None:
                    if breakers is not None and definition.id in faulted:
                        breakers.success(definition.id)
                    row.decision = "abstain"
                    continue
                try:
                    result = self._read(answer)
                except MalformedAnswer as exc:
                    failure = exc
            if timed_out or failure is not None:
                self._failed(row, definition, failure, timed_out, duration)
                continue
            if breakers is not None and definition.id in faulted:
                breakers.success(definition.id)
            if result is None:
                row.decision = "abstain"
                continue
            self._note(row, result)
            row.decision = "block" if result.blocks or result.abort else "allow"
            if result.abort is not None:
                # Handed to a caller that waits (first in hook order); nothing else of the
                # chain stops.
                _details(row)["abort"] = result.abort
                _details(row)["note"] = "non-blocking event: abort reported, not enforced"
                if outcome.abort is None:
                    outcome.abort = result.abort
                    if result.abort == "hard":
                        outcome.continue_ = False
            elif result.blocks:
                _details(row)["note"] = "non-blocking event: block recorded, not enforced"
            if not result.continue_:
                outcome.continue_ = False
            if result.updated_input is not None:
                if spec.allows(UPDATED_INPUT) and spec.input_field:
                    outcome.updated_input = result.updated_input
                else:
                    _details(row)["note"] = f"{spec.name} takes no updated_input; ignored"

    # -- shared by both folds -------------------------------------------------------------------

    def _read(self, answer: Any) -> HookResult | None:
        """A raw answer as a :class:`HookResult`; raises :class:`MalformedAnswer`."""
        spec = self.spec
        if answer.__class__ is HookResult:  # coerce_result's own path for one, a call less
            check_result(answer)
            result: HookResult | None = answer
        else:
            if spec.answer_keys is not None and isinstance(answer, Mapping):
                answer = _home_answer(answer, spec.answer_keys)
            result = coerce_result(answer)
        if result is not None and self.blocking:
            _check_allowed(result, spec)
        return result

    def _note(self, row: TraceRow, result: HookResult) -> None:
        """Record what every answer carries: details, reason, and context (kept in order)."""
        if result.details:
            if row.details is None:
                row.details = dict(result.details)
            else:
                row.details.update(result.details)
        if result.reason:
            _details(row)["reason"] = result.reason
        if result.additional_context:
            if not self.blocking or self.spec.allows(CONTEXT):
                self.outcome.additional_context.extend(result.additional_context)
            else:
                _details(row)["note"] = f"{self.spec.name} takes no additional_context; ignored"

    def _rewrite(self, result: HookResult) -> None:
        self.current, self.copied = _rewrite(
            self.current, self.copied, self.spec, result, self.outcome
        )
        self.activation = None  # later if_expr see the rewrite

    def _ask(
        self,
        row: TraceRow,
        definition: Any,
        kind: str,
        reason: str | None,
        override: Mapping[str, Any] | None = None,
    ) -> bool:
        if _ask(self.outcome, row, definition, kind, reason, self.settings, override):
            self.ended = True
            return True
        return False

    # -- failure policy -------------------------------------------------------------------------

    def _failed(
        self,
        row: TraceRow,
        definition: Any,
        failure: BaseException | None,
        timed_out: bool,
        duration: float,
    ) -> str:
        """Record a fault (it feeds the breaker) and return the policy that applies to it:
        ``on_timeout`` for a timeout, ``on_error`` for an error, ``block`` when malformed."""
        infrastructure = isinstance(failure, InfrastructureError)
        if self.breakers is not None and not infrastructure:  # Redis or the database failed
            self.breakers.fault(definition.id, "timeout" if timed_out else _message(failure))
        if isinstance(failure, HookError) and failure.details:
            _details(row).update(failure.details)
        if timed_out:
            _record(
                row,
                "timeout",
                "timed out"
                + (f" after {duration:.0f} ms" if duration else "")
                + f" (limit {definition.timeout_ms} ms)",
            )
            return str(definition.on_timeout)
        malformed = isinstance(failure, MalformedAnswer)
        _record(row, "error", ("malformed answer: " if malformed else "") + _message(failure))
        return "block" if malformed or infrastructure else str(definition.on_error)

    def _fail_closed(self, definition: Any, detail: str) -> None:
        self._block(f"hook {definition.label!r} failed closed: {detail}")

    def _block(self, reason: str) -> None:
        self.outcome.decision = "block"
        self.outcome.reason = reason
        self.ended = True


def _rewrite(
    current: Mapping[str, Any],
    copied: bool,
    spec: EventSpec,
    result: HookResult,
    outcome: Outcome,
) -> tuple[Mapping[str, Any], bool]:
    """Apply a hook's ``updated_input`` to the payload later hooks see."""
    input_field = spec.input_field
    assert input_field is not None  # _check_allowed guarantees it
    if not copied:
        current = dict(current)
        copied = True
    current[input_field] = result.updated_input  # type: ignore[index]
    outcome.updated_input = result.updated_input
    return current, copied


def _ask(
    outcome: Outcome,
    row: TraceRow,
    definition: Any,
    kind: str,
    reason: str | None,
    settings: ChainSettings,
    override: Mapping[str, Any] | None = None,
) -> bool:
    """Mark the outcome as needing a person; True when that blocks (no approver).
    ``override``: this answer's own approval timeout / policy (OpenClaw's requireApproval)."""
    row.decision = "ask"
    if reason:
        _details(row)["reason"] = reason
    if not settings.approvals:
        outcome.decision = "block"
        outcome.reason = (
            f"hook {definition.label!r} requires approval and no approver is configured"
        )
        return True
    if outcome.pending_approval is None:
        outcome.pending_approval = PendingApproval(definition, kind, reason, override)
    return False


def _check_allowed(result: HookResult, spec: EventSpec) -> None:
    """On a blocking event, an answer may only use what the event allows."""
    blocks = result.decision in BLOCKING_DECISIONS or not result.continue_  # result.blocks
    if blocks and not spec.allows(BLOCK):
        raise MalformedAnswer(f"{spec.name} cannot be blocked by a hook")
    if result.updated_input is not None and not (spec.allows(UPDATED_INPUT) and spec.input_field):
        raise MalformedAnswer(f"{spec.name} takes no updated_input")
    if result.result is not None and not spec.allows(RESULT):
        raise MalformedAnswer(f"{spec.name} takes no synthetic result")
    if result.abort is not None and not spec.allows(ABORT):
        raise MalformedAnswer(f"{spec.name} cannot be aborted by a hook")
    if result.updated_input is not None and spec.check_input is not None:
        problem = spec.check_input(result.updated_input)
        if problem is not None:
            raise MalformedAnswer(f"{spec.name}: {problem}")


def _home_answer(answer: Mapping[str, Any], keys: Mapping[str, str]) -> Mapping[str, Any]:
    """An answer in the event's home-system shape (OpenClaw's ``{block: true}``,
    ``{message}``, ``{prependContext}``, ``{cancel, cancelReason}``) in hookgate's."""
    if not any(key in keys for key in answer):
        return answer
    out: dict[str, Any] = {}
    for key, value in answer.items():
        target = keys.get(key)
        if target is None:
            out[key] = value
        elif target == "block":
            if not isinstance(value, bool):
                raise MalformedAnswer(f"{key!r} must be true or false, got {value!r}")
            if value:
                out.setdefault("decision", "block")
        elif value is not None:
            out.setdefault(target, value)
    return out


def _message(error: BaseException | None) -> str:
    if error is None:
        return "unknown error"
    text = str(error)
    return text if isinstance(error, HookError) else f"{type(error).__name__}: {text}"
