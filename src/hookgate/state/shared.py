"""Hook state shared by gateway replicas: in the gateway's SQL store (table ``hook_state``,
migration 0005, SQLite and PostgreSQL) or in Redis when ``--redis-url`` is given.

Every row and every Redis key carries the event's tenant; the gateway sets that tenant from
the caller's API key, so one tenant's hooks never load another tenant's state.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from hookgate.state.model import ScopeKey, StateChange

if TYPE_CHECKING:
    from redis.asyncio import Redis

    from hookgate.store.sql import SqlStore

__all__ = ["RedisStateStore", "SqlStateStore"]

Clock = Callable[[], float]


def _dumps(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


class SqlStateStore:
    #: Seconds between sweeps of every expired row (the scopes a write touches are swept then).
    SWEEP_EVERY_S = 60.0

    def __init__(self, store: SqlStore, *, clock: Clock = time.time) -> None:
        self.store = store
        self.clock = clock
        self._swept_at = 0.0

    async def load(self, keys: Sequence[ScopeKey]) -> dict[ScopeKey, dict[str, Any]]:
        now = self.clock()
        out: dict[ScopeKey, dict[str, Any]] = {key: {} for key in keys}
        async with self.store._read() as sql:
            for key in keys:
                rows = await sql.fetch(
                    "SELECT key, value FROM hook_state WHERE tenant_id = ? AND namespace = ? "
                    "AND scope = ? AND scope_id = ? AND expires_at > ?",
                    key.tenant_id, key.namespace, key.scope, key.scope_id, now,
                )
                out[key] = {row["key"]: json.loads(row["value"]) for row in rows}
        return out

    async def apply(self, changes: Sequence[StateChange]) -> None:
        if not changes:
            return
        now = self.clock()
        async with self.store._write() as sql:
            for change in changes:
                key = change.key
                if change.value is None:
                    await sql.execute(
                        "DELETE FROM hook_state WHERE tenant_id = ? AND namespace = ? AND "
                        "scope = ? AND scope_id = ? AND key = ?",
                        key.tenant_id, key.namespace, key.scope, key.scope_id, change.name,
                    )
                else:
                    await sql.execute(
                        "INSERT INTO hook_state (tenant_id, namespace, scope, scope_id, key, "
                        "value, expires_at) VALUES (?, ?, ?, ?, ?, ?, ?) "
                        "ON CONFLICT (tenant_id, namespace, scope, scope_id, key) DO UPDATE "
                        "SET value = excluded.value, expires_at = excluded.expires_at",
                        key.tenant_id, key.namespace, key.scope, key.scope_id, change.name,
                        _dumps(change.value), now + change.ttl_s,
                    )
            # Expired rows of the scopes just touched go now, all others once a minute.
            for key in {change.key for change in changes}:
                await sql.execute(
                    "DELETE FROM hook_state WHERE tenant_id = ? AND namespace = ? AND "
                    "scope = ? AND scope_id = ? AND expires_at <= ?",
                    key.tenant_id, key.namespace, key.scope, key.scope_id, now,
                )
            if now - self._swept_at >= self.SWEEP_EVERY_S:
                self._swept_at = now
                await sql.execute("DELETE FROM hook_state WHERE expires_at <= ?", now)

    async def prune(self) -> int:
        """Delete every expired row; the number deleted."""
        async with self.store._write() as sql:
            return await sql.execute("DELETE FROM hook_state WHERE expires_at <= ?", self.clock())


class RedisStateStore:
    """One Redis hash per scope; each field holds ``{"v": value, "e": expires_at}``. The hash
    itself expires with its longest-lived entry."""

    def __init__(self, client: Redis, *, prefix: str = "hookgate:", clock: Clock = time.time
                 ) -> None:
        self.client = client
        self.prefix = prefix + "state:"
        self.clock = clock

    def _name(self, key: ScopeKey) -> str:
        # Tenant ids and namespaces are caller input: hash them instead of splicing them in.
        raw = _dumps([key.tenant_id, key.namespace, key.scope, key.scope_id]).encode()
        return self.prefix + hashlib.sha256(raw).hexdigest()

    async def load(self, keys: Sequence[ScopeKey]) -> dict[ScopeKey, dict[str, Any]]:
        now = self.clock()
        async with self.client.pipeline(transaction=False) as pipe:
            for key in keys:
                pipe.hgetall(self._name(key))
            results = await pipe.execute()
        out: dict[ScopeKey, dict[str, Any]] = {}
        for key, fields in zip(keys, results, strict=True):
            entries = {}
            for name, raw in fields.items():
                item = json.loads(raw)
                if item["e"] > now:
                    entries[name.decode() if isinstance(name, bytes) else name] = item["v"]
            out[key] = entries
        return out

    async def apply(self, changes: Sequence[StateChange]) -> None:
        if not changes:
            return
        now = self.clock()
        async with self.client.pipeline(transaction=True) as pipe:
            for change in changes:
                name = self._name(change.key)
                if change.value is None:
                    pipe.hdel(name, change.name)
                    continue
                pipe.hset(name, change.name, _dumps({"v": change.value,
                                                     "e": now + change.ttl_s}))
                milliseconds = max(1, int(change.ttl_s * 1000))
                pipe.pexpire(name, milliseconds, nx=True)
                pipe.pexpire(name, milliseconds, gt=True)
            await pipe.execute()
