"""A store location for CLI tests: a data directory, or a fresh PostgreSQL database."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator
from pathlib import Path

import asyncpg
from tests.store.conftest import PG_URL, need_postgres


async def _admin(statement: str) -> None:
    conn = await asyncpg.connect(PG_URL)
    try:
        await conn.execute(statement)
    finally:
        await conn.close()


def store_location(backend: str, tmp_path: Path) -> Iterator[list[str]]:
    """Command-line options that point at an empty store of ``backend`` (a generator for a
    fixture to ``yield from``: the PostgreSQL database is dropped afterwards)."""
    if backend == "sqlite":
        # The directory exists, as after `hookgate serve`, `db upgrade` or `--init`: store
        # commands refuse one that does not (a typo would make an empty store).
        (tmp_path / "data").mkdir()
        yield ["--data-dir", str(tmp_path / "data")]
        return
    need_postgres()
    name = f"hookgate_cli_{uuid.uuid4().hex[:12]}"
    asyncio.run(_admin(f'CREATE DATABASE "{name}"'))
    try:
        yield ["--database-url", f"{PG_URL.rsplit('/', 1)[0]}/{name}"]
    finally:
        asyncio.run(_admin(f'DROP DATABASE "{name}" WITH (FORCE)'))
