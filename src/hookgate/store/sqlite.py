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
import contextlib
import functools
import itertools
import logging
import sqlite3
import time
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager, contextmanager
from datetime import date
from pathlib import Path
from typing import Any, Final, Literal, cast

import aiosqlite

from hookgate.log import log_event
from hookgate.store.base import ExecutionRow, StoreError
from hookgate.store.chain import ChainHead, TenantChain
from hookgate.store.location import SQLITE_FILE_NAME
from hookgate.store.migrations import load_migrations, split_statements
from hookgate.store.sql import SqlStore
from hookgate.store.sql.base import Row
from hookgate.store.sql.chain_verify import walk_tenants_here
from hookgate.store.sql.dispatches import Fetch, walk_tenant_here
from hookgate.store.sql.executions import EXECUTION_COLUMNS, execution_params

__all__ = ["SqliteStore"]

BUSY_TIMEOUT_MS: Final = 10_000
# Page cache of the execution-batch connection: keeps the history indexes in memory.
BATCH_CACHE_KIB: Final = 65_536
CHECKPOINT_INTERVAL_S: Final = 0.5
# Batches up to this size are written on the event loop's thread (about a millisecond at most).
INLINE_MAX_ROWS: Final = 200
_EXECUTION_WIDTH: Final = len(EXECUTION_COLUMNS.split(","))
# Rows per multi-row INSERT: as many as stay under SQLite's 32,766-variable limit.
# One statement is one sqlite3_step, so the batch thread releases the GIL once per statement
# instead of once per row (executemany), and a busy event loop cannot stall it row by row.
ROWS_PER_STATEMENT: Final = 32_766 // _EXECUTION_WIDTH
_ROW_VALUES: Final = "(" + ", ".join("?" * _EXECUTION_WIDTH) + ")"


@functools.lru_cache(maxsize=64)
def _insert_rows(count: int) -> str:
    return (
        f"INSERT INTO hook_executions ({EXECUTION_COLUMNS}) VALUES "
        + ", ".join([_ROW_VALUES] * count)
        + " ON CONFLICT (dedup_key) DO NOTHING"
    )


def _dict_row(cursor: sqlite3.Cursor, row: tuple[Any, ...]) -> dict[str, Any]:
    return {column[0]: value for column, value in zip(cursor.description, row, strict=True)}


async def _run(conn: aiosqlite.Connection, sql: str) -> None:
    # Drain and close the cursor: a statement left open would hold a lock.
    async with conn.execute(sql) as cursor:
        await cursor.fetchall()


