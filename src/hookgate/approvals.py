"""Human approvals: the approver interface and how a decision becomes the outcome.

A hook on a blocking event that answers ``ask`` (or ``defer``), or a hook configured with
``approval: required``, asks a person. The engine hands an :class:`ApprovalRequest` to its
:class:`Approver` and waits; the :class:`ApprovalDecision` that comes back becomes the
outcome (:func:`apply_decision`):

* ``approved``: allow, with the approver's edited input as ``updated_input`` when they
  edited it (otherwise whatever the hooks rewrote). An edited input goes through the rest of
  the chain again (:func:`settle`): the hooks after the one that asked ran on the input
  before the edit, so they decide about the edited one, and a block blocks;
* ``denied``: block, with the approver's comment in the reason;
* ``expired``: the hook's ``approval.on_timeout`` (block unless configured to allow);
* ``pending``: nobody decided within the caller's wait (``approvalWaitS``, or a gateway
  shutting down); block for now, with the approval id and the route to wait on again.

The library's approvers (:class:`CallbackApprover`) call a function; the gateway's approver
stores the approval, shows it in the panel and waits for a person.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import time
import uuid
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final, Literal, Protocol, runtime_checkable

from hookgate.definition import MAX_APPROVAL_TIMEOUT_MS
from hookgate.log import log_event
from hookgate.outcome import Outcome

if TYPE_CHECKING:
    from hookgate.events import EventSpec

__all__ = [
    "ApprovalDecision",
    "ApprovalRequest",
    "Approver",
    "CallbackApprover",
    "ResumeChain",
    "apply_decision",
    "new_approval_id",
    "seek_approval",
    "settle",
]

DecisionStatus = Literal["approved", "denied", "expired", "pending"]
STATUSES: Final = ("approved", "denied", "expired", "pending")


def new_approval_id() -> str:
    return "apr_" + uuid.uuid4().hex


@dataclass(slots=True)
class ApprovalRequest:
    """What a person is asked to decide."""

    id: str
    event: str
    #: ``ask``, ``defer`` (the hook's answer) or ``required`` (the hook's configuration).
    kind: str
    hook_id: str
    hook_name: str
    reason: str | None
    #: The tool and the input it would run with (after every hook's rewrite).
    tool_name: str | None
    tool_input: Any
    tenant_id: str | None = None
    agent_id: str | None = None
    session_id: str | None = None
    event_id: str | None = None
    timeout_s: float = 60.0
    on_timeout: Literal["block", "allow"] = "block"
    created_at: float = field(default_factory=time.time)
    #: The outcome the hooks folded, applied when the person approves.
    outcome: Outcome | None = None
    #: The event as the chain saw it: an edited input runs through the rest of the chain
    #: with it (:func:`settle`).
    payload: Mapping[str, Any] | None = None

    @property
    def expires_at(self) -> float:
        return self.created_at + self.timeout_s


@dataclass(slots=True)
class ApprovalDecision:
    status: DecisionStatus
    decided_by: str | None = None
    comment: str | None = None
    #: The input the approver edited (``input_edited`` says whether they did).
    edited_input: Any = None
    input_edited: bool = False
    approval_id: str | None = None
    decided_at: float | None = None
    expires_at: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.approval_id,
            "status": self.status,
            "decided_by": self.decided_by,
            "comment": self.comment,
            "input_edited": self.input_edited,
            "decided_at": self.decided_at,
            "expires_at": self.expires_at,
        }


@runtime_checkable
class Approver(Protocol):
    """Decides approvals. ``decide`` may wait as long as ``request.timeout_s``; past that the
    engine treats the approval as expired."""

    async def decide(self, request: ApprovalRequest) -> ApprovalDecision: ...


ApproverFunction = Callable[
    [ApprovalRequest], "bool | ApprovalDecision | Mapping[str, Any] | None"
] | Callable[[ApprovalRequest], Awaitable["bool | ApprovalDecision | Mapping[str, Any] | None"]]


class CallbackApprover:
    """An approver that calls a function (plain or async) for each request.

    The function answers ``True`` (approve), ``False`` (deny), ``None`` (not decided: the
    approval expires), an :class:`ApprovalDecision`, or a dict
    ``{"approved": bool, "comment"?: str, "updated_input"?: …, "decided_by"?: str}``.
    """

    def __init__(self, function: ApproverFunction, *, name: str = "callback") -> None:
        self.function = function
        self.name = name

    async def decide(self, request: ApprovalRequest) -> ApprovalDecision:
        answer: Any = self.function(request)
        if inspect.isawaitable(answer):
            answer = await answer
        return decision_from_answer(answer, self.name, request.id)


def decision_from_answer(answer: Any, who: str, approval_id: str) -> ApprovalDecision:
    """Read an approver function's answer; anything unclear denies."""
    if isinstance(answer, ApprovalDecision):
        return answer
    if answer is None:
        return ApprovalDecision("expired", approval_id=approval_id)
    if isinstance(answer, bool):
        return ApprovalDecision(
            "approved" if answer else "denied", decided_by=who, approval_id=approval_id
        )
    if isinstance(answer, Mapping):
        approved = answer.get("approved")
        comment = answer.get("comment")
        edited = "updated_input" in answer
        return ApprovalDecision(
            "approved" if approved is True else "denied",
            decided_by=str(answer.get("decided_by") or who),
            comment=comment if isinstance(comment, str) else None,
            edited_input=answer.get("updated_input"),
            input_edited=edited and approved is True,
            approval_id=approval_id,
        )
    return ApprovalDecision(
        "denied",
        decided_by=who,
        comment=f"the approver answered {type(answer).__name__}, not a decision",
        approval_id=approval_id,
    )


