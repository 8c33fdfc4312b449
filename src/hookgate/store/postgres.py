"""The PostgreSQL store (asyncpg), for gateways whose replicas share one set of hooks.

Writes run in transactions from a connection pool; a hook change locks its row
(``SELECT … FOR UPDATE``) so concurrent updates each get their own version. Execution
batches go in as one ``INSERT … SELECT … ON CONFLICT (dedup_key) DO NOTHING``: from
``unnest`` of per-column arrays for small batches (one round trip), from a temporary table
filled by binary ``COPY`` for large ones. Every hook change also sends
``NOTIFY hookgate_hooks`` naming the hook, every key revocation ``NOTIFY hookgate_keys`` and
every approval change ``NOTIFY hookgate_approvals``; each replica listens on one connection
that reconnects after a loss (:mod:`hookgate.store.listen`) and then resyncs.
"""

from __future__ import annotations

import functools
import logging
import re
import time
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from datetime import date
from typing import Any, Final

import asyncpg
import orjson

from hookgate.log import log_event
from hookgate.store.approvals import ApprovalRow
from hookgate.store.base import DispatchRow, ExecutionRow, HookChange, StoreError
from hookgate.store.listen import LISTEN_APPLICATION, Notifications
from hookgate.store.migrations import load_migrations
from hookgate.store.sql import SqlStore
from hookgate.store.sql.base import Row
from hookgate.store.sql.chain_verify import PG_HOOK_ROWS as PG_PASS_HOOK_ROWS
from hookgate.store.sql.dispatches import (
    DISPATCH_COLUMNS,
    HOOK_ROWS_SELECT,
    LINK_COLUMNS,
    PG_PAGE_HOOK_ROWS,
    dispatch_params,
)
from hookgate.store.sql.executions import EXECUTION_COLUMNS, execution_params

__all__ = ["APPROVALS_CHANNEL", "KEYS_CHANNEL", "NOTIFY_CHANNEL", "PostgresStore"]

NOTIFY_CHANNEL: Final = "hookgate_hooks"
#: Every approval change (created, decided, expired): waiters on every replica wake up.
APPROVALS_CHANNEL: Final = "hookgate_approvals"
#: Every key revocation: every replica forgets the key's cached check at once.
KEYS_CHANNEL: Final = "hookgate_keys"
#: First key of the per-tenant advisory lock taken while an approval is counted and created.
_APPROVAL_CAP_LOCK: Final = 0x61707072  # "appr"
# pg_advisory_xact_lock key for start-up work (migrations, builtin seeding, the first master
# key): any fixed number ("hookgate" in ASCII).
_MIGRATION_LOCK: Final = 0x686F6F6B67617465
# Execution batches up to this size go in as one INSERT … SELECT FROM unnest(arrays) (one
# round trip); larger ones by binary COPY (fewer bytes per row).
UNNEST_MAX_ROWS: Final = 500
_SCHEMA_NAME: Final = re.compile(r"^[a-z_][a-z0-9_]{0,62}$")

# One statement, one round trip, atomic on its own: the batch arrives as one array per
# column (binary-encoded by asyncpg) and is unnested into rows. A row whose hook was deleted
# meanwhile gets hook_id NULL through the join, like the rows the delete touched.
_ARRAY_TYPES: Final = (
    "text[]",  # id
    "text[]",  # hook_id
    "integer[]",  # hook_version
    "text[]",  # hook_name
    "text[]",  # handler_type
    "text[]",  # event
    "text[]",  # event_id
    "text[]",  # decision
    "float8[]",  # duration_ms
    "text[]",  # tenant_id
    "text[]",  # agent_id
    "text[]",  # session_id
    "text[]",  # input_hash
    "text[]",  # dedup_key
    "text[]",  # error
    "bytea[]",  # error_detail
    "jsonb[]",  # metadata
    "float8[]",  # created_at
    "text[]",  # tool_name
    "text[]",  # input_summary
    "text[]",  # reason
    "text[]",  # hook_ref
    "text[]",  # dispatch_id
)
_BATCH_NAMES: Final = tuple(c.strip() for c in EXECUTION_COLUMNS.split(","))
_UNNEST_INSERT: Final = (
    f"INSERT INTO hook_executions ({EXECUTION_COLUMNS}) "
    "SELECT b.id, h.id, b.hook_version, b.hook_name, b.handler_type, b.event, b.event_id, "
    "b.decision, b.duration_ms, b.tenant_id, b.agent_id, b.session_id, b.input_hash, "
    "b.dedup_key, b.error, b.error_detail, b.metadata, b.created_at, b.tool_name, "
    "b.input_summary, b.reason, b.hook_ref, b.dispatch_id "
    "FROM unnest("
    + ", ".join(f"${n}::{t}" for n, t in enumerate(_ARRAY_TYPES, start=1))
    + f") WITH ORDINALITY AS b({', '.join(_BATCH_NAMES)}, ord) "
    "LEFT JOIN agent_hooks h ON h.id = b.hook_id "
    "ORDER BY b.ord ON CONFLICT (dedup_key) DO NOTHING"
)


