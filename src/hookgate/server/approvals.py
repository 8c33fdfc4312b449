"""The gateway's approver: approvals live in the store, people decide, agents wait.

:class:`GatewayApprovals` is the engine's :class:`~hookgate.approvals.Approver`. ``decide``
stores a pending approval (the tool input and the folded outcome sealed when the gateway has
a key), posts the optional webhook notification and waits. A waiter wakes when the store
says the approval changed: a decision made through this process calls the store's listeners
directly; one made through another replica arrives by PostgreSQL ``NOTIFY``. No waiter
depends on one notification: every ``CHECK_S`` one query asks which awaited approvals were
decided (a lost LISTEN connection, a SQLite file shared by processes), and a LISTEN
connection that comes back wakes every waiter to read its row again. A timer per wait, and a
sweeper for approvals nobody waits on any more (the agent's gateway restarted), mark them
expired at their deadline.

The wait of one dispatch can be bounded (``approval_wait_limit``, the caller's
``approvalWaitS``; by default it is the approval's whole lifetime, over REST too). Past it the
dispatch answers ``pending`` with the approval id; the agent waits again with
``GET /api/v1/approvals/{id}/outcome`` (``approvals.wait``), on any replica, even after a
restart, because everything the outcome needs (its trace and dispatch id too) is in the row.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import logging
import time
from typing import TYPE_CHECKING, Any, Final

import orjson

from hookgate.approvals import ApprovalDecision, ApprovalRequest, ResumeChain, settle
from hookgate.engine_audit import RESUMED_DISPATCH
from hookgate.log import log_event
from hookgate.outcome import Outcome, TraceEntry
from hookgate.secrets.keyring import Keyring, is_sealed_text
from hookgate.store import Caller
from hookgate.store.approvals import (
    DEFAULT_MAX_PENDING_APPROVALS,
    ApprovalCapReached,
    ApprovalClosed,
    ApprovalRow,
    ApprovalStoreMixin,
)

if TYPE_CHECKING:
    from hookgate.handlers import Services

__all__ = ["GatewayApprovals", "approval_requester", "approval_wait_limit"]

#: How long this dispatch may wait for a person (seconds; ``None``: until the approval
#: expires). Set by ``hooks.dispatch`` for the duration of one request.
approval_wait_limit: contextvars.ContextVar[float | None] = contextvars.ContextVar(
    "approval_wait_limit", default=None
)
#: The API key (its id) whose dispatch is running: an approval it asks for records it, and
#: that key never decides it. Set by ``hooks.dispatch`` for the duration of one request.
approval_requester: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "approval_requester", default=None
)
#: The sweeper looks again at least this often, in case a deadline was missed (clock jumps).
SWEEP_MAX_S: Final = 30.0
#: How often waiters' approvals are looked up in the store, in case a notification was
#: missed (a lost LISTEN connection): a decision reaches its waiter within this.
CHECK_S: Final = 0.5
NOTIFY_TIMEOUT_S: Final = 5.0


class GatewayApprovals:
    def __init__(
        self,
        store: ApprovalStoreMixin,
        *,
        keyring: Keyring | None = None,
        services: Services | None = None,
        webhook_url: str | None = None,
        panel_url: str | None = None,
        max_pending: int = DEFAULT_MAX_PENDING_APPROVALS,
    ) -> None:
        self.store = store
        #: Pending approvals one tenant may have at once; past it, asking blocks.
        self.max_pending = max_pending
        self.keyring = keyring
        self.services = services
        self.webhook_url = webhook_url
        self.panel_url = panel_url.rstrip("/") if panel_url else None
        self._waiters: dict[str, list[asyncio.Future[None]]] = {}
        #: Grows on every approval change this process hears of (panel live updates).
        self.revision = 0
        self._tenant_revisions: dict[str, int] = {}
        self._changed = asyncio.Event()
        self._sweep_wake = asyncio.Event()
        self._sweeper: asyncio.Task[None] | None = None
        self._checker: asyncio.Task[None] | None = None
        self._background: set[asyncio.Task[Any]] = set()
        #: Tasks that are only waiting (for a decision or a change); nothing else to finish.
        self._idle_tasks: set[asyncio.Task[Any]] = set()
        self._closing = False

    # -- lifecycle ----------------------------------------------------------------------------

    async def start(self) -> None:
        self.store.add_approval_listener(self._on_change)
        self.store.add_resync_listener(self._on_resync)
        await self.store.watch_approvals()
        loop = asyncio.get_running_loop()
        self._sweeper = loop.create_task(self._sweep(), name="hookgate-approval-sweeper")
        self._checker = loop.create_task(self._check(), name="hookgate-approval-checker")

    async def close(self) -> None:
        """Stop waiting: every waiter answers ``pending`` (its approval stays in the store)."""
        self._closing = True
        self.store.remove_approval_listener(self._on_change)
        self.store.remove_resync_listener(self._on_resync)
        self._wake_all()
        self._changed.set()  # and every watcher (the panel long-polls for 25 s)
        for task in (self._sweeper, self._checker):
            if task is not None:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
        for task in list(self._background):
            task.cancel()
        await asyncio.gather(*self._background, return_exceptions=True)

    def _on_change(self, approval_id: str, tenant_id: str, status: str) -> None:
        self.revision += 1
        self._tenant_revisions[tenant_id] = self._tenant_revisions.get(tenant_id, 0) + 1
        self._changed.set()
        self._changed = asyncio.Event()
        if status == "pending":
            self._sweep_wake.set()  # a new deadline may be the nearest
            return
        for future in self._waiters.get(approval_id, ()):
            if not future.done():
                future.set_result(None)

    def _on_resync(self) -> None:
        # The LISTEN connection came back: decisions made meanwhile went unheard. Every
        # waiter reads its row again; the panel's watchers and the sweeper look again.
        self.revision += 1
        for tenant in self._tenant_revisions:
            self._tenant_revisions[tenant] += 1
        self._changed.set()
        self._changed = asyncio.Event()
        self._sweep_wake.set()
        self._wake_all()

    def _wake_all(self) -> None:
        for futures in self._waiters.values():
            for future in futures:
                if not future.done():
                    future.set_result(None)

    async def _check(self) -> None:
        """Never depend on one notification: while anyone waits, ask the store every
        ``CHECK_S`` which of the awaited approvals were decided, and wake their waiters
        (one bounded query per tick, however many wait)."""
        while not self._closing:
            await asyncio.sleep(CHECK_S)
            waited = list(self._waiters)
            if not waited:
                continue
            try:
                decided = await self.store.decided_approvals(waited)
            except Exception as exc:  # the store is down: the waiters' timers still run
                log_event("hookgate.approval.check_failed", error=str(exc))
                continue
            for approval_id in decided:
                for future in self._waiters.get(approval_id, ()):
                    if not future.done():
                        future.set_result(None)

    def idle_waits(self, tasks: Any) -> list[asyncio.Task[Any]]:
        """Those of ``tasks`` that are only waiting here (safe to cancel: no hook is running
        in them, and their rows are written)."""
        return [task for task in tasks if task in self._idle_tasks]

    @contextlib.contextmanager
    def _idle(self) -> Any:
        task = asyncio.current_task()
        if task is not None:
            self._idle_tasks.add(task)
        try:
            yield
        finally:
            if task is not None:
                self._idle_tasks.discard(task)

    def revision_for(self, caller: Caller) -> int:
        """The change counter a caller may watch: its own tenant's (master scope: all)."""
        return self.revision if caller.master else self._tenant_revisions.get(caller.tenant_id, 0)

    async def changed(self, caller: Caller, since: int | None, timeout_s: float) -> bool:
        """Wait until the caller's revision differs from ``since`` (or ``timeout_s`` passes);
        other tenants' changes do not wake it."""
        if since is None:
            return False
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout_s
        while self.revision_for(caller) == since:
            event = self._changed
            remaining = deadline - loop.time()
            if remaining <= 0 or self._closing:
                return False
            with self._idle(), contextlib.suppress(TimeoutError):
                async with asyncio.timeout(remaining):
                    await event.wait()
        return True

    async def _sweep(self) -> None:
        while not self._closing:
            self._sweep_wake.clear()
            try:
                expired = await self.store.expire_approvals(time.time())
                if expired:
                    log_event(
                        "hookgate.approval.expired",
                        level=logging.INFO,
                        approvals=[row.id for row in expired],
                    )
                nearest = await self.store.next_approval_expiry()
            except Exception as exc:  # the store is down: try again later
                log_event("hookgate.approval.sweep_failed", error=str(exc))
                nearest = None
            delay = SWEEP_MAX_S if nearest is None else min(SWEEP_MAX_S, nearest - time.time())
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(max(delay, 0.05)):
                    await self._sweep_wake.wait()

    # -- sealing ------------------------------------------------------------------------------

    def seal(self, value: Any, approval_id: str, column: str) -> str:
        """JSON text of ``value``, sealed (bound to the approval and column) with a key."""
        text = orjson.dumps(value, default=str).decode()
        if self.keyring is None:
            return text
        return self.keyring.seal_text(text, f"approval:{approval_id}:{column}")

    def open(self, text: str | None, approval_id: str, column: str) -> Any:
        if text is None:
            return None
        if is_sealed_text(text):
            if self.keyring is None:
                raise ValueError("the approval is sealed and this gateway has no key")
            text = self.keyring.open_text(text, f"approval:{approval_id}:{column}")
        return orjson.loads(text)

    # -- the approver ---------------------------------------------------------------------------

    async def decide(self, request: ApprovalRequest) -> ApprovalDecision:
        outcome = request.outcome or Outcome()
        template = {
            "updated_input": outcome.updated_input,
            "additional_context": list(outcome.additional_context),
            "result": outcome.result,
            "continue": outcome.continue_,
            "timeout_s": request.timeout_s,
            "kind": request.kind,
            # The event: an edited input runs through the rest of the chain with it, on
            # whichever replica the agent waits.
            "payload": request.payload,
            # So a late answer (approvals.wait) has the dispatch's id and its trace too.
            "dispatch_id": outcome.dispatch_id,
            "trace": [entry.to_dict() for entry in outcome.trace],
        }
        row = ApprovalRow(
            id=request.id,
            tenant_id=request.tenant_id or "",
            agent_id=request.agent_id,
            session_id=request.session_id,
            event=request.event,
            event_id=request.event_id,
            tool_name=request.tool_name,
            tool_input=self.seal(request.tool_input, request.id, "tool_input"),
            hook_id=request.hook_id,
            hook_name=request.hook_name,
            reason=request.reason,
            on_timeout=request.on_timeout,
            outcome=self.seal(template, request.id, "outcome"),
            created_at=request.created_at,
            expires_at=request.expires_at,
            requested_key_id=approval_requester.get(),
        )
        try:
            await self.store.create_approval(row, max_pending=self.max_pending)
        except ApprovalCapReached as exc:
            # Never allow, never wait: the dispatch blocks at once with the reason.
            log_event(
                "security.approval.cap_reached",
                tenant_id=row.tenant_id,
                pending=exc.pending,
                cap=exc.cap,
            )
            return ApprovalDecision(
                "denied", decided_by="hookgate", comment=str(exc), approval_id=row.id
            )
        log_event(
            "hookgate.approval.created",
            level=logging.INFO,
            approval_id=row.id,
            tenant_id=row.tenant_id,
            hook=row.hook_name,
            tool=row.tool_name,
            expires_at=row.expires_at,
        )
        if self.webhook_url:
            self._spawn(self._notify(row))
        return await self.wait(row.id, approval_wait_limit.get())

    async def wait(self, approval_id: str, limit_s: float | None) -> ApprovalDecision:
        """Wait for the approval's decision, its expiry, or ``limit_s`` (then ``pending``)."""
        loop = asyncio.get_running_loop()
        give_up = None if limit_s is None else loop.time() + limit_s
        system = Caller.system()
        while True:
            future: asyncio.Future[None] = loop.create_future()
            # Registered before reading, so a decision between the read and the wait is heard.
            self._waiters.setdefault(approval_id, []).append(future)
            try:
                row = await self.store.get_approval(system, approval_id)
                now = time.time()
                if row.status == "pending" and row.expires_at <= now:
                    await self.store.expire_approvals(now, [approval_id])
                    continue
                if row.status != "pending":
                    return self.decision_of(row)
                until_expiry = row.expires_at - now
                timeout = until_expiry
                if give_up is not None:
                    timeout = min(timeout, give_up - loop.time())
                if timeout <= 0 or self._closing:
                    return self.decision_of(row)
                with self._idle(), contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(timeout):
                        await future
                # Woken (a change, the deadline, the caller's limit, shutdown): read again.
            finally:
                futures = self._waiters.get(approval_id, [])
                if future in futures:
                    futures.remove(future)
                if not futures:
                    self._waiters.pop(approval_id, None)

    def decision_of(self, row: ApprovalRow) -> ApprovalDecision:
        edited = self.open(row.edited_input, row.id, "edited_input") if row.input_edited else None
        return ApprovalDecision(
            row.status,
            decided_by=row.decided_by,
            comment=row.comment,
            edited_input=edited,
            input_edited=row.input_edited,
            approval_id=row.id,
            decided_at=row.decided_at,
            expires_at=row.expires_at,
        )

    async def outcome_of(
        self, row: ApprovalRow, decision: ApprovalDecision, resume: ResumeChain | None
    ) -> Outcome:
        """The outcome an agent gets for ``row``, rebuilt from the row alone (``resume`` runs
        the rest of the chain on an input the person edited)."""
        template = self.open(row.outcome, row.id, "outcome") or {}
        outcome = Outcome(
            updated_input=template.get("updated_input"),
            additional_context=list(template.get("additional_context") or []),
            result=template.get("result"),
            continue_=template.get("continue") is not False,
            trace=[_trace_entry(entry) for entry in template.get("trace") or ()],
        )
        dispatch_id = template.get("dispatch_id")
        if dispatch_id:
            outcome.dispatch_id = str(dispatch_id)
        request = ApprovalRequest(
            id=row.id,
            event=row.event,
            kind=str(template.get("kind") or "ask"),
            hook_id=row.hook_id or "",
            hook_name=row.hook_name,
            reason=row.reason,
            tool_name=row.tool_name,
            tool_input=None,
            tenant_id=row.tenant_id,
            timeout_s=float(template.get("timeout_s") or (row.expires_at - row.created_at)),
            on_timeout=row.on_timeout,
            created_at=row.created_at,
            payload=template.get("payload"),
        )
        # The hooks run again on an edited input count as the same dispatch.
        token = RESUMED_DISPATCH.set(str(dispatch_id) if dispatch_id else None)
        try:
            return await settle(outcome, request, decision, resume)
        finally:
            RESUMED_DISPATCH.reset(token)

    # -- people decide --------------------------------------------------------------------------

    async def decide_by_person(
        self,
        caller: Caller,
        approval_id: str,
        *,
        approve: bool,
        actor: str,
        comment: str | None,
        edited_input: Any = None,
        edited: bool = False,
        key_id: str | None = None,
    ) -> ApprovalRow:
        """Record a decision made with the API key ``key_id`` (raises the store's NotFound,
        ApprovalClosed, and ApprovalSelfDecision when that key asked for it or asked for
        an approval in the same agent session)."""
        sealed = self.seal(edited_input, approval_id, "edited_input") if edited else None
        row = await self.store.decide_approval(
            caller,
            approval_id,
            status="approved" if approve else "denied",
            decided_by=actor,
            now=time.time(),
            comment=comment,
            edited_input=sealed,
            decider_key_id=key_id,
        )
        log_event(
            "hookgate.approval.decided",
            level=logging.INFO,
            approval_id=row.id,
            tenant_id=row.tenant_id,
            status=row.status,
            decided_by=actor,
            input_edited=row.input_edited,
        )
        return row

    # -- notification ---------------------------------------------------------------------------

    def _spawn(self, coro: Any) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    async def _notify(self, row: ApprovalRow) -> None:
        """POST the new approval to the webhook (SSRF-guarded); never the tool input."""
        from hookgate.net.outbound import shared_client

        assert self.webhook_url is not None and self.services is not None
        body: dict[str, Any] = {
            "type": "approval.created",
            "approval": {
                "id": row.id,
                "tenant_id": row.tenant_id,
                "agent_id": row.agent_id,
                "event": row.event,
                "tool_name": row.tool_name,
                "hook_name": row.hook_name,
                "reason": row.reason,
                "expires_at": row.expires_at,
            },
        }
        if self.panel_url:
            body["link"] = f"{self.panel_url}/#/approvals/{row.id}"
        try:
            response = await shared_client(self.services).post(
                self.webhook_url,
                body=orjson.dumps(body),
                headers={"User-Agent": "hookgate-approvals"},
                timeout_s=NOTIFY_TIMEOUT_S,
            )
        except Exception as exc:  # a notification failing never touches the approval
            log_event("hookgate.approval.notify_failed", approval_id=row.id, error=str(exc))
            return
        if response.status >= 300:
            log_event(
                "hookgate.approval.notify_failed",
                approval_id=row.id,
                error=f"status {response.status}",
            )


def _trace_entry(data: dict[str, Any]) -> TraceEntry:
    return TraceEntry(
        hook_id=str(data.get("hook_id", "")),
        name=str(data.get("name", "")),
        handler_type=str(data.get("handler_type", "")),
        matched=bool(data.get("matched")),
        skipped=data.get("skipped"),
        decision=data.get("decision"),
        duration_ms=float(data.get("duration_ms") or 0.0),
        error=data.get("error"),
        breaker=str(data.get("breaker", "closed")),
        version=int(data.get("version") or 0),
        details=dict(data.get("details") or {}),
        mode="shadow" if data.get("mode") == "shadow" else "enforce",
    )


def closed_message(exc: ApprovalClosed) -> str:
    row = exc.approval
    by = f" by {row.decided_by}" if row.decided_by else ""
    return f"approval {row.id} is already {row.status}{by}"
