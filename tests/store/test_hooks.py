"""Hook definitions: CRUD with version bumps, concurrency, tenant isolation, builtins."""

from __future__ import annotations

import asyncio

import pytest
from tests.store.conftest import StoreFactory, hook

from hookgate.definition import GLOBAL_TENANT, DefinitionError
from hookgate.store import (
    BreakerSnapshot,
    Caller,
    Forbidden,
    HookFilter,
    NotFound,
    ReadOnlyHook,
    StoreError,
    VersionConflict,
)
from hookgate.store.base import Store

MASTER = Caller.master_scope()
A = Caller.for_tenant("tenant-a")
B = Caller.for_tenant("tenant-b")


async def test_create_get_list_update_delete(store: Store) -> None:
    created = await store.create_hook(A, hook(name="guard", matcher="^exec$", priority=3))
    assert created.version == 1
    assert created.definition.tenant_id == "tenant-a"
    assert created.definition.source == "user"
    fetched = await store.get_hook(A, created.id)
    assert fetched.definition == created.definition
    assert fetched.breaker.state == "closed"

    updated = await store.update_hook(A, created.id, {"matcher": "^write$", "priority": 7})
    assert updated.version == 2
    assert (updated.definition.matcher, updated.definition.priority) == ("^write$", 7)
    assert updated.definition.order == created.definition.order  # creation order is kept
    again = await store.get_hook(A, created.id)
    assert again.definition == updated.definition
    assert again.updated_at >= again.created_at

    listed = await store.list_hooks(A)
    assert [r.id for r in listed] == [created.id]
    await store.delete_hook(A, created.id)
    with pytest.raises(NotFound):
        await store.get_hook(A, created.id)
    assert await store.list_hooks(A) == []


async def test_updates_are_revalidated(store: Store) -> None:
    created = await store.create_hook(A, hook(name="guard"))
    with pytest.raises(DefinitionError, match="timeout_ms"):
        await store.update_hook(A, created.id, {"timeout_ms": 60_000})
    with pytest.raises(DefinitionError, match="matcher"):
        await store.update_hook(A, created.id, {"matcher": "(unclosed"})
    with pytest.raises(Forbidden, match="id: cannot be changed"):
        await store.update_hook(A, created.id, {"id": "another"})
    with pytest.raises(Forbidden, match="tenant_id"):
        await store.update_hook(A, created.id, {"tenant_id": "tenant-b"})
    # identity fields sent back unchanged (a client echoing the whole object) are fine
    echoed = {**created.to_dict(), "priority": 4}
    assert (await store.update_hook(A, created.id, echoed)).definition.priority == 4
    assert (await store.get_hook(A, created.id)).version == 2  # failed updates left no trace


async def test_expected_version_detects_lost_updates(store: Store) -> None:
    created = await store.create_hook(A, hook(name="guard"))
    await store.update_hook(A, created.id, {"priority": 1}, expected_version=1)
    with pytest.raises(VersionConflict, match="version 2, not 1"):
        await store.update_hook(A, created.id, {"priority": 2}, expected_version=1)


async def test_concurrent_updates_each_get_a_version(make_store: StoreFactory) -> None:
    first = await make_store()
    second = await make_store()  # a second process on the same database
    created = await first.create_hook(A, hook(name="guard"))
    results = await asyncio.gather(
        *(
            (first if n % 2 else second).update_hook(A, created.id, {"priority": n})
            for n in range(20)
        )
    )
    assert sorted(r.version for r in results) == list(range(2, 22))
    final = await first.get_hook(A, created.id)
    assert final.version == 21
    winner = next(r for r in results if r.version == 21)
    assert final.definition.priority == winner.definition.priority


async def test_names_are_unique_per_tenant(store: Store) -> None:
    await store.create_hook(A, hook(name="guard"))
    with pytest.raises(StoreError, match="already exists"):
        await store.create_hook(A, hook(name="guard"))
    await store.create_hook(B, hook(name="guard"))  # another tenant may reuse it
    other = await store.create_hook(A, hook(name="other"))
    with pytest.raises(StoreError, match="already exists"):
        await store.update_hook(A, other.id, {"name": "guard"})


