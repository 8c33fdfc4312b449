"""The ``dispatches.*`` methods (WebSocket and REST): the audit log one dispatch at a time.

A dispatch record says what an agent asked (event, tool, agent, session), the one answer it
got, how long that took, the hooks that ran in order with their answers, and the approval a
person decided. Viewers may read their tenant's records. Times are ISO 8601. An approval that
was still pending when the dispatch answered is shown as it stands now (who decided, when).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from hookgate.log import log_event
from hookgate.server import schemas
from hookgate.server.auth import Principal
from hookgate.server.errors import ApiError
from hookgate.server.methods import _check_event, _tenant_filter, _timestamp
from hookgate.server.timestamps import iso
from hookgate.store import DispatchQuery, DispatchRow, NotFound, StoreError

if TYPE_CHECKING:
    from hookgate.server.gateway import Gateway

__all__ = ["dispatch_query", "dispatch_view", "dispatches_get", "dispatches_list"]

_APPROVAL_TIMES = ("decided_at", "expires_at")


def dispatch_query(who: Principal, p: schemas.DispatchListParams) -> DispatchQuery:
    """The store query for the filters, checked against the caller's scope."""
    return DispatchQuery(
        session_id=p.session_id,
        agent_id=p.agent_id,
        tool_name=p.tool_name,
        decision=p.decision,
        event=_check_event(p.event),
        since=_timestamp(p.since, "since"),
        until=_timestamp(p.until, "until"),
        tenant_id=_tenant_filter(who, p.tenant_id),
        limit=p.limit,
        cursor=p.cursor,
    )


async def _approval_now(
    gateway: Gateway, who: Principal, approval: dict[str, Any]
) -> dict[str, Any]:
    """A pending approval as the approvals table has it now."""
    if approval.get("status") != "pending" or gateway.approvals is None:
        return approval
    try:
        row = await gateway.approvals.store.get_approval(who.caller, str(approval.get("id")))
    except NotFound:  # pruned meanwhile: what the record says is all there is
        return approval
    except StoreError as exc:
        log_event("hookgate.dispatch.approval_unreadable", error=str(exc))
        return approval
    return {
        **approval,
        "status": row.status,
        "decided_by": row.decided_by,
        "decided_at": row.decided_at,
        "comment": row.comment,
        "input_edited": row.input_edited,
    }


def dispatch_view(row: DispatchRow, approval: dict[str, Any] | None = None) -> dict[str, Any]:
    data = row.to_dict()
    data["created_at"] = iso(row.created_at)
    shown = approval if approval is not None else data["approval"]
    if shown is not None:
        shown = dict(shown)
        for key in _APPROVAL_TIMES:
            value = shown.get(key)
            shown[key] = iso(value) if isinstance(value, int | float) else value
    data["approval"] = shown
    return data


async def dispatches_list(
    gateway: Gateway, who: Principal, p: schemas.DispatchListParams
) -> dict[str, Any]:
    try:
        page = await gateway.store.query_dispatches(who.caller, dispatch_query(who, p))
    except StoreError as exc:  # a cursor that does not decode, and the like
        raise ApiError("INVALID_REQUEST", str(exc)) from None
    return {
        "dispatches": [dispatch_view(row) for row in page.items],
        "nextCursor": page.next_cursor,
    }


async def dispatches_get(
    gateway: Gateway, who: Principal, p: schemas.DispatchIdParams
) -> dict[str, Any]:
    try:
        row = await gateway.store.get_dispatch(who.caller, p.dispatch_id)
    except NotFound:
        raise ApiError("NOT_FOUND", f"no dispatch {p.dispatch_id}") from None
    approval = await _approval_now(gateway, who, dict(row.approval)) if row.approval else None
    return {"dispatch": dispatch_view(row, approval)}
