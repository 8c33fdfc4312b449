"""Resolution from memory, invalidated on version bumps, and the engine end to end."""

from __future__ import annotations

from typing import Any

import pytest
from tests.store.conftest import StoreFactory, hook
from tests.support.waiting import wait_until_async

from hookgate.engine import Engine
from hookgate.events import get_event
from hookgate.hook_event import HookEvent
from hookgate.matcher_index import MAX_SELECTIONS
from hookgate.registry import HookSource
from hookgate.safeguards import BreakerBoard, BreakerStatus
from hookgate.store import Caller, ExecutionQuery
from hookgate.store.audit_writer import AuditWriter
from hookgate.store.base import Store
from hookgate.store.breakers import BreakerRecorder
from hookgate.store.resolver import StoreHookSource

MASTER = Caller.master_scope()
PRE_TOOL_USE = get_event("pre_tool_use")
A = Caller.for_tenant("tenant-a")
B = Caller.for_tenant("tenant-b")


def block_rm(event: HookEvent) -> dict[str, Any] | None:
    cmd = str((event.payload.get("tool_input") or {}).get("cmd", ""))
    if "rm" in cmd:
        return {"decision": "block", "reason": "no rm"}
    return None


BLOCK_RM = {"callable": "tests.store.test_resolver:block_rm"}


def _names(hooks: Any) -> list[str]:
    return [h.definition.name for h in hooks]


async def test_global_tenant_and_agent_scope_resolution(store: Store) -> None:
    await store.create_hook(MASTER, hook(name="global", scope="global", priority=1))
    await store.create_hook(A, hook(name="a-tenant", priority=5))
    await store.create_hook(A, hook(name="a-agent", scope="agent", agent_ids=["ag-1"]))
    await store.create_hook(B, hook(name="b-tenant"))
    off = await store.create_hook(A, hook(name="a-off"))
    await store.set_enabled(A, off.id, False)
    await store.create_hook(A, hook(name="a-post", event="post_tool_use"))

    source = StoreHookSource(store, poll_interval_s=0)
    await source.start()
    try:
        assert isinstance(source, HookSource)
        assert _names(source.resolve("pre_tool_use", "tenant-a", "ag-1")) == [
            "a-tenant",
            "global",
            "a-agent",
        ]
        assert _names(source.resolve("pre_tool_use", "tenant-a", "ag-2")) == ["a-tenant", "global"]
        assert _names(source.resolve("pre_tool_use", "tenant-b", "ag-1")) == ["global", "b-tenant"]
        assert _names(source.resolve("pre_tool_use", "tenant-c", None)) == ["global"]
        assert source.has_event("post_tool_use") and not source.has_event("stop")
    finally:
        await source.close()


async def test_a_change_invalidates_the_snapshot(store: Store) -> None:
    created = await store.create_hook(A, hook(name="guard"))
    source = StoreHookSource(store, poll_interval_s=0)
    await source.start()
    try:
        first = source.resolve("pre_tool_use", "tenant-a", None)
        assert _names(first) == ["guard"]
        # served from memory: the same tuple object until something changes
        assert source.resolve("pre_tool_use", "tenant-a", None) is first
        reloads = source.reloads
        await store.update_hook(A, created.id, {"matcher": "^exec$"})
        await wait_until_async(lambda: source.reloads > reloads)
        (compiled,) = source.resolve("pre_tool_use", "tenant-a", None)
        assert compiled.definition.matcher == "^exec$" and compiled.definition.version == 2
        await store.set_enabled(A, created.id, False)
        await wait_until_async(lambda: not source.has_event("pre_tool_use"))
    finally:
        await source.close()


def _for(source: StoreHookSource, tenant: str, tool: str) -> tuple[Any, ...]:
    return source.select(PRE_TOOL_USE, {"tenant_id": tenant, "tool_name": tool})


async def test_the_selection_by_matcher_follows_the_store(store: Store) -> None:
    """The gateway's source selects by matcher per tenant and tool name (issue 26), and a
    change made through the store is in force for a tool name selected before it."""
    await store.create_hook(A, hook(name="shell", matcher="^(exec|shell)$"))
    await store.create_hook(B, hook(name="b-edits", matcher="Edit|Write"))
    source = StoreHookSource(store, poll_interval_s=0)
    await source.start()
    try:
        selected = _for(source, "tenant-a", "exec")
        assert _names(selected) == ["shell"] and selected[0].matcher is None
        assert _for(source, "tenant-a", "NotebookEdit") == ()
        assert _names(_for(source, "tenant-b", "NotebookEdit")) == ["b-edits"]
        reloads = source.reloads
        await store.create_hook(A, hook(name="edits", matcher="Edit|Write"))
        await wait_until_async(lambda: source.reloads > reloads)
        assert _names(_for(source, "tenant-a", "NotebookEdit")) == ["edits"]
    finally:
        await source.close()