# Large batches: binary COPY into a per-connection staging table, then one INSERT.
_BATCH_TABLE: Final = (
    "CREATE TEMP TABLE IF NOT EXISTS hookgate_execution_batch ("
    "ord integer, id text, hook_id text, hook_version integer, hook_name text, "
    "handler_type text, event text, event_id text, decision text, "
    "duration_ms double precision, tenant_id text, agent_id text, session_id text, "
    "input_hash text, dedup_key text, error text, error_detail bytea, metadata jsonb, "
    "created_at double precision, tool_name text, input_summary text, reason text, "
    "hook_ref text, dispatch_id text) "
    "ON COMMIT DELETE ROWS"
)
_COPY_INSERT: Final = (
    f"INSERT INTO hook_executions ({EXECUTION_COLUMNS}) "
    "SELECT b.id, h.id, b.hook_version, b.hook_name, b.handler_type, b.event, b.event_id, "
    "b.decision, b.duration_ms, b.tenant_id, b.agent_id, b.session_id, b.input_hash, "
    "b.dedup_key, b.error, b.error_detail, b.metadata, b.created_at, b.tool_name, "
    "b.input_summary, b.reason, b.hook_ref, b.dispatch_id "
    "FROM hookgate_execution_batch b LEFT JOIN agent_hooks h ON h.id = b.hook_id "
    "ORDER BY b.ord ON CONFLICT (dedup_key) DO NOTHING"
)
_COPY_COLUMNS: Final = ("ord", *(c.strip() for c in EXECUTION_COLUMNS.split(",")))


# Dispatch records in one statement per batch: one array per column.
_DISPATCH_TYPES: Final = (
    "text[]",  # id
    "text[]",  # tenant_id
    "text[]",  # event
    "text[]",  # event_id
    "text[]",  # tool_name
    "text[]",  # agent_id
    "text[]",  # session_id
    "text[]",  # decision
    "text[]",  # reason
    "float8[]",  # duration_ms
    "int4[]",  # matched
    "json[]",  # hooks
    "text[]",  # approval_id
    "json[]",  # approval
    "text[]",  # refused
    "int8[]",  # input_size
    "text[]",  # input_hash
    "text[]",  # input_summary
    "text[]",  # trace_id
    "bytea[]",  # detail
    "float8[]",  # created_at
    "text[]",  # hook_rows
    "int8[]",  # chain_seq
    "text[]",  # prev_hash
    "text[]",  # record_hash
)
_DISPATCH_INSERT: Final = (
    f"INSERT INTO dispatch_records ({DISPATCH_COLUMNS}, {LINK_COLUMNS}) SELECT * FROM unnest("
    + ", ".join(f"${n}::{t}" for n, t in enumerate(_DISPATCH_TYPES, start=1))
    + ") ON CONFLICT (id) DO NOTHING"
)


async def _create_batch_table(conn: asyncpg.Connection) -> None:
    await conn.execute(_BATCH_TABLE)


@functools.lru_cache(maxsize=512)
def _numbered(sql: str) -> str:
    """``?`` placeholders to asyncpg's ``$1, $2, …`` (our SQL has no ``?`` in literals)."""
    count = 0

    def number(_: re.Match[str]) -> str:
        nonlocal count
        count += 1
        return f"${count}"

    return re.sub(r"\?", number, sql)


