"""Who created and who last changed a hook (``created_by`` / ``updated_by``, schema 2)."""

from __future__ import annotations

import time
import uuid
from pathlib import Path

import pytest
from tests.store.conftest import PG_URL, StoreFactory, drop_schema, hook

from hookgate.store import BreakerSnapshot, Caller, HookFilter
from hookgate.store import postgres as postgres_module
from hookgate.store import sqlite as sqlite_module
from hookgate.store.base import SYSTEM_ACTOR, Store
from hookgate.store.migrations import load_migrations
from hookgate.store.postgres import PostgresStore
from hookgate.store.sqlite import SqliteStore

MASTER = Caller.master_scope()
A = Caller.for_tenant("tenant-a")


async def test_create_records_the_actor_as_creator_and_changer(store: Store) -> None:
    created = await store.create_hook(A, hook(name="guard"), actor="ops-admin (k_1234)")
    assert (created.created_by, created.updated_by) == ("ops-admin (k_1234)", "ops-admin (k_1234)")
    stored = await store.get_hook(A, created.id)
    assert (stored.created_by, stored.updated_by) == ("ops-admin (k_1234)", "ops-admin (k_1234)")
    assert stored.to_dict()["created_by"] == "ops-admin (k_1234)"
    assert stored.to_dict()["updated_by"] == "ops-admin (k_1234)"


async def test_update_and_toggle_record_the_changer_and_keep_the_creator(store: Store) -> None:
    created = await store.create_hook(A, hook(name="guard"), actor="ops-admin")
    updated = await store.update_hook(A, created.id, {"priority": 4}, actor="ops-editor")
    assert (updated.created_by, updated.updated_by) == ("ops-admin", "ops-editor")
    read = await store.get_hook(A, created.id)
    assert (read.created_by, read.updated_by) == ("ops-admin", "ops-editor")

    toggled = await store.set_enabled(A, created.id, False, actor="on-call")
    assert (toggled.created_by, toggled.updated_by) == ("ops-admin", "on-call")
    (listed,) = await store.list_hooks(A)
    assert (listed.created_by, listed.updated_by) == ("ops-admin", "on-call")
    assert listed.updated_at >= read.updated_at


async def test_breaker_changes_are_not_attributed(store: Store) -> None:
    # The breaker is the engine's bookkeeping, not a change someone made to the hook.
    created = await store.create_hook(A, hook(name="guard"), actor="ops-admin")
    await store.save_breaker_state(MASTER, created.id, BreakerSnapshot(state="open"))
    stored = await store.get_hook(A, created.id)
    assert stored.breaker.state == "open"
    assert (stored.created_by, stored.updated_by) == ("ops-admin", "ops-admin")


async def test_without_an_actor_the_changer_is_unknown(store: Store) -> None:
    created = await store.create_hook(A, hook(name="guard"))
    assert (created.created_by, created.updated_by) == (None, None)
    await store.update_hook(A, created.id, {"priority": 1}, actor="ops-admin")
    # a later change with no actor must not keep crediting the previous changer
    await store.update_hook(A, created.id, {"priority": 2})
    stored = await store.get_hook(A, created.id)
    assert (stored.created_by, stored.updated_by) == (None, None)


async def test_builtin_seeding_records_system(store: Store) -> None:
    await store.seed_builtins([hook(name="builtin.x", scope="global", version=1)])
    (row,) = await store.list_hooks(MASTER, HookFilter(source="builtin"))
    assert (row.created_by, row.updated_by) == (SYSTEM_ACTOR, SYSTEM_ACTOR) == ("system",) * 2

    await store.set_enabled(MASTER, row.id, False, actor="ops-admin")
    await store.seed_builtins([hook(name="builtin.x", scope="global", priority=5, version=2)])
    after = await store.get_hook(MASTER, row.id)
    assert after.definition.priority == 5 and not after.definition.enabled
    assert (after.created_by, after.updated_by) == ("system", "system")


async def test_rows_from_schema_1_read_as_unknown_after_the_upgrade(
    backend: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A database migrated to schema 1 with a hook in it upgrades to 2 and keeps the hook."""
    module = sqlite_module if backend == "sqlite" else postgres_module
    only_first = load_migrations(backend)[:1]  # type: ignore[arg-type]
    monkeypatch.setattr(module, "load_migrations", lambda _backend: only_first)
    schema = f"hgtest_{uuid.uuid4().hex[:12]}"
    store: Store = (
        SqliteStore(tmp_path / "data")
        if backend == "sqlite"
        else PostgresStore(PG_URL, schema=schema, max_pool=2)
    )
    try:
        await store.open()
        assert await store.migrate() == 1
        now = time.time()
        async with store._write() as sql:  # type: ignore[attr-defined]
            await sql.execute(
                "INSERT INTO agent_hooks (id, tenant_id, event, handler_type, scope, config, "
                "name, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                "old-hook",
                "tenant-a",
                "pre_tool_use",
                "callable",
                "tenant",
                '{"callable": "tests.store.conftest:allow"}',
                "legacy",
                now,
                now,
            )
        monkeypatch.undo()
        assert await store.migrate() == load_migrations(backend)[-1].version  # type: ignore[arg-type]
        old = await store.get_hook(A, "old-hook")
        assert old.definition.name == "legacy"
        assert (old.created_by, old.updated_by) == (None, None)
        changed = await store.update_hook(A, "old-hook", {"priority": 2}, actor="ops-admin")
        assert (changed.created_by, changed.updated_by) == (None, "ops-admin")
    finally:
        await store.close()
        if backend == "postgres":
            await drop_schema(schema)


async def test_actor_survives_a_second_store_object(make_store: StoreFactory) -> None:
    # Another process reading the same database sees the same attribution.
    first = await make_store()
    created = await first.create_hook(A, hook(name="guard"), actor="ops-admin")
    second = await make_store()
    seen = await second.get_hook(A, created.id)
    assert (seen.created_by, seen.updated_by) == ("ops-admin", "ops-admin")
