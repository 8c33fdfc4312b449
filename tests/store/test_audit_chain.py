"""The audit hash chain on SQLite and PostgreSQL: records written through a real engine and
audit writer link per tenant, retried batches and concurrent writers do not fork a chain,
retention keeps it verifiable."""

from __future__ import annotations

import asyncio
import time
import uuid
from typing import Any

import pytest
from tests.store.conftest import StoreFactory

from hookgate import Engine
from hookgate.settings import Settings
from hookgate.store import Caller, DispatchRow
from hookgate.store.audit_writer import AuditWriter
from hookgate.store.base import Store
from hookgate.store.chain import GENESIS
from hookgate.store.retention import prune_dispatches
from hookgate.store.sql import dispatches

MASTER = Caller.master_scope()
DAY = 86_400.0


def record(tenant: str, created_at: float, *, hooks: int = 1) -> DispatchRow:
    return DispatchRow(
        id=str(uuid.uuid4()),
        tenant_id=tenant,
        event="pre_tool_use",
        event_id=str(uuid.uuid4()),
        decision="allow",
        duration_ms=0.25,
        created_at=created_at,
        tool_name="exec",
        session_id="s1",
        reason="fine",
        hooks=[{"hook_name": "h", "decision": "allow", "duration_ms": 0.1}] * hooks,
        approval={"id": "a1", "status": "approved", "decided_by": "ann"} if hooks else None,
        approval_id="a1" if hooks else None,
        detail=b"\x00sealed\xff",
    )


async def test_records_from_a_real_engine_form_one_chain_per_tenant(store: Store) -> None:
    async with AuditWriter(store, mode="sync") as writer:
        engine = Engine(audit=writer, settings=Settings())

        @engine.hook("pre_tool_use", matcher="^exec$", name="no rm")
        def no_rm(event: Any) -> dict[str, str] | None:
            return {"decision": "block", "reason": "no"} if "rm" in str(event.tool_input) else None

        for n in range(5):
            await engine.fire("pre_tool_use", tool_name="exec", tool_input={"n": n}, tenant_id="a")
        for _ in range(3):
            await engine.fire("pre_tool_use", tool_name="exec", tool_input="rm", tenant_id="b")
        await writer.flush()
    heads = {head.tenant_id: head for head in await store.chain_heads(MASTER)}
    assert (heads["a"].seq, heads["b"].seq) == (5, 3)
    assert heads["a"].hash != heads["b"].hash and GENESIS not in (heads["a"].hash, heads["b"].hash)
    report = await store.verify_chain(MASTER)
    assert report.intact, report.to_dict()
    assert report.records == 8
    # A tenant caller sees and verifies its own chain only.
    mine = await store.verify_chain(Caller.for_tenant("b"), tenant_id="a")
    assert [chain.tenant_id for chain in mine.tenants] == ["b"]
    assert [h.tenant_id for h in await store.chain_heads(Caller.for_tenant("b"))] == ["b"]


async def test_a_retried_batch_does_not_fork_the_chain(store: Store) -> None:
    rows = [record("t", time.time()) for _ in range(4)]
    assert await store.write_dispatches(rows) == 4
    (before,) = await store.chain_heads(MASTER)
    assert await store.write_dispatches([*rows[2:], record("t", time.time())]) == 1
    (after,) = await store.chain_heads(MASTER)
    assert (before.seq, after.seq) == (4, 5)
    assert (await store.verify_chain(MASTER)).intact


async def test_two_writers_on_one_tenant_never_fork_it(make_store: StoreFactory) -> None:
    """Two store objects (two replicas, as far as the database can tell) write batches of the
    same tenant at once; the chain stays one line."""
    first, second = await make_store(), await make_store()

    async def writes(store: Store) -> None:
        for _ in range(10):
            await store.write_dispatches([record("shared", time.time()) for _ in range(20)])

    await asyncio.gather(writes(first), writes(second))
    (head,) = await first.chain_heads(MASTER)
    assert head.seq == 400
    report = await second.verify_chain(MASTER)
    assert report.intact, report.to_dict()
    assert report.records == 400


async def test_retention_moves_the_base_and_the_chain_still_verifies(store: Store) -> None:
    now = time.time()
    old = [record("t", now - 40 * DAY) for _ in range(6)]
    young = [record("t", now - DAY) for _ in range(4)]
    await store.write_dispatches(old)
    await store.write_dispatches(young)
    assert await prune_dispatches(store, 30) == 6
    (head,) = await store.chain_heads(MASTER)
    assert (head.base_seq, head.seq) == (6, 10)
    assert head.base_hash != GENESIS
    report = await store.verify_chain(MASTER)
    assert report.intact, report.to_dict()
    assert report.records == 4
    # Everything old: the base reaches the head, and new records still link onto it.
    assert await prune_dispatches(store, 0.5) == 4
    await store.write_dispatches([record("t", time.time())])
    report = await store.verify_chain(MASTER)
    assert report.intact and report.records == 1
    (head,) = await store.chain_heads(MASTER)
    assert (head.base_seq, head.seq) == (10, 11)


