"""Approvals in the store, on SQLite and PostgreSQL: scope, one decision, expiry, listeners."""

from __future__ import annotations

import asyncio
import time

import pytest
from tests.store.conftest import StoreFactory, hook

from hookgate.store import Caller, NotFound, Store
from hookgate.store.approvals import ApprovalClosed, ApprovalRow, ApprovalStoreMixin

A = Caller.for_tenant("tenant-a")
B = Caller.for_tenant("tenant-b")
MASTER = Caller.master_scope()


def pending(approval_id: str, tenant: str = "tenant-a", ttl: float = 60.0) -> ApprovalRow:
    now = time.time()
    return ApprovalRow(
        id=approval_id,
        tenant_id=tenant,
        event="pre_tool_use",
        created_at=now,
        expires_at=now + ttl,
        tool_name="exec",
        tool_input='{"cmd": "ls"}',
        hook_name="asker",
        reason="needs a person",
    )


def approvals(store: Store) -> ApprovalStoreMixin:
    assert isinstance(store, ApprovalStoreMixin)
    return store


async def test_tenants_see_and_decide_only_their_own(store: Store) -> None:
    s = approvals(store)
    await s.create_approval(pending("apr_a"))
    await s.create_approval(pending("apr_b", tenant="tenant-b"))
    assert [r.id for r in await s.list_approvals(A)] == ["apr_a"]
    assert {r.id for r in await s.list_approvals(MASTER)} == {"apr_a", "apr_b"}
    assert [r.id for r in await s.list_approvals(MASTER, tenant_id="tenant-b")] == ["apr_b"]
    with pytest.raises(NotFound):
        await s.get_approval(B, "apr_a")
    with pytest.raises(NotFound):
        await s.decide_approval(
            B, "apr_a", status="approved", decided_by="mallory", now=time.time()
        )
    assert (await s.get_approval(A, "apr_a")).status == "pending"


async def test_one_decision_wins_and_is_recorded(store: Store) -> None:
    s = approvals(store)
    await s.create_approval(pending("apr_1"))
    decided = await s.decide_approval(
        A,
        "apr_1",
        status="approved",
        decided_by="alice (key ab12)",
        now=time.time(),
        comment="fine",
        edited_input='{"cmd": "ls -l"}',
    )
    assert (decided.status, decided.decided_by, decided.comment) == (
        "approved",
        "alice (key ab12)",
        "fine",
    )
    again = await s.get_approval(A, "apr_1")
    assert again.input_edited and again.edited_input == '{"cmd": "ls -l"}'
    assert again.decided_at is not None
    with pytest.raises(ApprovalClosed) as closed:
        await s.decide_approval(A, "apr_1", status="denied", decided_by="bob", now=time.time())
    assert closed.value.approval.status == "approved"


async def test_concurrent_decisions_have_exactly_one_winner(make_store: StoreFactory) -> None:
    first, second = approvals(await make_store()), approvals(await make_store())
    await first.create_approval(pending("apr_race"))

    async def decide(s: ApprovalStoreMixin, status: str) -> str:
        try:
            row = await s.decide_approval(
                A, "apr_race", status=status, decided_by=status, now=time.time()  # type: ignore[arg-type]
            )
        except ApprovalClosed:
            return "lost"
        return row.status

    results = await asyncio.gather(decide(first, "approved"), decide(second, "denied"))
    assert sorted(results)[0] == "approved" or sorted(results)[0] == "denied"
    assert results.count("lost") == 1


async def test_expiry_beats_a_late_decision_and_the_sweep_reports_rows(store: Store) -> None:
    s = approvals(store)
    await s.create_approval(pending("apr_late", ttl=-1.0))
    await s.create_approval(pending("apr_open"))
    with pytest.raises(ApprovalClosed) as closed:
        await s.decide_approval(A, "apr_late", status="approved", decided_by="x", now=time.time())
    assert closed.value.approval.status == "expired"
    await s.create_approval(pending("apr_gone", ttl=-1.0))
    assert await s.next_approval_expiry() is not None
    swept = await s.expire_approvals(time.time())
    assert [r.id for r in swept] == ["apr_gone"]
    assert (await s.get_approval(A, "apr_open")).status == "pending"


async def test_listeners_hear_changes_here_and_on_other_replicas(
    make_store: StoreFactory,
) -> None:
    here, there = approvals(await make_store()), approvals(await make_store())
    heard_here: list[tuple[str, str, str]] = []
    heard_there: asyncio.Queue[tuple[str, str, str]] = asyncio.Queue()
    here.add_approval_listener(lambda *change: heard_here.append(change))
    there.add_approval_listener(lambda *change: heard_there.put_nowait(change))
    await there.watch_approvals()
    await here.create_approval(pending("apr_n"))
    await here.decide_approval(A, "apr_n", status="denied", decided_by="d", now=time.time())
    assert heard_here == [("apr_n", "tenant-a", "pending"), ("apr_n", "tenant-a", "denied")]
    if getattr(there, "backend", "") == "postgres":
        # Delivered by NOTIFY, not by polling: the other store object wrote nothing itself.
        async with asyncio.timeout(10):
            assert await heard_there.get() == ("apr_n", "tenant-a", "pending")
            assert await heard_there.get() == ("apr_n", "tenant-a", "denied")


async def test_hook_approval_settings_round_trip(store: Store) -> None:
    from hookgate.definition import ApprovalPolicy

    created = await store.create_hook(
        A,
        hook(
            tenant_id="tenant-a",
            scope="tenant",
            approval={"required": True, "timeout_ms": 7_200_000, "on_timeout": "allow"},
        ),
    )
    loaded = await store.get_hook(A, created.id)
    assert loaded.definition.approval == ApprovalPolicy(True, 7_200_000, "allow")
    updated = await store.update_hook(A, created.id, {"approval": None})
    assert updated.definition.approval is None