class _Connection:
    """:class:`~hookgate.store.sql.base.Sql` over one aiosqlite connection."""

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
        # Execution batches: a plain sqlite3 connection owned by one worker thread, so a
        # whole batch (rows to parameters, BEGIN, insert, COMMIT) is one hop off the loop.
        self._batch_pool: ThreadPoolExecutor | None = None
        self._batch_conn: sqlite3.Connection | None = None
        self._inline_conn: sqlite3.Connection | None = None
        # Checkpoints (WAL into the database file, with an fsync) run on their own thread,
        # so no commit waits for one; see _checkpoints().
        self._checkpoint_pool: ThreadPoolExecutor | None = None
        self._checkpoint_conn: sqlite3.Connection | None = None
        self._checkpointer: asyncio.Task[None] | None = None
        self._wrote = False

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
            self._batch_pool = ThreadPoolExecutor(1, thread_name_prefix="hookgate-sqlite-audit")
            loop = asyncio.get_running_loop()
            self._batch_conn = await loop.run_in_executor(self._batch_pool, self._connect_batch)
            self._inline_conn = self._connect_batch(busy_timeout_ms=0)
            self._checkpoint_pool = ThreadPoolExecutor(1, thread_name_prefix="hookgate-sqlite-wal")
            self._checkpoint_conn = await loop.run_in_executor(
                self._checkpoint_pool, self._connect_checkpointer
            )
            self._checkpointer = loop.create_task(self._checkpoints(), name="hookgate-sqlite-wal")
        except sqlite3.Error as exc:
            await self.close()
            raise StoreError(f"cannot open SQLite database {self.path}: {exc}") from None

    async def close(self) -> None:
        for conn in (self._reader, self._writer):
            if conn is not None:
                await conn.close()
        self._reader = self._writer = None
        loop = asyncio.get_running_loop()
        if self._inline_conn is not None:
            self._inline_conn.close()
            self._inline_conn = None
        if self._batch_pool is not None:
            batch_conn, self._batch_conn = self._batch_conn, None
            if batch_conn is not None:
                await loop.run_in_executor(self._batch_pool, batch_conn.close)
            self._batch_pool.shutdown(wait=True)
            self._batch_pool = None
        if self._checkpointer is not None:
            self._checkpointer.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._checkpointer
            self._checkpointer = None
        if self._checkpoint_pool is not None:
            wal_conn, self._checkpoint_conn = self._checkpoint_conn, None
            if wal_conn is not None:
                await loop.run_in_executor(self._checkpoint_pool, self._final_checkpoint, wal_conn)
            self._checkpoint_pool.shutdown(wait=True)
            self._checkpoint_pool = None

    def _connect_batch(self, busy_timeout_ms: int = BUSY_TIMEOUT_MS) -> sqlite3.Connection:
        conn = sqlite3.connect(self.path, isolation_level=None)
        conn.execute(f"PRAGMA busy_timeout = {busy_timeout_ms}")
        conn.execute("PRAGMA foreign_keys = ON")
        conn.execute(f"PRAGMA synchronous = {self.synchronous.upper()}")
        conn.execute(f"PRAGMA cache_size = -{BATCH_CACHE_KIB}")
        # The checkpoint thread does this connection's checkpoints (an automatic one would
        # fsync inside a commit and stall the batch behind it).
        conn.execute("PRAGMA wal_autocheckpoint = 0")
        return conn

    def _connect_checkpointer(self) -> sqlite3.Connection:
        conn = sqlite3.connect(self.path, isolation_level=None)
        conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        return conn

    @staticmethod
    def _checkpoint(conn: sqlite3.Connection) -> None:
        # PASSIVE: copies what it can without waiting for (or blocking) readers and writers.
        conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()

    @staticmethod
    def _final_checkpoint(conn: sqlite3.Connection) -> None:
        try:
            conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
        finally:
            conn.close()

    async def _checkpoints(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            await asyncio.sleep(CHECKPOINT_INTERVAL_S)
            if not self._wrote or self._checkpoint_conn is None:
                continue
            self._wrote = False
            try:
                await loop.run_in_executor(
                    self._checkpoint_pool, self._checkpoint, self._checkpoint_conn
                )
            except sqlite3.Error as exc:  # busy or I/O: the next round tries again
                log_event("hookgate.store.checkpoint_failed", error=str(exc))

    @staticmethod
    def _insert_batch(conn: sqlite3.Connection | None, params: list[Any]) -> int:
        """Insert execution rows given as one flat parameter list (``_EXECUTION_WIDTH`` per
        row), in one transaction; the number of rows inserted (duplicates are skipped)."""
        if conn is None:
            raise StoreError("the store is not open")
        changed = 0
        conn.execute("BEGIN IMMEDIATE")
        try:
            # A row for a hook deleted meanwhile gets hook_id NULL, like the rows the delete
            # touched; the write lock held since BEGIN IMMEDIATE keeps the answer true.
            hook_ids = {hook for hook in params[1::_EXECUTION_WIDTH] if hook is not None}
            if hook_ids:
                marks = ", ".join("?" * len(hook_ids))
                known = {
                    found
                    for (found,) in conn.execute(
                        f"SELECT id FROM agent_hooks WHERE id IN ({marks})", list(hook_ids)
                    )
                }
                if known != hook_ids:
                    for index in range(1, len(params), _EXECUTION_WIDTH):
                        if params[index] is not None and params[index] not in known:
                            params[index] = None
            rows = len(params) // _EXECUTION_WIDTH
            for start in range(0, rows, ROWS_PER_STATEMENT):
                count = min(ROWS_PER_STATEMENT, rows - start)
                chunk = params[start * _EXECUTION_WIDTH : (start + count) * _EXECUTION_WIDTH]
                changed += conn.execute(_insert_rows(count), chunk).rowcount
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")
        return changed

    async def write_executions(self, rows: Sequence[ExecutionRow]) -> int:
        if not rows:
            return 0
        if self._batch_pool is None:
            raise StoreError("the store is not open")
        # Parameters are built here, on the loop's thread: the batch thread then runs only
        # C code (bind, step), so it never queues for the GIL behind a busy loop, and the
        # audit writer's next batch is converted while this one is in SQLite.
        params = list(itertools.chain.from_iterable(map(execution_params, rows)))
        loop = asyncio.get_running_loop()
        # The lock keeps this process's own writers from meeting in SQLite's busy handler
        # (which sleeps in steps of up to 100 ms); other processes still wait there.
        async with self._write_lock:
            self._wrote = True
            if len(rows) <= INLINE_MAX_ROWS and self._inline_conn is not None:
                # A small batch (sync mode under light load) is cheaper written right here
                # than handed to a thread that must win the GIL back from a busy loop. Its
                # connection never waits: if another process holds the lock, use the thread.
                try:
                    return self._insert_batch(self._inline_conn, params)
                except sqlite3.OperationalError as exc:
                    if "locked" not in str(exc) and "busy" not in str(exc):
                        raise
            return await loop.run_in_executor(
                self._batch_pool, self._insert_batch, self._batch_conn, params
            )

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

    async def _verify_tenant(self, sql: Any, head: ChainHead) -> TenantChain:
        # The walk reads plain tuples on a read-only connection of its own, in one thread:
        # the shared reader builds a dict per row, which costs more than the hashing.
        return await asyncio.to_thread(self._walk_tenant, head)

    def _walk_tenant(self, head: ChainHead) -> TenantChain:
        with self._chain_reader() as fetch:
            return walk_tenant_here(fetch, head)

    async def _verify_tenants(
        self, sql: Any, heads: Mapping[str, ChainHead]
    ) -> dict[str, TenantChain]:
        # The pass, like one tenant's walk, in one thread on its own read transaction.
        return await asyncio.to_thread(self._walk_tenants, heads)

    def _walk_tenants(self, heads: Mapping[str, ChainHead]) -> dict[str, TenantChain]:
        with self._chain_reader() as fetch:
            return walk_tenants_here(fetch, heads)

    @contextmanager
    def _chain_reader(self) -> Iterator[Fetch]:
        """A read-only connection of its own in one read transaction (every page sees the
        same state of the file), rows as plain tuples."""
        conn = sqlite3.connect(
            f"file:{self.path}?mode=ro", uri=True, timeout=BUSY_TIMEOUT_MS / 1000
        )
        try:
            conn.execute("BEGIN")

            def fetch(query: str, *args: Any) -> list[tuple[Any, ...]]:
                return conn.execute(query, args).fetchall()

            yield fetch
        finally:
            conn.close()

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