async def test_unmatched_retention_keeps_the_links_of_what_it_deletes(store: Store) -> None:
    now = time.time()
    rows = [record("t", now - 10 * DAY, hooks=n % 2) for n in range(8)]  # every other unmatched
    await store.write_dispatches(rows)
    assert await prune_dispatches(store, 30, unmatched_days=5) == 4
    report = await store.verify_chain(MASTER)
    assert report.intact, report.to_dict()
    assert report.records == 4
    # The general window then takes the whole prefix, gaps included.
    assert await prune_dispatches(store, 5) == 4
    report = await store.verify_chain(MASTER)
    assert report.intact and report.records == 0
    (head,) = await store.chain_heads(MASTER)
    assert head.base_seq == head.seq == 8


async def test_a_chain_longer_than_a_page_is_walked_page_by_page(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Pages of 3 (the next read while one is hashed), gaps among them, and a record removed
    behind a page boundary is still named."""
    monkeypatch.setattr(dispatches, "VERIFY_PAGE", 3)
    monkeypatch.setattr(dispatches, "_WALK_INLINE_MAX", 2)  # the threaded path too
    now = time.time()
    rows = [record("t", now - 10 * DAY, hooks=n % 3) for n in range(14)]
    await store.write_dispatches(rows)
    assert await prune_dispatches(store, 30, unmatched_days=5) == 5
    report = await store.verify_chain(MASTER)
    assert report.intact, report.to_dict()
    assert report.records == 9
    # Remove place 8 (a kept record) by pruning it as if unmatched without leaving a gap.
    async with store._write() as sql:  # type: ignore[attr-defined]
        assert await sql.execute("DELETE FROM dispatch_records WHERE chain_seq = 8") == 1
    (chain,) = (await store.verify_chain(MASTER)).tenants
    assert chain.problem is not None
    assert (chain.problem.kind, chain.problem.chain_seq) == ("removed", 9)
    assert chain.problem.record_id == rows[8].id


async def test_many_tenants_are_checked_in_one_pass_with_the_same_verdicts(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Pages of 3 across tenants (a page holds the end of one chain and the start of the
    next), gaps among them: every chain intact; then a record removed in one tenant and one
    altered in another are named as a walk of that tenant alone names them, the rest intact."""
    monkeypatch.setattr(dispatches, "VERIFY_PAGE", 3)
    monkeypatch.setattr(dispatches, "_WALK_INLINE_MAX", 2)  # the threaded path too
    now = time.time()
    rows = {
        tenant: [record(tenant, now - 10 * DAY, hooks=n % 3) for n in range(size)]
        for tenant, size in (("a", 4), ("b", 7), ("c", 1), ("d", 5))
    }
    await store.write_dispatches([row for tenant in sorted(rows) for row in rows[tenant]])
    assert await prune_dispatches(store, 30, unmatched_days=5) > 0  # leaves gaps
    report = await store.verify_chain(MASTER)
    assert report.intact, report.to_dict()
    alone = [(await store.verify_chain(MASTER, name)).tenants[0] for name in sorted(rows)]
    assert [t.to_dict() for t in report.tenants] == [t.to_dict() for t in alone]
    async with store._write() as sql:  # type: ignore[attr-defined]
        assert (
            await sql.execute(
                "DELETE FROM dispatch_records WHERE tenant_id = 'b' AND chain_seq = 5"
            )
            == 1
        )
        assert (
            await sql.execute(
                "UPDATE dispatch_records SET decision = 'block' WHERE tenant_id = 'd' "
                "AND chain_seq = 2"
            )
            == 1
        )
    report = await store.verify_chain(MASTER)
    verdicts = {t.tenant_id: t for t in report.tenants}
    assert verdicts["a"].intact and verdicts["c"].intact
    for name, (kind, place) in {"b": ("removed", 6), "d": ("altered", 2)}.items():
        problem = verdicts[name].problem
        assert problem is not None and (problem.kind, problem.chain_seq) == (kind, place)
        assert (await store.verify_chain(MASTER, name)).tenants[0].to_dict() == verdicts[
            name
        ].to_dict()


async def test_a_deleted_head_row_is_a_break_not_an_empty_chain(store: Store) -> None:
    """Deleting a tenant's head row made its walk stop at place 0 and call it intact."""
    await store.write_dispatches([record("a", time.time()) for _ in range(3)])
    await store.write_dispatches([record("b", time.time()) for _ in range(2)])
    async with store._write() as sql:  # type: ignore[attr-defined]
        assert await sql.execute("DELETE FROM audit_chain_heads WHERE tenant_id = 'a'") == 1
    for tenant in (None, "a"):
        report = await store.verify_chain(MASTER, tenant)
        verdicts = {t.tenant_id: t for t in report.tenants}
        problem = verdicts["a"].problem
        assert not report.intact and problem is not None
        assert problem.kind == "removed" and "head row was deleted" in problem.why
    assert (await store.verify_chain(MASTER, "b")).intact
    assert (await store.verify_chain(MASTER, "nobody")).intact  # no chain at all
