"""What a hook answers (:class:`HookResult`) and what ``fire`` returns (:class:`Outcome`).

A handler answers one :class:`HookResult`; the chain folds the answers of all hooks into one
:class:`Outcome`. Handlers may also answer a plain ``dict`` with the outcome keys (or ``None``
to abstain); :func:`coerce_result` turns that into a :class:`HookResult` or raises
:class:`MalformedAnswer`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final, Literal, NamedTuple

from hookgate.errors import HookgateError

__all__ = [
    "ABORT_VALUES",
    "BLOCKING_DECISIONS",
    "DECISIONS",
    "HookError",
    "InfrastructureError",
    "HookResult",
    "MalformedAnswer",
    "Outcome",
    "PendingApproval",
    "TraceEntry",
    "TraceRow",
    "abstained_outcome",
    "check_result",
    "coerce_result",
    "empty_result",
]

Decision = Literal["allow", "block", "ask", "defer"]
DECISIONS: Final = frozenset({"allow", "block", "ask", "defer"})
ABORT_VALUES: Final = frozenset({"turn", "hard"})
#: Makes an instance without calling its class's ``__init__``.
_new: Any = object.__new__


class HookError(HookgateError):
    """A handler failed: it crashed, exited badly, could not be reached.

    On a blocking event this blocks (fail-closed) unless the hook's ``on_error`` says allow.
    ``details`` travels into the trace and the audit metadata.
    """

    def __init__(self, message: str, *, details: Mapping[str, Any] | None = None) -> None:
        super().__init__(message)
        self.details: dict[str, Any] = dict(details or {})


class InfrastructureError(HookError):
    """The gateway's own infrastructure (Redis, the database) failed while a hook ran.

    Not the hook's fault, so it never feeds the hook's circuit breaker: once the service is
    back the hook runs again at once. It still fails closed: a blocking event is blocked,
    whatever the hook's ``on_error``, because the guard could not be evaluated.
    """


class MalformedAnswer(HookError):
    """A handler answered something that is not a valid decision.

    Always blocks a blocking event, whatever the hook's ``on_error``: a misspelled ``block``
    must never turn into an allow.
    """


@dataclass(slots=True)
class HookResult:
    """One hook's answer. Every field is optional; an empty result abstains."""

    decision: Decision | None = None
    reason: str | None = None
    updated_input: Any = None
    additional_context: list[str] = field(default_factory=list)
    result: Any = None
    abort: Literal["turn", "hard"] | None = None
    continue_: bool = True
    #: Handler-specific facts for the trace and the audit row (stdout, status code, model, …).
    details: dict[str, Any] = field(default_factory=dict)
    #: What a caller needs to retry a blocked result (quality gates): ``gate``, ``feedback``,
    #: ``attempt``, ``max_retries``, ``retries_left``. Set by handlers, not by hook answers.
    retry: dict[str, Any] | None = None

    @property
    def blocks(self) -> bool:
        return self.decision in BLOCKING_DECISIONS or not self.continue_


#: The decisions that stop a blocking event (:attr:`HookResult.blocks`; an answer that does
#: not continue does too).
BLOCKING_DECISIONS: Final = ("block", "ask", "defer")


def empty_result() -> HookResult:
    """``HookResult()`` without the dataclass's Python ``__init__`` (~0.9k instructions less):
    a handler's plain continue, once per answer (see :func:`abstained_row`)."""
    result: HookResult = _new(HookResult)
    result.decision = None
    result.reason = None
    result.updated_input = None
    result.additional_context = []
    result.result = None
    result.abort = None
    result.continue_ = True
    result.details = {}
    result.retry = None
    return result


_RESULT_KEYS: Final = frozenset(
    {
        "decision",
        "reason",
        "updated_input",
        "updatedInput",
        "additional_context",
        "additionalContext",
        "result",
        "abort",
        "continue",
        "continue_",
        "details",
        "state",  # hook state changes (hookgate.state): taken out by the engine
        "requireApproval",  # OpenClaw's way to ask a person
    }
)


_PLAIN_KEYS: Final = frozenset({"decision", "reason"})
_PLAIN_DECISIONS: Final = frozenset({"allow", "block", None})


def _context_list(value: Any) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        return [value] if value else []
    if isinstance(value, list | tuple) and all(isinstance(item, str) for item in value):
        return [item for item in value if item]
    raise MalformedAnswer(
        f"additional_context must be a string or a list of strings, got {value!r}"
    )


