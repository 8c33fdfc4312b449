"""Migrations: from empty, re-run, and two processes starting at once."""

from __future__ import annotations

import asyncio
import sys
import textwrap
import uuid
from pathlib import Path

import asyncpg
import pytest
from tests.store.conftest import PG_URL, StoreFactory, drop_schema, need_postgres

from hookgate.store import StoreError, open_store
from hookgate.store.base import Store
from hookgate.store.migrations import load_migrations, split_statements
from hookgate.store.postgres import PostgresStore
from hookgate.store.sqlite import SqliteStore

EXPECTED_TABLES = {
    "agent_hooks",
    "approvals",
    "audit_chain_gaps",
    "audit_chain_heads",
    "dispatch_records",
    "hook_state",
    "hook_breakers",
    "hook_executions",
    "hook_revisions",
    "rule_state",
    "tenant_hook_budget",
    "hookgate_api_keys",
    "hookgate_state",
    "schema_migrations",
}


async def _tables(store: Store) -> set[str]:
    async with store._read() as sql:  # type: ignore[attr-defined]
        if store.backend == "sqlite":
            rows = await sql.fetch("SELECT name FROM sqlite_master WHERE type = 'table'")
        else:
            rows = await sql.fetch(
                "SELECT table_name AS name FROM information_schema.tables "
                "WHERE table_schema = current_schema()"
            )
    return {row["name"] for row in rows} - {"sqlite_sequence"}


async def _applied(store: Store) -> list[int]:
    async with store._read() as sql:  # type: ignore[attr-defined]
        rows = await sql.fetch("SELECT version FROM schema_migrations ORDER BY version")
    return [row["version"] for row in rows]


async def test_migrates_from_empty_and_rerun_is_a_no_op(make_store: StoreFactory) -> None:
    store = await make_store()
    assert await _tables(store) == EXPECTED_TABLES
    versions = [m.version for m in load_migrations(store.backend)]  # type: ignore[arg-type]
    latest = versions[-1]
    assert await _applied(store) == versions
    assert await store.migrate() == latest
    again = await make_store()  # another process opening the same database
    assert await again.migrate() == latest
    assert await _applied(again) == versions


async def test_a_newer_database_is_refused(make_store: StoreFactory) -> None:
    store = await make_store()
    async with store._write() as sql:  # type: ignore[attr-defined]
        await sql.execute(
            "INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)",
            999,
            "from_the_future",
            0.0,
        )
    with pytest.raises(StoreError, match="newer than this hookgate knows"):
        await store.migrate()


async def test_concurrent_migrations_in_one_process(make_store: StoreFactory) -> None:
    # Several store objects (separate connections) migrating an empty database together.
    first = await make_store()
    stores = [first, *[await make_store() for _ in range(3)]]
    results = await asyncio.gather(*(s.migrate() for s in stores))
    assert len(set(results)) == 1
    assert await _applied(first) == [m.version for m in load_migrations(first.backend)]  # type: ignore[arg-type]


_MIGRATE_SCRIPT = textwrap.dedent(
    """
    import asyncio, sys
    from hookgate.store.postgres import PostgresStore
    from hookgate.store.sqlite import SqliteStore

    async def main() -> None:
        kind, target, schema = sys.argv[1:4]
        store = SqliteStore(target) if kind == "sqlite" else PostgresStore(target, schema=schema)
        await store.open()
        try:
            print(await store.migrate())
        finally:
            await store.close()

    asyncio.run(main())
    """
)


async def test_two_processes_starting_at_once(backend: str, tmp_path: Path) -> None:
    schema = f"hgtest_{uuid.uuid4().hex[:12]}"
    target = str(tmp_path / "data") if backend == "sqlite" else PG_URL
    procs = [
        await asyncio.create_subprocess_exec(
            sys.executable,
            "-c",
            _MIGRATE_SCRIPT,
            backend,
            target,
            schema,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        for _ in range(4)
    ]
    try:
        outputs = [await p.communicate() for p in procs]
        for proc, (out, err) in zip(procs, outputs, strict=True):
            assert proc.returncode == 0, err.decode()
            assert out.decode().strip() == str(load_migrations(backend)[-1].version)  # type: ignore[arg-type]
        store: Store = (
            SqliteStore(tmp_path / "data")
            if backend == "sqlite"
            else PostgresStore(PG_URL, schema=schema)
        )
        await store.open()
        try:
            # each migration recorded exactly once (a double apply would also have failed)
            assert await _applied(store) == [m.version for m in load_migrations(backend)]  # type: ignore[arg-type]
        finally:
            await store.close()
    finally:
        if backend == "postgres":
            await drop_schema(schema)


def test_statement_splitting_drops_comments_and_keeps_order() -> None:
    sql = "-- a comment; with a semicolon\nCREATE TABLE a (x int);\n\nCREATE INDEX i\n ON a (x);\n"
    assert split_statements(sql) == ["CREATE TABLE a (x int);", "CREATE INDEX i\n ON a (x);"]


async def test_open_store_picks_the_backend(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("HOOKGATE_DATABASE_URL", raising=False)
    monkeypatch.setenv("HOOKGATE_DATA_DIR", str(tmp_path / "env-dir"))
    store = await open_store()
    try:
        assert isinstance(store, SqliteStore)
        assert store.path == tmp_path / "env-dir" / "hookgate.db"
        assert store.path.exists()
    finally:
        await store.close()
    with pytest.raises(StoreError, match="not both"):
        await open_store(data_dir=tmp_path, database_url=PG_URL)
    with pytest.raises(StoreError, match="unsupported database URL scheme"):
        await open_store(database_url="mysql://localhost/x")


async def test_open_store_with_a_database_url_in_a_fresh_database() -> None:
    need_postgres()
    name = f"hookgate_test_{uuid.uuid4().hex[:12]}"
    admin = await asyncpg.connect(PG_URL)
    await admin.execute(f'CREATE DATABASE "{name}"')
    try:
        base = PG_URL.rsplit("/", 1)[0].replace("postgres@", "postgres:s3cret-pw@", 1)
        store = await open_store(database_url=f"{base}/{name}")
        try:
            assert isinstance(store, PostgresStore)
            assert "s3cret-pw" not in repr(store)
            assert await store.hooks_version() == 0
        finally:
            await store.close()
    finally:
        await admin.execute(f'DROP DATABASE "{name}" WITH (FORCE)')
        await admin.close()


async def test_unreachable_postgres_is_a_clear_error() -> None:
    with pytest.raises(StoreError, match="cannot connect to PostgreSQL"):
        await open_store(database_url="postgresql://postgres@127.0.0.1:1/none")
