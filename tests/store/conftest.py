"""Store fixtures: every test that takes ``store`` runs against SQLite and PostgreSQL.

PostgreSQL tests get a schema of their own in the server's ``test`` database (or
``HOOKGATE_TEST_DATABASE_URL``) and drop it afterwards. Without a server they skip locally
and fail under ``CI=true`` (``require_service``).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import os
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import asyncpg
import pytest
from tests.conftest import require_service

from hookgate.definition import HookDefinition
from hookgate.definition_model import validate_definition
from hookgate.store.base import Store
from hookgate.store.postgres import PostgresStore
from hookgate.store.sqlite import SqliteStore

PG_URL = os.environ.get("HOOKGATE_TEST_DATABASE_URL", "postgresql://postgres@127.0.0.1:5432/test")
BACKENDS = ("sqlite", "postgres")

_pg_state: dict[str, Any] = {}


def postgres_available() -> tuple[bool, str]:
    if "ok" not in _pg_state:

        async def probe() -> None:
            conn = await asyncpg.connect(PG_URL, timeout=3)
            await conn.close()

        try:
            # In a thread of its own: callers may already be inside a running loop.
            with concurrent.futures.ThreadPoolExecutor(1) as pool:
                pool.submit(asyncio.run, probe()).result()
            _pg_state.update(ok=True, why="")
        except Exception as exc:  # any failure to reach it is "not available"
            _pg_state.update(ok=False, why=f"{PG_URL.rsplit('@', 1)[-1]}: {exc}")
    return _pg_state["ok"], _pg_state["why"]


def need_postgres() -> None:
    ok, why = postgres_available()
    require_service("PostgreSQL", ok, why)


async def drop_schema(schema: str) -> None:
    conn = await asyncpg.connect(PG_URL)
    try:
        await conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
    finally:
        await conn.close()


StoreFactory = Callable[[], Awaitable[Store]]


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    if request.param == "postgres":
        need_postgres()
    return str(request.param)


@pytest.fixture
async def make_store(backend: str, tmp_path: Path) -> AsyncIterator[StoreFactory]:
    """Open another store object on the same database (a second process, as far as the
    store can tell). The first call creates the database."""
    schema = f"hgtest_{uuid.uuid4().hex[:12]}"
    opened: list[Store] = []

    async def factory() -> Store:
        store: Store
        if backend == "sqlite":
            store = SqliteStore(tmp_path / "data")
        else:
            store = PostgresStore(PG_URL, schema=schema, max_pool=8)
        await store.open()
        await store.migrate()
        opened.append(store)
        return store

    yield factory
    for store in opened:
        await store.close()
    if backend == "postgres":
        await drop_schema(schema)


@pytest.fixture
async def store(make_store: StoreFactory) -> Store:
    return await make_store()


def hook(**fields: Any) -> HookDefinition:
    """A valid callable hook; ``fields`` override the defaults."""
    raw: dict[str, Any] = {
        "event": "pre_tool_use",
        "handler_type": "callable",
        "scope": "tenant",
        "config": {"callable": "tests.store.conftest:allow"},
    }
    raw.update(fields)
    return validate_definition(raw)


def allow(_event: object) -> None:
    return None