async def test_tenant_isolation(store: Store) -> None:
    mine = await store.create_hook(A, hook(name="a-hook"))
    theirs = await store.create_hook(B, hook(name="b-hook"))
    shared = await store.create_hook(MASTER, hook(name="global", scope="global"))
    assert shared.definition.tenant_id == GLOBAL_TENANT

    assert {r.id for r in await store.list_hooks(A)} == {mine.id, shared.id}
    assert {r.id for r in await store.list_hooks(B)} == {theirs.id, shared.id}
    assert {r.id for r in await store.list_hooks(MASTER)} == {mine.id, theirs.id, shared.id}
    # a tenant filter only narrows
    assert await store.list_hooks(A, HookFilter(tenant_id="tenant-b")) == []
    assert [r.id for r in await store.list_hooks(MASTER, HookFilter(tenant_id="tenant-b"))] == [
        theirs.id
    ]

    # A can neither read nor change B's hook: it does not exist as far as A can tell
    for attempt in (
        store.get_hook(A, theirs.id),
        store.update_hook(A, theirs.id, {"priority": 9}),
        store.set_enabled(A, theirs.id, False),
        store.delete_hook(A, theirs.id),
        store.save_breaker_state(A, theirs.id, BreakerSnapshot(state="open")),
    ):
        with pytest.raises(NotFound):
            await attempt
    # A sees the global hook but cannot change it
    for attempt in (
        store.update_hook(A, shared.id, {"priority": 9}),
        store.set_enabled(A, shared.id, False),
        store.delete_hook(A, shared.id),
    ):
        with pytest.raises(Forbidden):
            await attempt
    # nor create global hooks or hooks of another tenant
    with pytest.raises(Forbidden):
        await store.create_hook(A, hook(name="sneaky", scope="global"))
    with pytest.raises(Forbidden):
        await store.create_hook(A, hook(name="sneaky", tenant_id="tenant-b"))
    untouched = await store.get_hook(MASTER, theirs.id)
    assert untouched.version == 1 and untouched.definition.enabled

    # master manages everything
    assert (await store.update_hook(MASTER, theirs.id, {"priority": 2})).version == 2
    await store.delete_hook(MASTER, theirs.id)
    with pytest.raises(StoreError, match="needs the tenant"):
        await store.create_hook(MASTER, hook(name="orphan"))


async def test_scope_cannot_jump_between_global_and_tenant(store: Store) -> None:
    created = await store.create_hook(A, hook(name="guard"))
    with pytest.raises(Forbidden, match="scope"):
        await store.update_hook(A, created.id, {"scope": "global"})
    agent = await store.update_hook(A, created.id, {"scope": "agent", "agent_ids": ["agent-7"]})
    assert agent.definition.agent_ids == ("agent-7",)


async def test_set_enabled_bumps_version_and_resets_breaker(store: Store) -> None:
    created = await store.create_hook(A, hook(name="guard"))
    await store.save_breaker_state(
        MASTER, created.id, BreakerSnapshot(state="open", recent_faults=5, last_fault="boom")
    )
    stored = await store.get_hook(A, created.id)
    assert (stored.breaker.state, stored.breaker.recent_faults) == ("open", 5)
    assert stored.version == 1  # breaker changes are not definition changes

    off = await store.set_enabled(A, created.id, False)
    assert off.version == 2 and not off.definition.enabled
    on = await store.set_enabled(A, created.id, True)
    assert on.version == 3 and on.definition.enabled
    fresh = await store.get_hook(A, created.id)
    assert (fresh.breaker.state, fresh.breaker.recent_faults, fresh.breaker.last_fault) == (
        "closed",
        0,
        None,
    )
    assert [r.id for r in await store.list_hooks(A, HookFilter(enabled=True))] == [created.id]


async def test_hooks_version_moves_on_every_change(store: Store) -> None:
    seen = [await store.hooks_version()]
    heard: list[int] = []
    store.add_change_listener(lambda change: heard.append(change.version))
    created = await store.create_hook(A, hook(name="guard"))
    seen.append(await store.hooks_version())
    await store.update_hook(A, created.id, {"priority": 1})
    seen.append(await store.hooks_version())
    await store.set_enabled(A, created.id, False)
    seen.append(await store.hooks_version())
    await store.delete_hook(A, created.id)
    seen.append(await store.hooks_version())
    assert seen == sorted(set(seen)) and len(seen) == 5
    assert heard == seen[1:]