def coerce_result(answer: Any) -> HookResult | None:
    """Turn a handler's answer into a :class:`HookResult`; ``None`` means abstain."""
    if answer is None:
        return None
    if isinstance(answer, HookResult):
        check_result(answer)
        return answer
    if isinstance(answer, bool):
        # A bare boolean is a common shorthand: True allows, False blocks.
        return HookResult(decision="allow" if answer else "block")
    if not isinstance(answer, Mapping):
        raise MalformedAnswer(
            f"a hook must return a HookResult, a dict or None, not {type(answer).__name__}"
        )
    if len(answer) <= 2 and _PLAIN_KEYS.issuperset(answer):
        # The common answer, {"decision": ..., "reason": ...}: no rewriting, no context.
        decision = answer.get("decision")
        reason = answer.get("reason")
        if decision in _PLAIN_DECISIONS and (reason is None or isinstance(reason, str)):
            return HookResult(decision=decision, reason=reason)
    unknown = set(answer) - _RESULT_KEYS
    if unknown:
        raise MalformedAnswer(f"unknown key(s) in hook answer: {', '.join(sorted(unknown))}")
    if answer.get("requireApproval") is not None:
        return _require_approval(answer)
    cont = answer.get("continue", answer.get("continue_", True))
    if not isinstance(cont, bool):
        raise MalformedAnswer(f"'continue' must be a boolean, got {cont!r}")
    reason = answer.get("reason")
    if reason is not None and not isinstance(reason, str):
        reason = json.dumps(reason)
    details = answer.get("details") or {}
    if not isinstance(details, Mapping):
        raise MalformedAnswer("'details' must be an object")
    result = HookResult(
        decision=answer.get("decision"),
        reason=reason,
        updated_input=answer.get("updated_input", answer.get("updatedInput")),
        additional_context=_context_list(
            answer.get("additional_context", answer.get("additionalContext"))
        ),
        result=answer.get("result"),
        abort=answer.get("abort"),
        continue_=cont,
        details=dict(details),
    )
    if "state" in answer:
        result.details["state_changes"] = answer["state"]
    check_result(result)
    return result


def _require_approval(answer: Mapping[str, Any]) -> HookResult:
    """OpenClaw's ``requireApproval: {title, description?, timeoutMs?, timeoutBehavior?}``:
    ask a person. ``timeoutMs`` and ``timeoutBehavior`` (allow/deny) override the hook's
    approval settings for this call."""
    spec = answer["requireApproval"]
    if not isinstance(spec, Mapping):
        raise MalformedAnswer("requireApproval must be an object {title, description?, …}")
    if answer.get("decision") not in (None, "ask", "defer"):
        raise MalformedAnswer("requireApproval cannot be combined with a decision")
    title, description = spec.get("title"), spec.get("description")
    texts = [t for t in (title, description) if isinstance(t, str) and t]
    override: dict[str, Any] = {}
    timeout = spec.get("timeoutMs")
    if timeout is not None:
        if not isinstance(timeout, int) or isinstance(timeout, bool) or timeout < 1000:
            raise MalformedAnswer(f"requireApproval.timeoutMs must be >= 1000, got {timeout!r}")
        override["timeout_ms"] = timeout
    behavior = spec.get("timeoutBehavior")
    if behavior is not None:
        if behavior not in ("allow", "deny"):
            raise MalformedAnswer(
                f"requireApproval.timeoutBehavior must be allow or deny, got {behavior!r}"
            )
        override["on_timeout"] = "allow" if behavior == "allow" else "block"
    details = answer.get("details") or {}
    if not isinstance(details, Mapping):
        raise MalformedAnswer("'details' must be an object")
    result = HookResult(
        decision="ask",
        reason=": ".join(texts) or None,
        details={**details, **({"approval_override": override} if override else {})},
    )
    check_result(result)
    return result


def check_result(result: HookResult) -> None:
    """What :func:`coerce_result` checks of a :class:`HookResult` (its decision, abort and
    context); raises :class:`MalformedAnswer`."""
    if result.decision is not None and result.decision not in DECISIONS:
        raise MalformedAnswer(
            f"decision must be one of allow, block, ask, defer; got {result.decision!r}"
        )
    if result.abort is not None and result.abort not in ABORT_VALUES:
        raise MalformedAnswer(f"abort must be 'turn' or 'hard', got {result.abort!r}")
    context: Any = result.additional_context
    if not isinstance(context, list):
        result.additional_context = _context_list(context)


