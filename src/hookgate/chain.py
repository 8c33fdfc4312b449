"""The chain: every rule for folding hook answers into one outcome lives in :func:`run_chain`.

:func:`run_chain` is a generator. It decides which hooks run, in what order and with which
timeout, and yields batches of :class:`Call` objects; a driver executes them (sequentially or
concurrently, with or without an event loop) and sends back one :class:`Reply` per call.
Because the driver only executes and the generator only decides, the outcome is the same
whichever driver runs it and whichever hook finishes first.

Rules, in order of application:

* Order: priority, higher first; ties by ``order`` (registration order / creation time), then
  by hook id. The caller passes hooks already sorted by :func:`sort_key`.
* An event deeper than ``max_depth`` (sub-agent loops) blocks a blocking event and runs no
  hooks on a non-blocking one.
* A hook is skipped when disabled, when its matcher does not match the event's match field,
  or when its ``if_expr`` is false or fails to evaluate (the failure is in the trace).
* An open circuit breaker never opens a door: on a blocking event the hook's ``on_error``
  policy applies without calling it (block by default); on a non-blocking event it is skipped.
* Blocking events run hooks one at a time; each sees the rewrites of those before it.
  The first block (``decision: block``, ``continue: false``, an ``ask``/``defer`` with no
  approver, an abort) ends the chain, and so does a synthetic result. Context from every hook
  is kept in order.
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
from typing import TYPE_CHECKING, Any, Final

from hookgate.events import ABORT, BLOCK, CONTEXT, RESULT, UPDATED_INPUT, EventSpec
from hookgate.matching import FilterError, cel_activation
from hookgate.outcome import HookError, MalformedAnswer, Outcome, TraceEntry, coerce_result

if TYPE_CHECKING:
    from hookgate.registry import CompiledHook
    from hookgate.safeguards import BreakerBoard

__all__ = ["Call", "ChainSettings", "Reply", "run_chain", "sort_key"]

ChainGen = Generator[list["Call"], list["Reply"], Outcome]


def sort_key(priority: int, order: int, hook_id: str) -> tuple[int, int, str]:
    """The documented order: priority descending, then ``order`` ascending, then id."""
    return (-priority, order, hook_id)


@dataclass(slots=True)
class Call:
    """Run ``hook`` on ``payload`` within ``timeout_s`` seconds."""

    hook: CompiledHook
    payload: Mapping[str, Any]
    timeout_s: float
    entry: TraceEntry


@dataclass(slots=True)
class Reply:
    """What happened when a call ran: its raw answer, or the exception, or a timeout."""

    answer: Any = None
    error: BaseException | None = None
    timed_out: bool = False
    duration_ms: float = 0.0


@dataclass(slots=True)
class ChainSettings:
    chain_budget_s: float = 10.0
    max_depth: int = 3
    clock: Callable[[], float] = time.monotonic
    breakers: BreakerBoard | None = None
    #: Dry runs (``hooks.test``) ignore the breaker and do not feed it.
    dry_run: bool = False


_NO_MATCH_FIELD: Final = ""


def run_chain(
    hooks: Sequence[CompiledHook],
    spec: EventSpec,
    payload: Mapping[str, Any],
    settings: ChainSettings,
) -> ChainGen:
    """Fold the answers of ``hooks`` for one event into one :class:`Outcome`."""
    outcome = Outcome()
    trace = outcome.trace
    blocking = spec.blocking
    clock = settings.clock
    started = clock()
    breakers = None if settings.dry_run else settings.breakers
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

    index = 0
    count = len(hooks)
    while index < count:
        # Admission: pick the next hook (blocking) or every remaining hook (non-blocking).
        batch: list[Call] = []
        while index < count:
            hook = hooks[index]
            index += 1
            definition = hook.definition
            entry = TraceEntry(
                hook_id=definition.id,
                name=definition.name,
                handler_type=definition.handler_type,
                matched=False,
                version=definition.version,
            )
            trace.append(entry)
            if not definition.enabled:
                entry.skipped = "disabled"
                continue
            if hook.matcher is not None:
                field = spec.match_field
                subject = current.get(field) if field else _NO_MATCH_FIELD
                matched = hook.matcher.matches(subject if isinstance(subject, str) else "")
                entry.details["matcher_matched"] = matched
                if not matched:
                    entry.skipped = "matcher did not match"
                    continue
            if hook.condition is not None:
                if activation is None:
                    activation = cel_activation(spec.name, current)
                try:
                    passed = hook.condition.evaluate(activation)
                except FilterError as exc:
                    entry.details["cel_eval_result"] = None
                    entry.skipped = "if_expr could not be evaluated"
                    entry.error = str(exc)
                    continue
                entry.details["cel_eval_result"] = passed
                if not passed:
                    entry.skipped = "if_expr is false"
                    continue
            entry.matched = True
            if breakers is not None:
                state = breakers.admit(definition.id)
                entry.breaker = state
                if state == "open":
                    if not blocking:
                        entry.skipped = "circuit breaker open"
                        continue
                    entry.decision = "error"
                    entry.error = "circuit breaker open; handler not called"
                    if definition.on_error == "allow":
                        entry.skipped = "circuit breaker open (on_error=allow)"
                        continue
                    outcome.decision = "block"
                    outcome.reason = (
                        f"hook {definition.label!r} is failing (circuit breaker open); "
                        "blocked by its failure policy"
                    )
                    return outcome
            if blocking:
                remaining = settings.chain_budget_s - (clock() - started)
                if remaining <= 0:
                    entry.decision = "timeout"
                    entry.error = "chain budget exhausted before this hook ran"
                    outcome.decision = "block"
                    outcome.reason = f"hook chain exceeded its {settings.chain_budget_s:g} s budget"
                    return outcome
                batch.append(Call(hook, current, min(hook.timeout_s, remaining), entry))
                break
            batch.append(Call(hook, current, hook.timeout_s, entry))
        if not batch:
            break

        replies = yield batch

        # Folding: apply each answer in hook order.
        for call, reply in zip(batch, replies, strict=True):
            definition = call.hook.definition
            entry = call.entry
            entry.duration_ms = reply.duration_ms
            label = definition.label
            if reply.error is None and not reply.timed_out:
                try:
                    result = coerce_result(reply.answer)
                    if result is not None and blocking:
                        _check_allowed(result, spec)
                except MalformedAnswer as exc:
                    reply.error = exc
                    result = None
            else:
                result = None
            failure = reply.error
            if reply.timed_out or failure is not None:
                if breakers is not None:
                    breakers.fault(definition.id, _describe(reply))
                if isinstance(failure, HookError):
                    entry.details.update(failure.details)
                if reply.timed_out:
                    entry.decision = "timeout"
                    entry.error = f"timed out after {call.timeout_s * 1000:.0f} ms"
                    policy = definition.on_timeout
                else:
                    malformed = isinstance(failure, MalformedAnswer)
                    entry.decision = "error"
                    entry.error = ("malformed answer: " if malformed else "") + _message(failure)
                    policy = "block" if malformed else definition.on_error
                if blocking and policy == "block":
                    outcome.decision = "block"
                    outcome.reason = f"hook {label!r} failed closed: {entry.error}"
                    return outcome
                continue
            if breakers is not None:
                breakers.success(definition.id)
            if result is None:
                entry.decision = "abstain"
                continue
            entry.details.update(result.details)
            if result.reason:
                entry.details["reason"] = result.reason
            if result.additional_context:
                if spec.allows(CONTEXT) or not blocking:
                    outcome.additional_context.extend(result.additional_context)
                else:
                    entry.details["note"] = f"{spec.name} takes no additional_context; ignored"
            if not blocking:
                entry.decision = "block" if result.blocks else "allow"
                if result.blocks:
                    entry.details["note"] = "non-blocking event: block recorded, not enforced"
                if not result.continue_:
                    outcome.continue_ = False
                if result.updated_input is not None:
                    if spec.allows(UPDATED_INPUT) and spec.input_field:
                        outcome.updated_input = result.updated_input
                    else:
                        entry.details["note"] = f"{spec.name} takes no updated_input; ignored"
                continue
            if result.abort is not None:
                entry.decision = "abort"
                outcome.decision = "block"
                outcome.abort = result.abort
                outcome.continue_ = result.continue_ and result.abort != "hard"
                outcome.reason = result.reason or f"hook {label!r} aborted the {result.abort} turn"
                return outcome
            if result.blocks:
                entry.decision = "block"
                outcome.decision = "block"
                outcome.continue_ = result.continue_
                if result.decision in ("ask", "defer"):
                    outcome.reason = (
                        f"hook {label!r} asked for approval ({result.decision}) and no approver "
                        "is configured" + (f": {result.reason}" if result.reason else "")
                    )
                else:
                    outcome.reason = result.reason or f"blocked by hook {label!r}"
                return outcome
            if result.updated_input is not None:
                input_field = spec.input_field
                assert input_field is not None  # _check_allowed guarantees it
                if not copied:
                    current = dict(current)
                    copied = True
                current[input_field] = result.updated_input  # type: ignore[index]
                outcome.updated_input = result.updated_input
                activation = None  # later if_expr see the rewrite
            if result.result is not None:
                entry.decision = "respond"
                outcome.result = result.result
                outcome.reason = result.reason
                return outcome
            entry.decision = "allow"
    return outcome


def _check_allowed(result: Any, spec: EventSpec) -> None:
    """On a blocking event, an answer may only use what the event allows."""
    if result.blocks and not spec.allows(BLOCK):
        raise MalformedAnswer(f"{spec.name} cannot be blocked by a hook")
    if result.updated_input is not None and not (spec.allows(UPDATED_INPUT) and spec.input_field):
        raise MalformedAnswer(f"{spec.name} takes no updated_input")
    if result.result is not None and not spec.allows(RESULT):
        raise MalformedAnswer(f"{spec.name} takes no synthetic result")
    if result.abort is not None and not spec.allows(ABORT):
        raise MalformedAnswer(f"{spec.name} cannot be aborted by a hook")


def _message(error: BaseException | None) -> str:
    if error is None:
        return "unknown error"
    text = str(error)
    return text if isinstance(error, HookError) else f"{type(error).__name__}: {text}"


def _describe(reply: Reply) -> str:
    return "timeout" if reply.timed_out else _message(reply.error)
