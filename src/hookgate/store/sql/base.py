"""The tiny SQL interface both backends provide, and what every table shares: JSON
columns, the hooks version and change notification."""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from datetime import date
from typing import Any, ClassVar, Protocol

import orjson

from hookgate.log import log_event
from hookgate.store.base import HookChange, StoreError

__all__ = ["Row", "Sql", "SqlBackend", "loads", "to_json"]

Row = Mapping[str, Any]


class Sql(Protocol):
    """One connection (or transaction) of a backend; ``?`` placeholders."""

    async def fetch(self, sql: str, *args: Any) -> list[Row]: ...

    async def fetchrow(self, sql: str, *args: Any) -> Row | None: ...

    async def fetchval(self, sql: str, *args: Any) -> Any: ...

    async def execute(self, sql: str, *args: Any) -> int:
        """Run a statement; the number of rows it changed."""

    async def executemany(self, sql: str, rows: Sequence[Sequence[Any]]) -> int: ...


def to_json(value: Any, what: str) -> str:
    try:
        return orjson.dumps(value).decode()
    except TypeError:
        pass  # orjson refuses some valid JSON (integers beyond 64 bits): ask json
    try:
        return json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    except (TypeError, ValueError) as exc:
        raise StoreError(f"{what} must be plain JSON to be stored: {exc}") from None


def loads(value: Any) -> Any:
    # SQLite gives JSON text; asyncpg gives jsonb as text too (no codec registered).
    return orjson.loads(value) if isinstance(value, str | bytes) else value



class SqlBackend(ABC):
    """What every table needs from a backend: connections, a lock clause, dialect details
    and the hooks version that tells resolvers to reload."""

    backend: str
    #: Appended to a SELECT that must lock its rows until the transaction ends.
    lock_clause: ClassVar[str] = ""

    def __init__(self) -> None:
        self._listeners: list[Callable[[HookChange], None]] = []
        self._key_listeners: list[Callable[[str], None]] = []
        self._resync_listeners: list[Callable[[], None]] = []

    # -- backend hooks ----------------------------------------------------------------------

    @abstractmethod
    def _write(self) -> AbstractAsyncContextManager[Sql]:
        """A write transaction, committed on clean exit."""

    @abstractmethod
    def _read(self) -> AbstractAsyncContextManager[Sql]:
        """A connection for reads of committed data."""

    @abstractmethod
    def _is_unique_violation(self, exc: BaseException) -> bool: ...

    @abstractmethod
    def _date_param(self, value: date) -> Any: ...

    async def _lock_bootstrap(self, sql: Sql) -> None:
        """Serialize start-up work (migrations, builtin seeding, the first master key) between
        processes for the rest of the transaction. SQLite's write transaction already does;
        PostgreSQL takes its advisory lock."""
        return None

    async def _announce(self, sql: Sql, change: HookChange) -> None:
        """Tell other processes that hooks changed (PostgreSQL NOTIFY); in the transaction."""
        return None

    async def _announce_key(self, sql: Sql, key_id: str) -> None:
        """Tell other processes that a key was revoked (PostgreSQL NOTIFY); in the
        transaction."""
        return None

    # -- change notification ----------------------------------------------------------------

    def add_change_listener(self, callback: Callable[[HookChange], None]) -> None:
        """Call ``callback(change)`` after every committed hook change made through this
        store object (other processes are seen by polling or NOTIFY, see resolver)."""
        self._listeners.append(callback)

    def remove_change_listener(self, callback: Callable[[HookChange], None]) -> None:
        if callback in self._listeners:
            self._listeners.remove(callback)

    def add_key_listener(self, callback: Callable[[str], None]) -> None:
        self._key_listeners.append(callback)

    def remove_key_listener(self, callback: Callable[[str], None]) -> None:
        if callback in self._key_listeners:
            self._key_listeners.remove(callback)

    def add_resync_listener(self, callback: Callable[[], None]) -> None:
        self._resync_listeners.append(callback)

    def remove_resync_listener(self, callback: Callable[[], None]) -> None:
        if callback in self._resync_listeners:
            self._resync_listeners.remove(callback)

    async def watch_changes(self) -> None:
        """Nothing to listen to: other processes' changes are seen by polling the version."""
        return None

    def _changed(self, change: HookChange) -> None:
        _call_each(self._listeners, change)

    def _key_revoked(self, key_id: str) -> None:
        _call_each(self._key_listeners, key_id)

    def _resynced(self) -> None:
        _call_each(self._resync_listeners)

    async def _bump(self, sql: Sql, hook_id: str | None) -> int:
        version = int(
            await sql.fetchval(
                "UPDATE hookgate_state SET hooks_version = hooks_version + 1 WHERE id = 1 "
                "RETURNING hooks_version"
            )
        )
        await self._announce(sql, HookChange(version, hook_id))
        return version

    async def hooks_version(self) -> int:
        async with self._read() as sql:
            return int(await sql.fetchval("SELECT hooks_version FROM hookgate_state"))


def _call_each(callbacks: list[Callable[..., None]], *args: Any) -> None:
    for callback in list(callbacks):
        try:
            callback(*args)
        except Exception as exc:  # a listener must not undo a committed change
            log_event("hookgate.store.listener_failed", error=str(exc))