@dataclass(slots=True)
class TraceEntry:
    """One hook the chain considered."""

    hook_id: str
    name: str
    handler_type: str
    matched: bool
    skipped: str | None = None
    decision: str | None = None
    duration_ms: float = 0.0
    error: str | None = None
    breaker: str = "closed"
    version: int = 0
    details: dict[str, Any] = field(default_factory=dict)
    #: ``shadow``: the hook runs in shadow mode; ``decision`` is what it would have decided
    #: (``would_block``, ``would_allow``, …) and changed nothing.
    mode: str = "enforce"

    @property
    def would_block(self) -> bool:
        """A shadow hook that would have blocked this event had it been enforced."""
        return self.decision == "would_block"

    def to_dict(self) -> dict[str, Any]:
        return {
            "hook_id": self.hook_id,
            "name": self.name,
            "handler_type": self.handler_type,
            "matched": self.matched,
            "skipped": self.skipped,
            "decision": self.decision,
            "duration_ms": round(self.duration_ms, 3),
            "error": self.error,
            "breaker": self.breaker,
            "version": self.version,
            "details": self.details,
            "mode": self.mode,
        }


class TraceRow:
    """One hook the chain considered, as the chain keeps it while it runs: mutable, and made
    once per hook per event (so its constructor takes only what differs between the two
    places that make one). It becomes a :class:`TraceEntry` only when someone reads
    ``Outcome.trace``."""

    __slots__ = (
        "answer",
        "breaker",
        "decision",
        "details",
        "duration_ms",
        "error",
        "hook",
        "matched",
        "skipped",
    )
    #: A hook that calls out: its raw reply (:class:`hookgate.chain.HookReply`), set only then.
    answer: Any

    def __init__(
        self,
        hook: Any,
        matched: bool = False,
        decision: str | None = None,
        duration_ms: float = 0.0,
    ) -> None:
        #: The :class:`~hookgate.registry.CompiledHook`.
        self.hook = hook
        self.matched = matched
        self.decision = decision
        self.duration_ms = duration_ms
        #: Why the hook did not run (disabled, its if_expr was false, …).
        self.skipped: str | None = None
        self.error: str | None = None
        self.breaker = "closed"
        #: Made on first use (most hooks have none).
        self.details: dict[str, Any] | None = None
        # ``answer`` is left unset: only a hook that calls out sets it (its raw reply, which
        # the dispatch record seals for replay: hookgate.reply_recording); read it with
        # getattr(row, "answer", None).

    def entry(self) -> TraceEntry:
        definition = self.hook.definition
        return TraceEntry(
            hook_id=definition.id,
            name=definition.name,
            handler_type=definition.handler_type,
            matched=self.matched,
            skipped=self.skipped,
            decision=self.decision,
            duration_ms=self.duration_ms,
            error=self.error,
            breaker=self.breaker,
            version=definition.version,
            details=self.details or {},
            mode=definition.mode,
        )


class _FilledRow(TraceRow):
    """A :class:`TraceRow` that :func:`abstained_row` or :func:`matched_row` fills in: no
    Python ``__init__``."""

    __slots__ = ()
    __init__ = object.__init__


def abstained_row(hook: Any, duration_ms: float) -> TraceRow:
    """The final row of a hook that was admitted and abstained, as ``TraceRow(hook, True,
    "abstain", duration_ms)`` makes it. Made once per hook per event by the call loop of
    plain functions: in Python 3.11 a call to a Python ``__init__`` is most of what a row
    costs (2.2k instructions against 0.9k this way, bench/bench_core.py)."""
    row: TraceRow = _FilledRow()
    row.hook = hook
    row.matched = True
    row.decision = "abstain"
    row.duration_ms = duration_ms
    row.skipped = None
    row.error = None
    row.breaker = "closed"
    row.details = None
    return row


def matched_row(hook: Any, duration_ms: float) -> TraceRow:
    """The row of an admitted hook whose answer the chain is about to fold, as
    ``TraceRow(hook, True, None, duration_ms)`` makes it (see :func:`abstained_row`): made
    once per answer of an unconditional run's hook."""
    row: TraceRow = _FilledRow()
    row.hook = hook
    row.matched = True
    row.decision = None
    row.duration_ms = duration_ms
    row.skipped = None
    row.error = None
    row.breaker = "closed"
    row.details = None
    return row


class PendingApproval(NamedTuple):
    """The first hook of a chain that asked for a person (approvals on): the engine asks."""

    #: The hook's :class:`~hookgate.definition.HookDefinition`.
    definition: Any
    #: ``ask`` or ``defer`` (the hook's answer), or ``required`` (its ``approval`` setting).
    kind: str
    reason: str | None
    #: This answer's own approval timeout / policy (OpenClaw's ``requireApproval``).
    override: Mapping[str, Any] | None


