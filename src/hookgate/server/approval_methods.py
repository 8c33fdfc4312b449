"""The ``approvals.*`` methods (WebSocket and REST): list, get, approve, deny, wait, watch.

Viewers see a tenant's approvals; approvers, operators and admins decide them, never with the
key that asked (nor a key that asked in the same agent session). Agents (operator keys) wait
on an approval with ``approvals.wait`` when a dispatch answered ``pending``.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from hookgate.events import UnknownEventError, get_event
from hookgate.log import log_event
from hookgate.server import schemas
from hookgate.server.approvals import (
    approval_requester,
    approval_wait_limit,
    closed_message,
)
from hookgate.server.auth import Principal
from hookgate.server.errors import ApiError
from hookgate.server.timestamps import iso
from hookgate.store import NotFound
from hookgate.store.approvals import ApprovalClosed, ApprovalRow, ApprovalSelfDecision

if TYPE_CHECKING:
    from hookgate.server.approvals import GatewayApprovals
    from hookgate.server.gateway import Gateway

__all__ = [
    "approval_view",
    "approvals_approve",
    "approvals_deny",
    "approvals_get",
    "approvals_list",
    "approvals_wait",
    "approvals_watch",
]

def _approvals(gateway: Gateway) -> GatewayApprovals:
    approvals = gateway.approvals
    if approvals is None:
        raise ApiError("UNAVAILABLE", "this gateway's store keeps no approvals")
    return approvals


def approval_view(approvals: GatewayApprovals, row: ApprovalRow) -> dict[str, Any]:
    try:
        tool_input = approvals.open(row.tool_input, row.id, "tool_input")
        edited = (
            approvals.open(row.edited_input, row.id, "edited_input") if row.input_edited else None
        )
    except Exception as exc:  # a rotated-away key: say so, show nothing
        log_event("hookgate.approval.unreadable", approval_id=row.id, error=str(exc))
        tool_input = edited = None
    return {
        "id": row.id,
        "tenant_id": row.tenant_id,
        "agent_id": row.agent_id,
        "session_id": row.session_id,
        "event": row.event,
        "event_id": row.event_id,
        "tool_name": row.tool_name,
        "tool_input": tool_input,
        "hook_id": row.hook_id,
        "hook_name": row.hook_name,
        "reason": row.reason,
        "status": row.status,
        "on_timeout": row.on_timeout,
        "created_at": iso(row.created_at),
        "expires_at": iso(row.expires_at),
        "decided_at": iso(row.decided_at),
        "decided_by": row.decided_by,
        "comment": row.comment,
        "input_edited": row.input_edited,
        "edited_input": edited,
        "requested_key_id": row.requested_key_id,
    }


def _tenant(who: Principal, tenant_id: str | None) -> str | None:
    if tenant_id is None or tenant_id == who.tenant_id:
        return None if who.master and tenant_id is None else tenant_id
    if not who.master:
        raise ApiError("UNAUTHORIZED", "this action requires master tenant scope")
    return tenant_id


async def _pending_count(gateway: Gateway, who: Principal) -> int:
    return await _approvals(gateway).store.count_pending_approvals(who.caller, time.time())


async def approvals_list(
    gateway: Gateway, who: Principal, p: schemas.ApprovalListParams
) -> dict[str, Any]:
    approvals = _approvals(gateway)
    revision = approvals.revision_for(who.caller)
    rows = await approvals.store.list_approvals(
        who.caller,
        status=None if p.status == "all" else p.status,
        tenant_id=_tenant(who, p.tenant_id),
        limit=p.limit,
    )
    return {
        "approvals": [approval_view(approvals, row) for row in rows],
        "pendingCount": await _pending_count(gateway, who),
        "pendingLimit": approvals.max_pending,
        "revision": revision,
    }


async def approvals_get(
    gateway: Gateway, who: Principal, p: schemas.ApprovalIdParams
) -> dict[str, Any]:
    approvals = _approvals(gateway)
    row = await _get(approvals, who, p.approval_id)
    return {"approval": approval_view(approvals, row)}


async def _get(approvals: GatewayApprovals, who: Principal, approval_id: str) -> ApprovalRow:
    try:
        return await approvals.store.get_approval(who.caller, approval_id)
    except NotFound:
        raise ApiError("NOT_FOUND", f"no approval {approval_id}") from None


async def _decide(
    gateway: Gateway, who: Principal, p: schemas.ApprovalDecideParams, approve: bool
) -> dict[str, Any]:
    approvals = _approvals(gateway)
    edited = "updated_input" in p.model_fields_set
    if edited and not approve:
        raise ApiError("INVALID_REQUEST", "updatedInput: only an approval can edit the input")
    if edited:
        row = await _get(approvals, who, p.approval_id)
        try:
            takes_input = get_event(row.event).input_field is not None
        except UnknownEventError:
            takes_input = False
        if not takes_input:
            raise ApiError("INVALID_REQUEST", f"updatedInput: {row.event} takes no input")
    try:
        row = await approvals.decide_by_person(
            who.caller,
            p.approval_id,
            approve=approve,
            actor=who.actor,
            comment=p.comment or None,
            edited_input=p.updated_input,
            edited=edited,
            key_id=who.key_id,
        )
    except ApprovalSelfDecision as exc:
        log_event(
            "security.approval.self_decision",
            approval_id=p.approval_id,
            key_id=who.key_id,
            same_session=exc.same_session,
        )
        raise ApiError("UNAUTHORIZED", str(exc)) from None
    except NotFound:
        raise ApiError("NOT_FOUND", f"no approval {p.approval_id}") from None
    except ApprovalClosed as exc:
        raise ApiError("CONFLICT", closed_message(exc)) from None
    return {"approval": approval_view(approvals, row)}


async def approvals_approve(
    gateway: Gateway, who: Principal, p: schemas.ApprovalDecideParams
) -> dict[str, Any]:
    return await _decide(gateway, who, p, approve=True)


async def approvals_deny(
    gateway: Gateway, who: Principal, p: schemas.ApprovalDecideParams
) -> dict[str, Any]:
    return await _decide(gateway, who, p, approve=False)


async def approvals_wait(
    gateway: Gateway, who: Principal, p: schemas.ApprovalWaitParams
) -> dict[str, Any]:
    approvals = _approvals(gateway)
    await _get(approvals, who, p.approval_id)  # not found for other tenants
    decision = await approvals.wait(p.approval_id, p.timeout_s)
    row = await _get(approvals, who, p.approval_id)
    # An edited input runs the rest of the chain here, for this waiter: a hook there that
    # asks again records this key as the one asking, and waits as long as this call.
    requester = approval_requester.set(who.key_id)
    limit = approval_wait_limit.set(p.timeout_s)
    try:
        outcome = await approvals.outcome_of(
            row, decision, gateway.engine.resume_after_approval
        )
    finally:
        approval_wait_limit.reset(limit)
        approval_requester.reset(requester)
    return outcome.to_dict()


async def approvals_watch(
    gateway: Gateway, who: Principal, p: schemas.ApprovalWatchParams
) -> dict[str, Any]:
    approvals = _approvals(gateway)
    changed = await approvals.changed(who.caller, p.revision, p.timeout_s)
    return {
        "revision": approvals.revision_for(who.caller),
        "pendingCount": await _pending_count(gateway, who),
        "changed": changed,
    }
