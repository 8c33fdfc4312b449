"""The chain: every rule for folding hook answers into one outcome lives in :func:`run_chain`.

:func:`run_chain` is a generator. It decides which hooks run, in what order and with which
timeout, and yields :data:`Batch` es of calls; a driver executes them (with or without an
event loop) and sends back one :data:`Reply` per call it ran. Because the driver only executes
and the generator only decides, the outcome is the same whichever driver runs it and whichever
hook finishes first.

The driver contract: a batch with a ``deadline`` (a blocking event) runs in order, each call
within ``min(its timeout, deadline - now)``, and stops after the first call that answered
something (not ``None``), failed or timed out, or when the deadline has passed; a batch without
one (non-blocking) runs every call concurrently. Running abstaining hooks back to back is the
same as running them one at a time, because an abstention changes nothing the next hook sees;
admissions past the stopping point are discarded and made again against the new payload.

Rules, in order of application:

* Order: priority, higher first; ties by ``order`` (registration order / creation time), then
  by hook id. The caller passes hooks already sorted by :func:`sort_key`.
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
from collections.abc import Callable, Generator, Mapping, Sequence
from dataclasses import dataclass
from time import perf_counter
from typing import TYPE_CHECKING, Any

from hookgate.events import (
    ABORT,
    BLOCK,
    CONTEXT,
    MAX_TIMEOUT_MS,
    RESULT,
    UPDATED_INPUT,
    EventSpec,
)
from hookgate.matching import FilterBudgetError, FilterError, cel_activation
from hookgate.outcome import (
    ROW_BREAKER,
    ROW_DECISION,
    ROW_DETAILS,
    ROW_DURATION,
    ROW_ERROR,
    ROW_MATCHED,
    ROW_SKIPPED,
    HookError,
    HookResult,
    MalformedAnswer,
    Outcome,
    coerce_result,
)

if TYPE_CHECKING:
    from hookgate.registry import CompiledHook
    from hookgate.safeguards import BreakerBoard

__all__ = [
    "Batch",
    "Call",
    "ChainGen",
    "ChainSettings",
    "Reply",
    "matters",
    "run_chain",
    "sort_key",
]

#: A call is ``(hook, timeout_s, row, hook_index, rows_after)``: run ``hook`` within
#: ``timeout_s`` seconds. ``row``, ``hook_index`` and ``rows_after`` are the chain's own
#: bookkeeping. Plain tuples keep the per-hook cost of the chain low.
Call = tuple["CompiledHook", float, list[Any], int, int]
#: A batch is ``(calls, payload, deadline)``: the payload every call of the batch sees, and the
#: chain deadline (clock time) for blocking events, ``None`` for non-blocking ones.
Batch = tuple[tuple[Call, ...], Mapping[str, Any], float | None]
#: A reply is ``(answer, error, timed_out, duration_ms)``: the handler's raw answer, or the
#: exception it raised, or a timeout.
Reply = tuple[Any, BaseException | None, bool, float]
ChainGen = Generator[Batch, Sequence[Reply], Outcome]
#: Hooks with a longer timeout (approvals, quality gates) are not bound by the chain budget.
_LONG_WAIT_S = MAX_TIMEOUT_MS / 1000


def matters(reply: Reply) -> bool:
    """Whether a blocking batch stops after this reply (an answer, a failure, a timeout)."""
    return reply[0] is not None or reply[1] is not None or reply[2]


def sort_key(priority: int, order: int, hook_id: str) -> tuple[int, int, str]:
    """The documented order: priority descending, then ``order`` ascending, then id."""
    return (-priority, order, hook_id)


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


def _details(row: list[Any]) -> dict[str, Any]:
    details: dict[str, Any] | None = row[ROW_DETAILS]
    if details is None:
        details = row[ROW_DETAILS] = {}
    return details


def run_chain(
    hooks: Sequence[CompiledHook],
    spec: EventSpec,
    payload: Mapping[str, Any],
    settings: ChainSettings,
) -> ChainGen:
    """Fold the answers of ``hooks`` for one event into one :class:`Outcome`."""
    outcome = Outcome()
    rows: list[list[Any]] = []
    outcome._rows = rows
    blocking = spec.blocking
    clock = settings.clock
    started = clock()
    breakers = None if settings.dry_run else settings.breakers
    # Hooks that never faulted have no breaker entry: one dict lookup instead of two calls.
    faulted = breakers.statuses if breakers is not None else {}
    budget = settings.chain_budget_s
    match_field = spec.match_field
    current: Mapping[str, Any] = payload
    copied = False
    activation: dict[str, Any] | None = None

    depth = payload.get("depth", 0)
    if isinstance(depth, int) and depth > settings.max_depth:
        from hookgate.log import log_event

        log_event(
            "security.hook.loop_depth_exceeded",
            event=spec.name,
            depth=depth,
            max_depth=settings.max_depth,
        )
        if blocking:
            outcome.decision = "block"
            outcome.reason = (
                f"sub-agent depth {depth} exceeds the limit of {settings.max_depth} (loop guard)"
            )
        return outcome

    deadline = started + budget if blocking else None
    index = 0
    count = len(hooks)
    while index < count:
        # Admission: every remaining hook, judged against the current payload. On a blocking
        # event a hook whose breaker has faulted starts a batch of its own, so that a
        # half-open probe is never admitted and then discarded.
        batch: list[Call] = []
        while index < count:
            hook = hooks[index]
            definition = hook.definition
            watched = breakers is not None and definition.id in faulted
            if watched and blocking and batch:
                break
            index += 1
            #      hook, matched, skipped, decision, duration, error, breaker, details
            row = [hook, False, None, None, 0.0, None, "closed", None]
            rows.append(row)
            if not definition.enabled:
                row[ROW_SKIPPED] = "disabled"
                continue
            if hook.matcher is not None:
                subject = current.get(match_field) if match_field else ""
                matched = hook.matcher.matches(subject if isinstance(subject, str) else "")
                _details(row)["matcher_matched"] = matched
                if not matched:
                    row[ROW_SKIPPED] = "matcher did not match"
                    continue
            timeout_s = hook.timeout_s
            if hook.condition is not None:
                filter_started = perf_counter()
                try:
                    if activation is None:
                        activation = cel_activation(spec.name, current)
                    passed = hook.condition.evaluate(activation)
                except FilterBudgetError as exc:
                    # Input too large to filter: the hook cannot tell whether it applies, so
                    # it fails, by its on_error policy (padding must not slip past a guard).
                    row[ROW_MATCHED] = True
                    row[ROW_DECISION] = "error"
                    row[ROW_ERROR] = str(exc)
                    if blocking and definition.on_error != "allow":
                        outcome.decision = "block"
                        outcome.reason = f"hook {definition.label!r} failed closed: {exc}"
                        return outcome
                    row[ROW_SKIPPED] = "if_expr input over its bound"
                    continue
                except FilterError as exc:
                    _details(row)["cel_eval_result"] = None
                    row[ROW_SKIPPED] = "if_expr could not be evaluated"
                    row[ROW_ERROR] = str(exc)
                    continue
                _details(row)["cel_eval_result"] = passed
                if not passed:
                    row[ROW_SKIPPED] = "if_expr is false"
                    continue
                # The filter's time counts against the hook's timeout.
                spent = perf_counter() - filter_started
                timeout_s -= spent
                if timeout_s <= 0:
                    row[ROW_MATCHED] = True
                    row[ROW_DECISION] = "timeout"
                    row[ROW_ERROR] = (
                        f"if_expr took {spent * 1000:.0f} ms, the whole "
                        f"{definition.timeout_ms} ms timeout"
                    )
                    if blocking and definition.on_timeout == "block":
                        outcome.decision = "block"
                        outcome.reason = (
                            f"hook {definition.label!r} failed closed: {row[ROW_ERROR]}"
                        )
                        return outcome
                    continue
            row[ROW_MATCHED] = True
            if watched:
                assert breakers is not None
                state = breakers.admit(definition.id)
                if state != "closed":
                    row[ROW_BREAKER] = state
                    if state == "open":
                        if not blocking:
                            row[ROW_SKIPPED] = "circuit breaker open"
                            continue
                        row[ROW_DECISION] = "error"
                        row[ROW_ERROR] = "circuit breaker open; handler not called"
                        if definition.on_error == "allow":
                            row[ROW_SKIPPED] = "circuit breaker open (on_error=allow)"
                            continue
                        outcome.decision = "block"
                        outcome.reason = (
                            f"hook {definition.label!r} is failing (circuit breaker open); "
                            "blocked by its failure policy"
                        )
                        return outcome
            if deadline is not None and not batch and clock() >= deadline:
                row[ROW_DECISION] = "timeout"
                row[ROW_ERROR] = "chain budget exhausted before this hook ran"
                outcome.decision = "block"
                outcome.reason = f"hook chain exceeded its {budget:g} s budget"
                return outcome
            if deadline is not None and hook.timeout_s > _LONG_WAIT_S:
                # Only approval and quality-gate hooks may take longer than 10 s: such a hook
                # gets its whole timeout from now, past the chain budget.
                deadline = max(deadline, clock() + hook.timeout_s)
            batch.append((hook, timeout_s, row, index - 1, len(rows)))
            if watched and blocking:
                break
        if not batch:
            break

        calls = tuple(batch)
        replies = yield (calls, current, deadline)

        # Folding: apply each answer in hook order.
        resume: Call | None = None
        for call, (answer, failure, timed_out, duration) in zip(calls, replies, strict=False):
            # strict=False: a blocking batch's driver stops early by contract
            hook, row = call[0], call[2]
            definition = hook.definition
            row[ROW_DURATION] = duration
            result: HookResult | None = None
            if failure is None and not timed_out:
                if answer is None:
                    # Abstaining is the common case: nothing to fold.
                    if breakers is not None and definition.id in faulted:
                        breakers.success(definition.id)
                    row[ROW_DECISION] = "abstain"
                    approval = definition.approval
                    if (
                        blocking
                        and approval is not None
                        and approval.required
                        and _ask(outcome, row, definition, "required", None, settings)
                    ):
                        return outcome
                    continue
                try:
                    if spec.answer_keys is not None and isinstance(answer, Mapping):
                        answer = _home_answer(answer, spec.answer_keys)
                    result = coerce_result(answer)
                    if result is not None and blocking:
                        _check_allowed(result, spec)
                except MalformedAnswer as exc:
                    failure = exc
            resume = call
            if blocking:
                # Admissions after the answering hook were judged on the old payload: drop them.
                del rows[call[4] :]
            if timed_out or failure is not None:
                if breakers is not None:
                    breakers.fault(definition.id, "timeout" if timed_out else _message(failure))
                if isinstance(failure, HookError) and failure.details:
                    _details(row).update(failure.details)
                if timed_out:
                    row[ROW_DECISION] = "timeout"
                    row[ROW_ERROR] = "timed out" + (
                        f" after {duration:.0f} ms" if duration else ""
                    ) + f" (limit {definition.timeout_ms} ms)"
                    policy = definition.on_timeout
                else:
                    malformed = isinstance(failure, MalformedAnswer)
                    row[ROW_DECISION] = "error"
                    row[ROW_ERROR] = ("malformed answer: " if malformed else "") + _message(failure)
                    policy = "block" if malformed else definition.on_error
                if blocking and policy == "block":
                    outcome.decision = "block"
                    outcome.reason = f"hook {definition.label!r} failed closed: {row[ROW_ERROR]}"
                    return outcome
                if blocking:
                    break
                continue
            if breakers is not None and definition.id in faulted:
                breakers.success(definition.id)
            if result is None:
                row[ROW_DECISION] = "abstain"
                continue
            label = definition.label
            if result.details:
                _details(row).update(result.details)
            if result.reason:
                _details(row)["reason"] = result.reason
            if result.additional_context:
                if spec.allows(CONTEXT) or not blocking:
                    outcome.additional_context.extend(result.additional_context)
                else:
                    _details(row)["note"] = f"{spec.name} takes no additional_context; ignored"
            if not blocking:
                row[ROW_DECISION] = "block" if result.blocks or result.abort else "allow"
                if result.abort is not None:
                    # Handed to a caller that waits (first in hook order); nothing else of
                    # the chain stops.
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
                continue
            if result.abort is not None:
                row[ROW_DECISION] = "abort"
                outcome.decision = "block"
                outcome.abort = result.abort
                outcome.continue_ = result.continue_ and result.abort != "hard"
                outcome.reason = result.reason or (
                    f"hook {label!r} aborted the turn"
                    if result.abort == "turn"
                    else f"hook {label!r} stopped the agent loop (hard abort)"
                )
                outcome.retry = result.retry
                return outcome
            if (
                result.decision in ("ask", "defer")
                and result.continue_
                and settings.approvals
            ):
                _ask(outcome, row, definition, result.decision, result.reason, settings,
                     result.details.get("approval_override"))
                if result.updated_input is not None:
                    current, copied = _rewrite(current, copied, spec, result, outcome)
                    activation = None
                break  # like an allow: the chain goes on; the person decides at the end
            if result.blocks:
                row[ROW_DECISION] = "block"
                outcome.decision = "block"
                outcome.continue_ = result.continue_
                if result.decision in ("ask", "defer"):
                    outcome.reason = (
                        f"hook {label!r} asked for approval ({result.decision}) and no approver "
                        "is configured" + (f": {result.reason}" if result.reason else "")
                    )
                else:
                    outcome.reason = result.reason or f"blocked by hook {label!r}"
                outcome.retry = result.retry
                return outcome
            if result.updated_input is not None:
                current, copied = _rewrite(current, copied, spec, result, outcome)
                activation = None  # later if_expr see the rewrite
            required = definition.approval is not None and definition.approval.required
            if result.result is not None:
                row[ROW_DECISION] = "respond"
                outcome.result = result.result
                outcome.reason = result.reason
                if required:
                    _ask(outcome, row, definition, "required", result.reason, settings)
                return outcome
            row[ROW_DECISION] = "allow"
            if result.decision == "allow":
                # Said so, rather than only rewrote or added context: bridges that can grant
                # a permission (Claude Code) grant it only then.
                _details(row)["explicit_allow"] = True
            if required and _ask(outcome, row, definition, "required", result.reason, settings):
                return outcome
            break  # a blocking batch stops after an answer
        if not blocking:
            continue
        if resume is not None:
            index = resume[3] + 1  # admit the rest again, against the new payload
        elif len(replies) < len(calls):
            # The driver stopped at the deadline; the next admission reports the budget.
            unrun = calls[len(replies)]
            del rows[unrun[4] - 1 :]
            index = unrun[3]
    return outcome


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
    row: list[Any],
    definition: Any,
    kind: str,
    reason: str | None,
    settings: ChainSettings,
    override: Mapping[str, Any] | None = None,
) -> bool:
    """Mark the outcome as needing a person; True when that blocks (no approver).
    ``override``: this answer's own approval timeout / policy (OpenClaw's requireApproval)."""
    row[ROW_DECISION] = "ask"
    if reason:
        _details(row)["reason"] = reason
    if not settings.approvals:
        outcome.decision = "block"
        outcome.reason = (
            f"hook {definition.label!r} requires approval and no approver is configured"
        )
        return True
    if outcome._ask is None:
        outcome._ask = (definition, kind, reason, override)
    return False


def _check_allowed(result: HookResult, spec: EventSpec) -> None:
    """On a blocking event, an answer may only use what the event allows."""
    if result.blocks and not spec.allows(BLOCK):
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