async def test_made_up_agent_ids_are_kept_within_a_bound(store: Store) -> None:
    """Agents pick their ids: the gateway's source keeps a bounded number of resolved lists
    and none for a long id, and still answers each one."""
    await store.create_hook(A, hook(name="shell", matcher="^exec$"))
    source = StoreHookSource(store, poll_interval_s=0)
    await source.start()
    try:
        for index in range(MAX_SELECTIONS + 100):
            agent = f"agent-{index}" if index % 50 else "x" * 100_000 + str(index)
            selected = source.select(PRE_TOOL_USE, {"tenant_id": "tenant-a",
                                                    "agent_id": agent, "tool_name": "exec"})
            assert _names(selected) == ["shell"]
        assert len(source._cache) <= MAX_SELECTIONS
        assert all(len(key[2] or "") <= 256 for key in source._cache)
    finally:
        await source.close()


async def test_another_process_change_is_seen(make_store: StoreFactory) -> None:
    gateway = await make_store()
    admin = await make_store()  # e.g. ``hookgate hooks import`` in another process
    source = StoreHookSource(gateway, poll_interval_s=0.05)
    await source.start()
    try:
        assert not source.has_event("pre_tool_use")
        await admin.create_hook(A, hook(name="from-elsewhere"))
        await wait_until_async(lambda: source.has_event("pre_tool_use"))
        assert _names(source.resolve("pre_tool_use", "tenant-a", None)) == ["from-elsewhere"]
    finally:
        await source.close()


# PostgreSQL only (not a silent pass on SQLite, whose replicas rely on polling, covered above).
@pytest.mark.parametrize("backend", ["postgres"], indirect=True)
async def test_postgres_notify_reaches_other_replicas_without_polling(
    make_store: StoreFactory, backend: str
) -> None:
    replica = await make_store()
    admin = await make_store()
    source = StoreHookSource(replica, poll_interval_s=0)  # no polling at all
    await source.start()
    try:
        await admin.create_hook(A, hook(name="notified"))
        await wait_until_async(lambda: source.has_event("pre_tool_use"))
    finally:
        await source.close()


async def test_unchanged_hooks_are_not_recompiled(store: Store) -> None:
    await store.create_hook(A, hook(name="one"))
    two = await store.create_hook(A, hook(name="two"))
    source = StoreHookSource(store, poll_interval_s=0)
    await source.start()
    try:
        before = {h.definition.name: h for h in source.snapshot()}
        await store.update_hook(A, two.id, {"priority": 3})
        await source.refresh()
        after = {h.definition.name: h for h in source.snapshot()}
        assert after["one"] is before["one"]
        assert after["two"] is not before["two"]
    finally:
        await source.close()


async def test_engine_with_the_store_end_to_end(store: Store) -> None:
    guard = await store.create_hook(A, hook(name="no-rm", config=BLOCK_RM))
    source = StoreHookSource(store, poll_interval_s=0)
    await source.start()
    writer = AuditWriter(store, mode="sync")
    await writer.start()
    engine = Engine(source=source, audit=writer)
    try:
        blocked = await engine.fire(
            "pre_tool_use",
            tool_name="exec",
            tool_input={"cmd": "rm -rf /"},
            tenant_id="tenant-a",
            session_id="sess-1",
        )
        assert blocked.decision == "block"
        allowed = await engine.fire(
            "pre_tool_use", tool_name="exec", tool_input={"cmd": "ls"}, tenant_id="tenant-b"
        )
        assert allowed.decision == "allow"  # tenant A's hook does not apply to B
        # sync mode: the row is committed by the time fire() returned
        page = await store.query_executions(A, ExecutionQuery(session_id="sess-1"))
        (row,) = page.items
        assert (row.hook_id, row.decision, row.tenant_id) == (guard.id, "block", "tenant-a")
        assert (await store.query_executions(B, ExecutionQuery())).items == ()
    finally:
        await engine.aclose()
        await writer.close()
        await source.close()


async def test_breaker_changes_are_persisted(store: Store) -> None:
    created = await store.create_hook(A, hook(name="flaky"))
    recorder = BreakerRecorder(store)
    board = BreakerBoard(threshold=2, on_change=recorder)
    board.fault(created.id, "timeout")
    board.fault(created.id, "timeout")
    board.fault("not-a-stored-hook", "x")  # code-registered hooks are ignored quietly
    board.fault("not-a-stored-hook", "x")
    await recorder.drain()
    stored = await store.get_hook(A, created.id)
    assert (stored.breaker.state, stored.breaker.recent_faults, stored.breaker.last_fault) == (
        "open",
        2,
        "timeout",
    )
    recorder(created.id, BreakerStatus())
    await recorder.drain()
    assert (await store.get_hook(A, created.id)).breaker.state == "closed"
