"""The store records whether a master-scope caller wrote each hook version: the gateway's
host-code rule reads it at dispatch (see hookgate.host_code)."""

from __future__ import annotations

from tests.store.conftest import hook

from hookgate.builtins import builtin_definitions
from hookgate.store import Caller, HookFilter
from hookgate.store.base import Store

MASTER = Caller.master_scope()
A = Caller.for_tenant("tenant-a")


async def test_master_written_is_recorded_per_version(store: Store) -> None:
    by_master = await store.create_hook(MASTER, hook(name="m", tenant_id="tenant-a"))
    assert by_master.definition.written_by_master
    assert (await store.get_hook(A, by_master.id)).definition.written_by_master

    by_tenant = await store.create_hook(A, hook(name="t"))
    assert not by_tenant.definition.written_by_master
    assert not (await store.get_hook(A, by_tenant.id)).definition.written_by_master

    # A tenant's change makes the new version the tenant's; a master's change makes it master's.
    changed = await store.update_hook(A, by_master.id, {"priority": 3})
    assert not changed.definition.written_by_master
    assert not (await store.get_hook(MASTER, by_master.id)).definition.written_by_master
    approved = await store.update_hook(MASTER, by_tenant.id, {"priority": 5})
    assert approved.definition.written_by_master
    # A toggle changes no code: it keeps who wrote the version.
    await store.set_enabled(A, by_tenant.id, False)
    listed = {r.id: r for r in await store.list_hooks(MASTER, HookFilter(tenant_id="tenant-a"))}
    assert listed[by_tenant.id].definition.written_by_master
    assert not listed[by_master.id].definition.written_by_master


async def test_builtins_are_master_written(store: Store) -> None:
    await store.seed_builtins(builtin_definitions())
    records = await store.list_hooks(MASTER, HookFilter(source="builtin"))
    assert records and all(r.definition.written_by_master for r in records)