async def test_list_filters_and_chain_order(store: Store) -> None:
    low = await store.create_hook(A, hook(name="low", priority=1))
    high = await store.create_hook(A, hook(name="high", priority=9))
    tie = await store.create_hook(A, hook(name="tie", priority=1))
    post = await store.create_hook(A, hook(name="post", event="post_tool_use"))
    agent = await store.create_hook(A, hook(name="agent", scope="agent", agent_ids=["ag-1"]))
    pre = await store.list_hooks(A, HookFilter(event="pre_tool_use"))
    assert [r.id for r in pre] == [high.id, low.id, tie.id, agent.id]
    assert [r.id for r in await store.list_hooks(A, HookFilter(event="post_tool_use"))] == [post.id]
    for_other_agent = await store.list_hooks(A, HookFilter(agent_id="ag-2"))
    assert agent.id not in {r.id for r in for_other_agent}
    assert agent.id in {r.id for r in await store.list_hooks(A, HookFilter(agent_id="ag-1"))}
    assert [r.id for r in await store.list_hooks(A, HookFilter(name="tie"))] == [tie.id]


async def test_builtin_seeding_rules(store: Store) -> None:
    v1 = hook(name="builtin.secrets", scope="global", priority=100, version=1)
    report = await store.seed_builtins([v1])
    assert report.created == ("builtin.secrets",)
    (row,) = await store.list_hooks(MASTER, HookFilter(source="builtin"))
    assert row.definition.source == "builtin" and row.definition.tenant_id == GLOBAL_TENANT
    # seeding the same version again changes nothing
    assert (await store.seed_builtins([v1])).unchanged == ("builtin.secrets",)

    # read-only except enabled: the operator switches it off
    with pytest.raises(ReadOnlyHook, match="only enabled"):
        await store.update_hook(MASTER, row.id, {"priority": 1})
    with pytest.raises(ReadOnlyHook):
        await store.delete_hook(MASTER, row.id)
    off = await store.update_hook(MASTER, row.id, {"enabled": False})
    assert not off.definition.enabled

    # a newer release updates the row but keeps the operator's toggle
    v2 = hook(name="builtin.secrets", scope="global", priority=50, version=2)
    assert (await store.seed_builtins([v2])).updated == ("builtin.secrets",)
    (after,) = await store.list_hooks(MASTER, HookFilter(source="builtin"))
    assert after.id == row.id
    assert after.definition.priority == 50
    assert after.version == off.version + 1  # every change bumps the row version
    assert not after.definition.enabled
    # an older release never downgrades
    assert (await store.seed_builtins([v1])).unchanged == ("builtin.secrets",)
    assert (await store.get_hook(MASTER, row.id)).definition.priority == 50

    with pytest.raises(Forbidden, match="builtin"):
        await store.create_hook(MASTER, hook(name="fake", scope="global", source="builtin"))
    with pytest.raises(StoreError, match="needs a name"):
        await store.seed_builtins([hook(scope="global")])


async def test_non_json_config_is_refused_clearly(store: Store) -> None:
    with pytest.raises(StoreError, match="config must be plain JSON"):
        await store.create_hook(A, hook(name="fn", config={"callable": test_tenant_isolation}))


async def test_definition_history_records_each_change_in_the_callers_tenant(store: Store) -> None:
    created = await store.create_hook(A, hook(name="guard", matcher="^exec$"), actor="key a1")
    await store.update_hook(A, created.id, {"matcher": "^shell$"}, actor="key a2")
    await store.set_enabled(A, created.id, False, actor="key a1")
    await store.delete_hook(A, created.id, actor="key a2")
    revisions = await store.hook_revisions(A, created.id, 50)
    assert [(r.version, r.action, r.changed_by) for r in revisions] == [
        (3, "deleted", "key a2"), (3, "disabled", "key a1"),
        (2, "updated", "key a2"), (1, "created", "key a1"),
    ]
    assert [r.definition["matcher"] for r in revisions] == ["^shell$"] * 3 + ["^exec$"]
    assert "id" not in revisions[0].definition
    # Another tenant reads nothing, even of a deleted hook; master scope reads it all.
    assert await store.hook_revisions(B, created.id, 50) == ()
    assert len(await store.hook_revisions(MASTER, created.id, 50)) == 4
    assert len(await store.hook_revisions(A, created.id, 2)) == 2