class Outcome:
    """The single decision for one event. ``to_dict`` has exactly the documented keys:
    ``decision``, ``reason``, ``updated_input``, ``additional_context``, ``result``,
    ``abort``, ``continue``, ``retry``, ``trace`` and ``dispatch_id``, plus ``approval`` when
    a person was asked and ``explicitly_allowed`` when it is true.
    """

    __slots__ = (
        "_dispatch",
        "_dispatch_id",
        "_rows",
        "_trace",
        "abort",
        "additional_context",
        "approval",
        "continue_",
        "decision",
        "explicitly_allowed",
        "pending_approval",
        "reason",
        "result",
        "retry",
        "updated_input",
    )

    def __init__(
        self,
        decision: Literal["allow", "block"] = "allow",
        reason: str | None = None,
        updated_input: Any = None,
        additional_context: list[str] | None = None,
        result: Any = None,
        abort: Literal["turn", "hard"] | None = None,
        continue_: bool = True,
        trace: list[TraceEntry] | None = None,
        retry: dict[str, Any] | None = None,
    ) -> None:
        self.decision = decision
        self.reason = reason
        self.updated_input = updated_input
        self.additional_context: list[str] = (
            [] if additional_context is None else additional_context
        )
        self.result = result
        self.abort = abort
        self.continue_ = continue_
        #: Set when a quality gate blocked: what the caller needs to run its retry loop.
        self.retry = retry
        self._trace = trace
        self._rows: list[TraceRow] | None = None
        #: The first hook that asked for a person, set by the chain when approvals are on;
        #: the engine asks the approver and clears it.
        self.pending_approval: PendingApproval | None = None
        #: A hook answered ``decision: allow`` (rather than only rewrote the input or added
        #: context): bridges that can grant a permission (Claude Code) grant it only then.
        self.explicitly_allowed = False
        #: What a person decided (``{id, status, decided_by, comment, input_edited, …}``),
        #: when this outcome went through an approval.
        self.approval: dict[str, Any] | None = None
        self._dispatch_id: str | None = None
        #: The engine's note for the dispatch record written once a person decided.
        self._dispatch: Any = None

    @property
    def dispatch_id(self) -> str:
        """The id of this dispatch's audit record (``GET /api/v1/dispatches/{id}`` on a
        gateway). Set by the engine when it keeps records; otherwise made on first read, so
        an engine without an audit sink pays nothing for it."""
        if self._dispatch_id is None:
            from hookgate.audit import new_dispatch_id

            self._dispatch_id = new_dispatch_id()
        return self._dispatch_id

    @dispatch_id.setter
    def dispatch_id(self, value: str) -> None:
        self._dispatch_id = value

    @property
    def trace(self) -> list[TraceEntry]:
        """One entry per hook the chain considered, in chain order."""
        if self._trace is None:
            self._trace = [row.entry() for row in self._rows] if self._rows else []
        return self._trace

    @property
    def shadow(self) -> list[TraceEntry]:
        """The trace entries of the shadow hooks that ran: what each would have decided."""
        return [entry for entry in self.trace if entry.mode == "shadow" and entry.matched]

    @property
    def allowed(self) -> bool:
        return self.decision == "allow"

    @property
    def blocked(self) -> bool:
        return self.decision == "block"

    def __repr__(self) -> str:
        return (
            f"Outcome(decision={self.decision!r}, reason={self.reason!r}, "
            f"hooks={len(self.trace)})"
        )

    def to_dict(self) -> dict[str, Any]:
        data = {
            "decision": self.decision,
            "reason": self.reason,
            "updated_input": self.updated_input,
            "additional_context": list(self.additional_context),
            "result": self.result,
            "abort": self.abort,
            "continue": self.continue_,
            "retry": self.retry,
            "trace": [entry.to_dict() for entry in self.trace],
            "dispatch_id": self.dispatch_id,
        }
        if self.approval is not None:
            data["approval"] = dict(self.approval)
        if self.explicitly_allowed:
            data["explicitly_allowed"] = True
        return data

    def to_json(self, **kwargs: Any) -> str:
        return json.dumps(self.to_dict(), default=str, **kwargs)


def abstained_outcome(rows: list[TraceRow]) -> Outcome:
    """``Outcome()`` whose trace is ``rows``, made without the Python ``__init__`` (about 1.5k
    instructions less in Python 3.11): the chain's answer when every hook of an unconditional
    run abstained, once per such event. Every slot is set as ``__init__`` sets it (a test
    compares the two slot by slot)."""
    outcome: Outcome = _new(Outcome)
    outcome.decision = "allow"
    outcome.reason = None
    outcome.updated_input = None
    outcome.additional_context = []
    outcome.result = None
    outcome.abort = None
    outcome.continue_ = True
    outcome.retry = None
    outcome._trace = None
    outcome._rows = rows
    outcome.pending_approval = None
    outcome.explicitly_allowed = False
    outcome.approval = None
    outcome._dispatch_id = None
    outcome._dispatch = None
    return outcome