async def ask_approver(approver: Approver, request: ApprovalRequest) -> ApprovalDecision:
    """Ask ``approver`` within the request's timeout (wall clock); a failure denies."""
    try:
        async with asyncio.timeout(request.timeout_s):
            return await approver.decide(request)
    except TimeoutError:
        return ApprovalDecision("expired", approval_id=request.id)
    except Exception as exc:  # fail closed: an approver that broke approves nothing
        return ApprovalDecision(
            "denied",
            decided_by="hookgate",
            comment=f"the approver failed: {type(exc).__name__}: {exc}",
            approval_id=request.id,
        )


def apply_decision(
    outcome: Outcome, request: ApprovalRequest, decision: ApprovalDecision
) -> Outcome:
    """Turn the folded outcome and the person's decision into the final outcome."""
    outcome.pending_approval = None
    info = decision.to_dict()
    info["id"] = decision.approval_id or request.id
    info["hook"] = request.hook_name
    if info["expires_at"] is None:
        info["expires_at"] = request.expires_at
    outcome.approval = info
    who = decision.decided_by or "an approver"
    note = f": {decision.comment}" if decision.comment else ""
    if decision.status == "approved":
        outcome.decision = "allow"
        if decision.input_edited:
            outcome.updated_input = decision.edited_input
        outcome.reason = f"approved by {who}{note}"
        return outcome
    if decision.status == "denied":
        outcome.decision = "block"
        outcome.result = None
        outcome.reason = f"denied by {who}{note}"
        return outcome
    if decision.status == "expired":
        waited = f"{request.timeout_s:g} s"
        if request.on_timeout == "allow":
            outcome.decision = "allow"
            outcome.reason = f"approval not decided within {waited}; allowed by its policy"
        else:
            outcome.decision = "block"
            outcome.result = None
            outcome.reason = f"approval not decided within {waited}; denied by its policy"
        return outcome
    outcome.decision = "block"
    outcome.result = None
    outcome.reason = (
        f"waiting for approval {info['id']} (hook {request.hook_name!r}"
        + (f": {request.reason}" if request.reason else "")
        + f"); wait on it with GET /api/v1/approvals/{info['id']}/outcome"
        + " (approvals.wait over the WebSocket)"
    )
    return outcome


#: ``resume(event, payload, hook_id)``: run the hooks after ``hook_id`` in ``event``'s chain
#: on ``payload`` (:meth:`hookgate.engine.Engine.resume_after_approval`).
ResumeChain = Callable[[str, Mapping[str, Any], str], Awaitable[Outcome]]