def _rowcount(status: str) -> int:
    last = status.rsplit(" ", 1)[-1]
    return int(last) if last.isdigit() else 0


class _Connection:
    """:class:`~hookgate.store.sql.base.Sql` over one asyncpg connection."""

    def __init__(self, conn: asyncpg.Connection) -> None:
        self.conn = conn

    async def fetch(self, sql: str, *args: Any) -> list[Row]:
        return list(await self.conn.fetch(_numbered(sql), *args))

    async def fetchrow(self, sql: str, *args: Any) -> Row | None:
        row: Row | None = await self.conn.fetchrow(_numbered(sql), *args)
        return row

    async def fetchval(self, sql: str, *args: Any) -> Any:
        return await self.conn.fetchval(_numbered(sql), *args)

    async def execute(self, sql: str, *args: Any) -> int:
        return _rowcount(await self.conn.execute(_numbered(sql), *args))

    async def executemany(self, sql: str, rows: Sequence[Sequence[Any]]) -> int:
        statement = _numbered(sql)
        changed = 0
        for row in rows:
            changed += _rowcount(await self.conn.execute(statement, *row))
        return changed


class PostgresStore(SqlStore):
    backend = "postgres"
    lock_clause = " FOR UPDATE"
    _page_hook_rows = PG_PAGE_HOOK_ROWS
    _pass_hook_rows = PG_PASS_HOOK_ROWS

    def __init__(
        self,
        database_url: str,
        *,
        schema: str | None = None,
        min_pool: int = 1,
        max_pool: int = 10,
        audit_synchronous_commit: bool = False,
        listen_check_s: float = 5.0,
    ) -> None:
        super().__init__()
        if schema is not None and not _SCHEMA_NAME.match(schema):
            raise StoreError(f"invalid schema name {schema!r}: use lowercase letters, digits, _")
        self.database_url = database_url
        self.schema = schema
        self.min_pool = min_pool
        self.max_pool = max_pool
        self.audit_synchronous_commit = audit_synchronous_commit
        self._pool: asyncpg.Pool | None = None
        # Execution batches use a pool of their own, which commits without waiting for the
        # WAL flush unless audit_synchronous_commit (see docs/storage.md, "Durability").
        self._audit_pool: asyncpg.Pool | None = None
        #: Seconds between checks that the LISTEN connection still answers.
        self.listen_check_s = listen_check_s
        self._notifications: Notifications | None = None

    def __repr__(self) -> str:
        # The URL may hold a password: show only host and database.
        return f"PostgresStore({self.location!r})"

    def _server_settings(self) -> dict[str, str]:
        settings = {"application_name": "hookgate"}
        if self.schema:
            settings["search_path"] = self.schema
        return settings

    async def open(self) -> None:
        if self._pool is not None:
            return
        try:
            if self.schema:
                conn = await asyncpg.connect(self.database_url)
                try:
                    # Two processes may race here; the loser's IF NOT EXISTS may still fail.
                    await conn.execute(f'CREATE SCHEMA IF NOT EXISTS "{self.schema}"')
                except asyncpg.UniqueViolationError:
                    pass
                finally:
                    await conn.close()
            self._pool = await asyncpg.create_pool(
                self.database_url,
                min_size=self.min_pool,
                max_size=self.max_pool,
                server_settings=self._server_settings(),
            )
            audit_settings = self._server_settings()
            if not self.audit_synchronous_commit:
                audit_settings["synchronous_commit"] = "off"
            self._audit_pool = await asyncpg.create_pool(
                self.database_url,
                min_size=1,
                max_size=2,
                server_settings=audit_settings,
                init=_create_batch_table,
            )
        except (OSError, asyncpg.PostgresError, asyncpg.InterfaceError) as exc:
            raise StoreError(f"cannot connect to PostgreSQL at {self!r}: {exc}") from None

    async def close(self) -> None:
        if self._notifications is not None:
            await self._notifications.close()
            self._notifications = None
        for pool in (self._audit_pool, self._pool):
            if pool is not None:
                await pool.close()
        self._pool = self._audit_pool = None

    def _require_pool(self) -> asyncpg.Pool:
        if self._pool is None:
            raise StoreError("the store is not open")
        return self._pool

    @asynccontextmanager
    async def _write(self) -> AsyncIterator[_Connection]:
        async with self._require_pool().acquire() as conn, conn.transaction():
            yield _Connection(conn)

    @asynccontextmanager
    async def _read(self) -> AsyncIterator[_Connection]:
        async with self._require_pool().acquire() as conn:
            yield _Connection(conn)

    def _is_unique_violation(self, exc: BaseException) -> bool:
        return isinstance(exc, asyncpg.UniqueViolationError)

    def _date_param(self, value: date) -> Any:
        return value

    async def _lock_bootstrap(self, sql: Any) -> None:
        await sql.fetchval("SELECT pg_advisory_xact_lock(?)", _MIGRATION_LOCK)

    async def _announce(self, sql: Any, change: HookChange) -> None:
        # Delivered when the transaction commits, to every listener on the database.
        payload = {"schema": self.schema or "", "version": change.version, "hook": change.hook_id}
        await sql.execute("SELECT pg_notify(?, ?)", NOTIFY_CHANNEL, orjson.dumps(payload).decode())

    async def _announce_key(self, sql: Any, key_id: str) -> None:
        payload = {"schema": self.schema or "", "key": key_id}
        await sql.execute("SELECT pg_notify(?, ?)", KEYS_CHANNEL, orjson.dumps(payload).decode())

    async def _announce_approval(self, sql: Any, row: ApprovalRow) -> None:
        payload = orjson.dumps(
            {
                "schema": self.schema or "",
                "id": row.id,
                "tenant": row.tenant_id,
                "status": row.status,
            }
        ).decode()
        await sql.execute("SELECT pg_notify(?, ?)", APPROVALS_CHANNEL, payload)

    @property
    def notifications(self) -> Notifications | None:
        """The LISTEN connection's keeper, once :meth:`watch_changes` started it."""
        return self._notifications

    @property
    def listening(self) -> bool:
        """The LISTEN connection is up (other replicas' changes are heard at once)."""
        return self._notifications is not None and self._notifications.up

    async def _lock_tenant_approvals(self, sql: Any, tenant_id: str) -> None:
        # Held until commit: replicas count a tenant's pending approvals one at a time, so
        # the cap holds across them.
        await sql.fetchval(
            "SELECT pg_advisory_xact_lock(?, hashtext(?))", _APPROVAL_CAP_LOCK, tenant_id
        )

    async def watch_approvals(self) -> None:
        """LISTEN for approval changes made by other processes (idempotent; the same
        connection as :meth:`watch_changes`)."""
        await self.watch_changes()

    async def watch_changes(self) -> None:
        """LISTEN for hook changes, key revocations and approval changes made by other
        processes, on one connection that reconnects after a loss (then the resync
        listeners are called). Idempotent."""
        if self._notifications is not None:
            return
        notifications = Notifications(
            self._listen_connection,
            {
                NOTIFY_CHANNEL: self._heard_hook,
                KEYS_CHANNEL: self._heard_key,
                APPROVALS_CHANNEL: self._heard_approval,
            },
            self._resynced,
            check_interval_s=self.listen_check_s,
        )
        try:
            await notifications.start()
        except (OSError, asyncpg.PostgresError, asyncpg.InterfaceError) as exc:
            raise StoreError(f"cannot LISTEN on PostgreSQL at {self!r}: {exc}") from None
        self._notifications = notifications

    async def _listen_connection(self) -> asyncpg.Connection:
        settings = {**self._server_settings(), "application_name": LISTEN_APPLICATION}
        return await asyncpg.connect(self.database_url, server_settings=settings, timeout=10)

    def _ours(self, payload: str) -> dict[str, Any] | None:
        """A notification's JSON payload, when it is about this store's schema."""
        try:
            data = orjson.loads(payload)
        except orjson.JSONDecodeError:
            return None
        if isinstance(data, dict) and data.get("schema") == (self.schema or ""):
            return data
        return None

    def _heard_hook(self, payload: str) -> None:
        data = self._ours(payload)
        if data is not None and isinstance(data.get("version"), int):
            hook = data.get("hook")
            self._changed(HookChange(data["version"], hook if isinstance(hook, str) else None))

    def _heard_key(self, payload: str) -> None:
        data = self._ours(payload)
        if data is not None and isinstance(data.get("key"), str):
            self._key_revoked(data["key"])

    def _heard_approval(self, payload: str) -> None:
        data = self._ours(payload)
        if data is not None:
            self._approval_signal(
                str(data.get("id")), str(data.get("tenant")), str(data.get("status"))
            )

    @property
    def location(self) -> str:
        where = self.database_url.rsplit("@", 1)[-1]  # never the password
        return f"{where} (schema {self.schema})" if self.schema else where

    async def schema_version(self) -> int:
        async with self._read() as sql:
            if await sql.fetchval("SELECT to_regclass('schema_migrations')") is None:
                return 0
            return int(
                await sql.fetchval("SELECT coalesce(max(version), 0) FROM schema_migrations")
            )

    async def migrate(self) -> int:
        migrations = load_migrations("postgres")
        known = {m.version for m in migrations}
        async with self._write() as sql:
            # Serializes concurrent starts: the second waits, then finds nothing to do.
            await self._lock_bootstrap(sql)
            await sql.execute(
                "CREATE TABLE IF NOT EXISTS schema_migrations (version integer PRIMARY KEY, "
                "name text NOT NULL, applied_at double precision NOT NULL)"
            )
            done = {
                row["version"] for row in await sql.fetch("SELECT version FROM schema_migrations")
            }
            if done - known:
                raise StoreError(
                    f"database has schema version {max(done)}, newer than this hookgate "
                    f"knows ({max(known)}): upgrade hookgate"
                )
            for migration in migrations:
                if migration.version in done:
                    continue
                await sql.conn.execute(migration.sql)  # a script: no parameters
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
                    backend="postgres",
                )
        return max(known)

    async def write_dispatches(self, rows: Sequence[DispatchRow]) -> int:
        if not rows:
            return 0
        if self._audit_pool is None:
            raise StoreError("the store is not open")
        params = [dispatch_params(row) for row in rows]
        # One transaction: the tenants' heads stay locked (FOR UPDATE, through the upsert)
        # from reading the last link to committing the records that extend it.
        async with self._audit_pool.acquire() as conn, conn.transaction():
            linked = await self._link(_Connection(conn), params)
            if not linked:
                return 0
            columns = list(zip(*linked, strict=True))
            return _rowcount(await conn.execute(_DISPATCH_INSERT, *columns))

    async def _hook_rows_of(self, sql: Any, ids: Sequence[str]) -> list[tuple[Any, ...]]:
        # One round trip for the whole batch, not one per 500 ids.
        rows = await sql.fetch(f"{HOOK_ROWS_SELECT} WHERE dispatch_id = ANY(?::text[])", list(ids))
        return [tuple(row.values()) for row in rows]

    async def _known_dispatch_ids(self, sql: Any, ids: Sequence[str]) -> set[str]:
        rows = await sql.fetch(
            "SELECT id FROM dispatch_records WHERE id = ANY(?::text[])", list(ids)
        )
        return {row["id"] for row in rows}

    async def write_executions(self, rows: Sequence[ExecutionRow]) -> int:
        if not rows:
            return 0
        if self._audit_pool is None:
            raise StoreError("the store is not open")
        async with self._audit_pool.acquire() as conn:
            if len(rows) <= UNNEST_MAX_ROWS:  # one round trip: what sync mode waits for
                columns = list(zip(*(execution_params(row) for row in rows), strict=True))
                return _rowcount(await conn.execute(_UNNEST_INSERT, *columns))
            records = [(index, *execution_params(row)) for index, row in enumerate(rows)]
            async with conn.transaction():
                await conn.copy_records_to_table(
                    "hookgate_execution_batch", records=records, columns=_COPY_COLUMNS
                )
                return _rowcount(await conn.execute(_COPY_INSERT))
