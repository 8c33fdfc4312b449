"""The SQLite store: one file in the data directory, WAL journal, no server.

Two connections: a writer, shared by every write through an asyncio lock (SQLite allows one
writer; ``BEGIN IMMEDIATE`` takes the file's write lock at once, so another process waits
``busy_timeout`` instead of failing mid-transaction), and a reader, which in WAL mode sees
the last committed state without waiting for the writer. ``synchronous=NORMAL``: a commit
survives the process being killed; only an operating-system crash or power loss can take
the last commits (set ``synchronous="full"`` to trade throughput for that).
"""

from __future__ import annotations

import asyncio
import logging
import sqlite3
import time
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from datetime import date
from pathlib import Path
from typing import Any, Final, Literal, cast

import aiosqlite

from hookgate.log import log_event
from hookgate.store.base import StoreError
from hookgate.store.location import SQLITE_FILE_NAME
from hookgate.store.migrations import load_migrations, split_statements
from hookgate.store.sql import Row, SqlStore

__all__ = ["SqliteStore"]

BUSY_TIMEOUT_MS: Final = 10_000


def _dict_row(cursor: sqlite3.Cursor, row: tuple[Any, ...]) -> dict[str, Any]:
    return {column[0]: value for column, value in zip(cursor.description, row, strict=True)}


async def _run(conn: aiosqlite.Connection, sql: str) -> None:
    # Drain and close the cursor: a statement left open would hold a lock.
    async with conn.execute(sql) as cursor:
        await cursor.fetchall()


class _Connection:
    """:class:`~hookgate.store.sql.Sql` over one aiosqlite connection."""

    def __init__(self, conn: aiosqlite.Connection) -> None:
        self.conn = conn

    async def fetch(self, sql: str, *args: Any) -> list[Row]:
        async with self.conn.execute(sql, args) as cursor:
            return cast(list[Row], list(await cursor.fetchall()))

    async def fetchrow(self, sql: str, *args: Any) -> Row | None:
        async with self.conn.execute(sql, args) as cursor:
            return cast(Row | None, await cursor.fetchone())

    async def fetchval(self, sql: str, *args: Any) -> Any:
        async with self.conn.execute(sql, args) as cursor:
            row = cast(Row | None, await cursor.fetchone())
        return None if row is None else next(iter(row.values()))

    async def execute(self, sql: str, *args: Any) -> int:
        async with self.conn.execute(sql, args) as cursor:
            return cursor.rowcount

    async def executemany(self, sql: str, rows: Sequence[Sequence[Any]]) -> int:
        async with self.conn.executemany(sql, rows) as cursor:
            return cursor.rowcount


class SqliteStore(SqlStore):
    backend = "sqlite"

    def __init__(
        self,
        data_dir: str | Path,
        *,
        synchronous: Literal["normal", "full"] = "normal",
    ) -> None:
        super().__init__()
        self.data_dir = Path(data_dir)
        self.path = self.data_dir / SQLITE_FILE_NAME
        self.synchronous = synchronous
        self._writer: aiosqlite.Connection | None = None
        self._reader: aiosqlite.Connection | None = None
        self._write_lock = asyncio.Lock()

    def __repr__(self) -> str:
        return f"SqliteStore({str(self.path)!r})"

    async def _connect(self) -> aiosqlite.Connection:
        # isolation_level=None: we issue BEGIN/COMMIT ourselves.
        conn = await aiosqlite.connect(self.path, isolation_level=None)
        conn.row_factory = _dict_row  # type: ignore[assignment]
        for pragma in (
            f"busy_timeout = {BUSY_TIMEOUT_MS}",
            "foreign_keys = ON",
            f"synchronous = {self.synchronous.upper()}",
        ):
            # Each cursor is drained and closed: an open statement would hold a lock.
            await _run(conn, f"PRAGMA {pragma}")
        return conn

    async def open(self) -> None:
        if self._writer is not None:
            return
        try:
            self.data_dir.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StoreError(f"cannot create data directory {self.data_dir}: {exc}") from None
        try:
            self._writer = await self._connect()
            # WAL is a property of the file, set once; busy_timeout covers a concurrent start.
            await _run(self._writer, "PRAGMA journal_mode = WAL")
            self._reader = await self._connect()
        except sqlite3.Error as exc:
            await self.close()
            raise StoreError(f"cannot open SQLite database {self.path}: {exc}") from None

    async def close(self) -> None:
        for conn in (self._reader, self._writer):
            if conn is not None:
                await conn.close()
        self._reader = self._writer = None

    @asynccontextmanager
    async def _write(self) -> AsyncIterator[_Connection]:
        if self._writer is None:
            raise StoreError("the store is not open")
        conn = _Connection(self._writer)
        async with self._write_lock:
            await _run(self._writer, "BEGIN IMMEDIATE")
            try:
                yield conn
            except BaseException:
                await _run(self._writer, "ROLLBACK")
                raise
            await _run(self._writer, "COMMIT")

    @asynccontextmanager
    async def _read(self) -> AsyncIterator[_Connection]:
        if self._reader is None:
            raise StoreError("the store is not open")
        yield _Connection(self._reader)

    def _is_unique_violation(self, exc: BaseException) -> bool:
        return isinstance(exc, sqlite3.IntegrityError) and "UNIQUE" in str(exc)

    def _date_param(self, value: date) -> Any:
        return value.isoformat()

    @property
    def location(self) -> str:
        return str(self.path)

    async def schema_version(self) -> int:
        async with self._read() as sql:
            exists = await sql.fetchrow(
                "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations'"
            )
            if exists is None:
                return 0
            return int(
                await sql.fetchval("SELECT coalesce(max(version), 0) FROM schema_migrations")
            )

    async def migrate(self) -> int:
        migrations = load_migrations("sqlite")
        async with self._write() as sql:
            await sql.execute(
                "CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, "
                "name TEXT NOT NULL, applied_at REAL NOT NULL)"
            )
            done = {
                row["version"] for row in await sql.fetch("SELECT version FROM schema_migrations")
            }
            known = {m.version for m in migrations}
            if done - known:
                raise StoreError(
                    f"database {self.path} has schema version {max(done)}, newer than this "
                    f"hookgate knows ({max(known)}): upgrade hookgate"
                )
            for migration in migrations:
                if migration.version in done:
                    continue
                for statement in split_statements(migration.sql):
                    await sql.execute(statement)
                await sql.execute(
                    "INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)",
                    migration.version,
                    migration.name,
                    time.time(),
                )
                log_event(
                    "hookgate.store.migrated",
                    level=logging.INFO,
                    version=migration.version,
                    backend="sqlite",
                )
        return max(known)