async def settle(
    outcome: Outcome,
    request: ApprovalRequest,
    decision: ApprovalDecision,
    resume: ResumeChain | None,
) -> Outcome:
    """The final outcome of a decision: :func:`apply_decision`, and when the person approved
    an edited input, the rest of the chain run on it (``request.payload`` is the event). The
    one place a decision becomes the outcome, for every approver and every way of waiting."""
    approved = apply_decision(outcome, request, decision)
    if decision.status != "approved" or not decision.input_edited:
        return approved
    input_field = _input_field(request.event)
    if resume is None or request.payload is None or input_field is None:
        # Nothing to run the later hooks with: the edit is not checked, so it does not run.
        approved.decision = "block"
        approved.reason = (
            f"approval {request.id} edited the input, and the hooks after "
            f"{request.hook_name!r} cannot check the edited input here; ask again"
        )
        return approved
    edited = {**request.payload, input_field: decision.edited_input}
    rest = await resume(request.event, edited, request.hook_id)
    return _after_edit(approved, rest, decision.edited_input)


def _input_field(event: str) -> str | None:
    from hookgate.events import UnknownEventError, get_event

    try:
        return get_event(event).input_field
    except UnknownEventError:
        return None


def _after_edit(approved: Outcome, rest: Outcome, edited: Any) -> Outcome:
    """The approved outcome followed by what the later hooks said about the edited input."""
    rest.additional_context = approved.additional_context + rest.additional_context
    rest._trace = approved.trace + rest.trace
    rest.continue_ = approved.continue_ and rest.continue_
    if rest.approval is None:  # a later hook that asked again names its own approval
        rest.approval = approved.approval
    if rest.decision == "block":
        approval_id = (approved.approval or {}).get("id")
        rest.reason = f"the input edited in approval {approval_id}: {rest.reason}"
        return rest
    if rest.updated_input is None:
        rest.updated_input = edited
    if rest.reason is None:
        rest.reason = approved.reason
    return rest


async def seek_approval(
    approver: Approver,
    spec: EventSpec,
    data: Mapping[str, Any],
    outcome: Outcome,
    event_id: Callable[[Mapping[str, Any]], str],
    resume: ResumeChain | None = None,
) -> Outcome:
    """A hook in the chain asked for a person (``outcome.pending_approval``): ask
    ``approver`` and fold the decision into the outcome. A chain a later hook blocked asks
    nobody."""
    assert outcome.pending_approval is not None
    definition, kind, reason, override = outcome.pending_approval
    if outcome.decision == "block":
        outcome.pending_approval = None
        return outcome
    policy = definition.approval_policy
    timeout_ms, on_timeout = policy.timeout_ms, policy.on_timeout
    if override:  # the answer's own settings (OpenClaw's requireApproval), within bounds
        timeout_ms = min(int(override.get("timeout_ms", timeout_ms)), MAX_APPROVAL_TIMEOUT_MS)
        on_timeout = override.get("on_timeout", on_timeout)
    tool_input = outcome.updated_input
    if tool_input is None and spec.input_field:
        tool_input = data.get(spec.input_field)
    match_value = data.get(spec.match_field) if spec.match_field else None
    request = ApprovalRequest(
        id=new_approval_id(),
        event=spec.name,
        kind=kind,
        hook_id=definition.id,
        hook_name=definition.label,
        reason=reason,
        tool_name=match_value if isinstance(match_value, str) else None,
        tool_input=tool_input,
        tenant_id=data.get("tenant_id"),
        agent_id=data.get("agent_id"),
        session_id=data.get("session_id"),
        event_id=event_id(data),
        timeout_s=timeout_ms / 1000,
        on_timeout=on_timeout,
        outcome=outcome,
        payload=data,
    )
    decision = await ask_approver(approver, request)
    log_event(
        "hookgate.approval.outcome",
        level=logging.INFO,
        approval_id=decision.approval_id or request.id,
        status=decision.status,
        hook=definition.label,
        event=spec.name,
    )
    return await settle(outcome, request, decision, resume)
