"""Pending approvals in the store: create, read, decide, expire; both backends.

An approval row is created when a hook asks a person; it is decided once (approved or denied)
or expires. A decision is a conditional ``UPDATE … WHERE status = 'pending'``, so two people
(or two replicas) deciding at once cannot both win, and a decision after the deadline loses to
the expiry. Every change calls the approval listeners after commit (and, on PostgreSQL, sends
``NOTIFY hookgate_approvals`` so waiters on other replicas wake up).

Text columns ``tool_input``, ``edited_input`` and ``outcome`` hold whatever the caller gives
(the gateway seals them); the store does not read them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Final, Literal

from hookgate.log import log_event
from hookgate.store.base import Caller, NotFound, StoreError

if TYPE_CHECKING:
    from hookgate.store.sql.base import Row, Sql

__all__ = [
    "APPROVAL_STATUSES",
    "DEFAULT_MAX_PENDING_APPROVALS",
    "ApprovalCapReached",
    "ApprovalClosed",
    "ApprovalSelfDecision",
    "ApprovalRow",
    "ApprovalStoreMixin",
]

ApprovalStatus = Literal["pending", "approved", "denied", "expired"]
APPROVAL_STATUSES: Final = ("pending", "approved", "denied", "expired")
MAX_LIST: Final = 500
#: Pending approvals one tenant may have at once (``hookgate serve --max-pending-approvals``).
DEFAULT_MAX_PENDING_APPROVALS: Final = 100

_COLUMNS: Final = (
    "id, tenant_id, agent_id, session_id, event, event_id, tool_name, tool_input, hook_id, "
    "hook_name, reason, status, on_timeout, outcome, created_at, expires_at, decided_at, "
    "decided_by, comment, input_edited, edited_input, requested_key_id"
)


#: ``listener(approval_id, tenant_id, status)``, called after an approval changed.
ApprovalListener = Callable[[str, str, str], None]


#: Ids per statement of :meth:`ApprovalStoreMixin.decided_approvals`.
_DECIDED_CHUNK: Final = 500

class ApprovalClosed(StoreError):
    """The approval was already decided or has expired."""

    def __init__(self, approval: ApprovalRow) -> None:
        self.approval = approval
        super().__init__(f"approval {approval.id} is already {approval.status}")


class ApprovalCapReached(StoreError):
    """The tenant already has as many pending approvals as the gateway allows."""

    def __init__(self, tenant_id: str, pending: int, cap: int) -> None:
        self.tenant_id = tenant_id
        self.pending = pending
        self.cap = cap
        super().__init__(
            f"tenant {tenant_id} has {pending} pending approvals, the most this gateway keeps "
            f"(--max-pending-approvals {cap}); no new approval until people decide or some "
            "expire"
        )


class ApprovalSelfDecision(StoreError):
    """The deciding key asked for this approval, or asked for one in the same agent session:
    an agent never decides its own approvals."""

    def __init__(self, approval: ApprovalRow, same_session: bool) -> None:
        self.approval = approval
        self.same_session = same_session
        why = (
            f"it asked for an approval in the same agent session ({approval.session_id})"
            if same_session
            else "it is the key that asked for it"
        )
        super().__init__(
            f"approval {approval.id} cannot be decided with this key: {why}; a person decides "
            "it with another key (the approver role is made for that)"
        )


@dataclass(frozen=True, slots=True)
class ApprovalRow:
    id: str
    tenant_id: str
    event: str
    created_at: float
    expires_at: float
    agent_id: str | None = None
    session_id: str | None = None
    event_id: str | None = None
    tool_name: str | None = None
    tool_input: str | None = None
    hook_id: str | None = None
    hook_name: str = ""
    reason: str | None = None
    status: ApprovalStatus = "pending"
    on_timeout: Literal["block", "allow"] = "block"
    outcome: str | None = None
    decided_at: float | None = None
    decided_by: str | None = None
    comment: str | None = None
    input_edited: bool = False
    edited_input: str | None = None
    #: The API key whose dispatch asked (``None``: no key asked, as in the library).
    requested_key_id: str | None = None

    @property
    def pending(self) -> bool:
        return self.status == "pending"


def _params(row: ApprovalRow) -> tuple[Any, ...]:
    return (
        row.id,
        row.tenant_id,
        row.agent_id,
        row.session_id,
        row.event,
        row.event_id,
        row.tool_name,
        row.tool_input,
        row.hook_id,
        row.hook_name,
        row.reason,
        row.status,
        row.on_timeout,
        row.outcome,
        row.created_at,
        row.expires_at,
        row.decided_at,
        row.decided_by,
        row.comment,
        row.input_edited,
        row.edited_input,
        row.requested_key_id,
    )


def approval_from_row(row: Row) -> ApprovalRow:
    return ApprovalRow(
        id=row["id"],
        tenant_id=row["tenant_id"],
        agent_id=row["agent_id"],
        session_id=row["session_id"],
        event=row["event"],
        event_id=row["event_id"],
        tool_name=row["tool_name"],
        tool_input=row["tool_input"],
        hook_id=row["hook_id"],
        hook_name=row["hook_name"],
        reason=row["reason"],
        status=row["status"],
        on_timeout=row["on_timeout"],
        outcome=row["outcome"],
        created_at=row["created_at"],
        expires_at=row["expires_at"],
        decided_at=row["decided_at"],
        decided_by=row["decided_by"],
        comment=row["comment"],
        input_edited=bool(row["input_edited"]),
        edited_input=row["edited_input"],
        requested_key_id=row["requested_key_id"],
    )


def _visible(caller: Caller, tenant_id: str) -> bool:
    # Approvals always belong to one tenant: no global rows that every tenant sees.
    return caller.master or caller.tenant_id == tenant_id


class ApprovalStoreMixin:
    """The approval methods of :class:`~hookgate.store.sql.SqlStore`."""

    _approval_listeners: list[ApprovalListener]

    if TYPE_CHECKING:

        def _write(self) -> Any: ...

        def _read(self) -> Any: ...

        def add_resync_listener(self, callback: Callable[[], None]) -> None: ...

        def remove_resync_listener(self, callback: Callable[[], None]) -> None: ...

    async def _announce_approval(self, sql: Sql, row: ApprovalRow) -> None:
        """Tell other processes an approval changed (PostgreSQL NOTIFY); in the transaction."""
        return None

    def add_approval_listener(self, callback: ApprovalListener) -> None:
        """Call ``callback(id, tenant_id, status)`` after each approval change committed
        through this object, and (after :meth:`watch_approvals`) other processes' changes."""
        self._approval_listeners.append(callback)

    def remove_approval_listener(self, callback: ApprovalListener) -> None:
        if callback in self._approval_listeners:
            self._approval_listeners.remove(callback)

    async def watch_approvals(self) -> None:
        """Start hearing other processes' approval changes (PostgreSQL LISTEN); SQLite has
        one gateway process, so nothing to hear."""
        return None

    def _approval_changed(self, row: ApprovalRow) -> None:
        self._approval_signal(row.id, row.tenant_id, row.status)

    def _approval_signal(self, approval_id: str, tenant_id: str, status: str) -> None:
        for callback in list(self._approval_listeners):
            try:
                callback(approval_id, tenant_id, status)
            except Exception as exc:  # a listener must not undo a committed change
                log_event("hookgate.store.listener_failed", error=str(exc))

    async def _lock_tenant_approvals(self, sql: Sql, tenant_id: str) -> None:
        """Serialise approval creation of one tenant (PostgreSQL: an advisory lock); SQLite's
        write transaction already holds the file's write lock."""
        return None

    async def count_pending_approvals(self, caller: Caller, now: float) -> int:
        """Pending approvals not past their deadline, of the caller's tenant (master: all)."""
        clause, args = ("", []) if caller.master else (" AND tenant_id = ?", [caller.tenant_id])
        async with self._read() as sql:
            value = await sql.fetchval(
                f"SELECT count(*) FROM approvals WHERE status = 'pending' AND expires_at > ?"
                f"{clause}",
                now,
                *args,
            )
        return int(value or 0)

    async def create_approval(self, row: ApprovalRow, *, max_pending: int | None = None) -> (
        ApprovalRow
    ):
        """Store a new pending approval; :class:`ApprovalCapReached` when its tenant already
        has ``max_pending`` pending ones (counted and inserted in one transaction)."""
        async with self._write() as sql:
            if max_pending is not None:
                await self._lock_tenant_approvals(sql, row.tenant_id)
                pending = int(
                    await sql.fetchval(
                        "SELECT count(*) FROM approvals WHERE tenant_id = ? "
                        "AND status = 'pending' AND expires_at > ?",
                        row.tenant_id,
                        row.created_at,
                    )
                    or 0
                )
                if pending >= max_pending:
                    raise ApprovalCapReached(row.tenant_id, pending, max_pending)
            await sql.execute(
                f"INSERT INTO approvals ({_COLUMNS}) VALUES "
                "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                *_params(row),
            )
            await self._announce_approval(sql, row)
        self._approval_changed(row)
        return row

    async def get_approval(self, caller: Caller, approval_id: str) -> ApprovalRow:
        async with self._read() as sql:
            found = await sql.fetchrow(
                f"SELECT {_COLUMNS} FROM approvals WHERE id = ?", approval_id
            )
        if found is None or not _visible(caller, found["tenant_id"]):
            raise NotFound(f"no approval {approval_id}")
        return approval_from_row(found)

    async def list_approvals(
        self,
        caller: Caller,
        *,
        status: str | None = None,
        tenant_id: str | None = None,
        limit: int = 100,
    ) -> list[ApprovalRow]:
        """Newest first; a tenant caller sees only its own tenant's approvals."""
        clauses: list[str] = []
        args: list[Any] = []
        if not caller.master:
            clauses.append("tenant_id = ?")
            args.append(caller.tenant_id)
        elif tenant_id is not None:
            clauses.append("tenant_id = ?")
            args.append(tenant_id)
        if status is not None:
            clauses.append("status = ?")
            args.append(status)
        where = (" WHERE " + " AND ".join(clauses)) if clauses else ""
        args.append(max(1, min(limit, MAX_LIST)))
        async with self._read() as sql:
            rows = await sql.fetch(
                f"SELECT {_COLUMNS} FROM approvals{where} ORDER BY created_at DESC, id LIMIT ?",
                *args,
            )
        return [approval_from_row(row) for row in rows]

    async def decide_approval(
        self,
        caller: Caller,
        approval_id: str,
        *,
        status: Literal["approved", "denied"],
        decided_by: str,
        now: float,
        comment: str | None = None,
        edited_input: str | None = None,
        decider_key_id: str | None = None,
    ) -> ApprovalRow:
        """Record a person's decision; :class:`ApprovalClosed` when it is no longer pending
        (decided by someone else, or past its deadline); :class:`ApprovalSelfDecision` when
        ``decider_key_id`` asked for it, or asked for an approval in the same agent session."""
        closed: ApprovalRow | None = None
        lock = getattr(self, "lock_clause", "")  # FOR UPDATE on PostgreSQL
        async with self._write() as sql:
            found = await sql.fetchrow(
                f"SELECT {_COLUMNS} FROM approvals WHERE id = ?{lock}", approval_id
            )
            if found is None or not _visible(caller, found["tenant_id"]):
                raise NotFound(f"no approval {approval_id}")
            current = approval_from_row(found)
            if decider_key_id is not None:
                await self._refuse_self_decision(sql, current, decider_key_id)
            decided = replace(
                current,
                status=status,
                decided_at=now,
                decided_by=decided_by,
                comment=comment,
                input_edited=edited_input is not None,
                edited_input=edited_input,
            )
            if current.status != "pending":
                closed = current
            elif current.expires_at <= now:  # past its deadline: it expired
                closed = await self._expire_one(sql, current, now)
            else:
                changed = await sql.execute(
                    "UPDATE approvals SET status = ?, decided_at = ?, decided_by = ?, "
                    "comment = ?, input_edited = ?, edited_input = ? "
                    "WHERE id = ? AND status = 'pending'",
                    status,
                    now,
                    decided_by,
                    comment,
                    edited_input is not None,
                    edited_input,
                    approval_id,
                )
                if changed != 1:
                    raise StoreError(f"approval {approval_id} changed while being decided")
                await self._announce_approval(sql, decided)
        if closed is not None:
            if closed is not current:
                self._approval_changed(closed)
            raise ApprovalClosed(closed)
        self._approval_changed(decided)
        return decided

    async def _refuse_self_decision(self, sql: Sql, row: ApprovalRow, key_id: str) -> None:
        if row.requested_key_id == key_id:
            raise ApprovalSelfDecision(row, same_session=False)
        if row.session_id is None:
            return
        asked = await sql.fetchval(
            "SELECT count(*) FROM approvals WHERE tenant_id = ? AND session_id = ? "
            "AND requested_key_id = ?",
            row.tenant_id,
            row.session_id,
            key_id,
        )
        if asked:
            raise ApprovalSelfDecision(row, same_session=True)

    async def _expire_one(self, sql: Sql, current: ApprovalRow, now: float) -> ApprovalRow:
        await sql.execute(
            "UPDATE approvals SET status = 'expired', decided_at = ? "
            "WHERE id = ? AND status = 'pending'",
            now,
            current.id,
        )
        expired = replace(current, status="expired", decided_at=now)
        await self._announce_approval(sql, expired)
        return expired

    async def expire_approvals(self, now: float, ids: Sequence[str] | None = None) -> list[
        ApprovalRow
    ]:
        """Mark every pending approval past its deadline (or only ``ids``) expired."""
        expired: list[ApprovalRow] = []
        async with self._write() as sql:
            clause = ""
            args: list[Any] = [now]
            if ids is not None:
                if not ids:
                    return []
                clause = " AND id IN (" + ", ".join("?" * len(ids)) + ")"
                args.extend(ids)
            rows = await sql.fetch(
                f"SELECT {_COLUMNS} FROM approvals WHERE status = 'pending' "
                f"AND expires_at <= ?{clause}{getattr(self, 'lock_clause', '')}",
                *args,
            )
            for found in rows:
                expired.append(await self._expire_one(sql, approval_from_row(found), now))
        for row in expired:
            self._approval_changed(row)
        return expired

    async def decided_approvals(self, ids: Sequence[str]) -> list[str]:
        """Those of ``ids`` that are no longer pending (or gone): the waiters' fallback
        when a notification was missed. Bounded statements of at most 500 ids each."""
        decided: list[str] = []
        async with self._read() as sql:
            for start in range(0, len(ids), _DECIDED_CHUNK):
                chunk = list(ids[start : start + _DECIDED_CHUNK])
                marks = ", ".join("?" * len(chunk))
                rows = await sql.fetch(
                    f"SELECT id FROM approvals WHERE status = 'pending' AND id IN ({marks})",
                    *chunk,
                )
                pending = {row["id"] for row in rows}
                decided.extend(approval_id for approval_id in chunk if approval_id not in pending)
        return decided

    async def next_approval_expiry(self) -> float | None:
        """The earliest deadline of any pending approval (for the expiry sweeper)."""
        async with self._read() as sql:
            value = await sql.fetchval(
                "SELECT min(expires_at) FROM approvals WHERE status = 'pending'"
            )
        return None if value is None else float(value)
