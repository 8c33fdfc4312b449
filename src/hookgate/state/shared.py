"""Hook state shared by gateway replicas: in the gateway's SQL store (table ``hook_state``,
migration 0005, SQLite and PostgreSQL) or in Redis when ``--redis-url`` is given. Rule
counters and stamps (:mod:`hookgate.state.rules`) live beside them: table ``rule_state``
(migration 0015), or Redis keys of their own.

Every row and every Redis key carries the event's tenant; the gateway sets that tenant from
the caller's API key, so one tenant's hooks never load another tenant's state.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable, Sequence
from contextlib import AbstractAsyncContextManager
from typing import TYPE_CHECKING, Any, Protocol

from hookgate.state.model import ScopeKey, StateChange
from hookgate.state.rules import (
    Admission,
    RuleAnswer,
    RuleKey,
    RuleStep,
    Stamp,
    hashed_name,
)

if TYPE_CHECKING:
    from redis.asyncio import Redis

__all__ = ["RedisStateStore", "SqlStateStore"]

Clock = Callable[[], float]


class SqlConnection(Protocol):
    """One connection of the gateway's SQL store (``?`` placeholders)."""

    async def fetch(self, sql: str, *args: Any) -> list[Any]: ...

    async def fetchval(self, sql: str, *args: Any) -> Any: ...

    async def execute(self, sql: str, *args: Any) -> int: ...


class SqlStore(Protocol):
    """The gateway's SQL store as the state tables use it, named by its shape
    (:class:`hookgate.store.sql.SqlStore`: the store sits above hook state)."""

    def _read(self) -> AbstractAsyncContextManager[SqlConnection]: ...

    def _write(self) -> AbstractAsyncContextManager[SqlConnection]: ...


def _dumps(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


class SqlStateStore:
    #: Seconds between sweeps of every expired row (the scopes a write touches are swept then).
    SWEEP_EVERY_S = 60.0

    def __init__(self, store: SqlStore, *, clock: Clock = time.time) -> None:
        self.store = store
        self.clock = clock
        self._swept_at = 0.0
        self._rules_swept_at = 0.0

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

    # -- rule counters and stamps -----------------------------------------------------------

    async def admit(self, key: RuleKey, limit: int, ttl_s: float) -> Admission:
        now = self.clock()
        async with self.store._write() as sql:
            # One statement: the row is locked by the upsert (PostgreSQL) or the database by
            # the write transaction (SQLite), so two replicas never both pass the WHERE on
            # the last free slot. An expired row starts again at one.
            count = await sql.fetchval(
                "INSERT INTO rule_state (tenant_id, name, value, expires_at) "
                "VALUES (?, ?, 1, ?) ON CONFLICT (tenant_id, name) DO UPDATE SET "
                "value = CASE WHEN rule_state.expires_at <= ? THEN 1 "
                "ELSE rule_state.value + 1 END, "
                "expires_at = CASE WHEN rule_state.expires_at <= ? THEN excluded.expires_at "
                "ELSE rule_state.expires_at END "
                "WHERE rule_state.expires_at <= ? OR rule_state.value < ? RETURNING value",
                key.tenant_id, hashed_name(key), now + ttl_s, now, now, now, float(limit),
            )
            await self._sweep(sql, now)
        if count is None:
            return Admission(False, limit)
        return Admission(True, int(count))

    async def peek(self, key: RuleKey) -> int:
        async with self.store._read() as sql:
            value = await sql.fetchval(
                "SELECT value FROM rule_state WHERE tenant_id = ? AND name = ? AND expires_at > ?",
                key.tenant_id, hashed_name(key), self.clock(),
            )
        return int(value or 0)

    async def record(self, stamps: Sequence[Stamp]) -> None:
        if not stamps:
            return
        now = self.clock()
        async with self.store._write() as sql:
            for stamp in stamps:
                await sql.execute(
                    "INSERT INTO rule_state (tenant_id, name, value, expires_at) "
                    "VALUES (?, ?, ?, ?) ON CONFLICT (tenant_id, name) DO UPDATE SET "
                    "value = CASE WHEN rule_state.expires_at <= ? "
                    "OR excluded.value > rule_state.value THEN excluded.value "
                    "ELSE rule_state.value END, "
                    "expires_at = CASE WHEN excluded.expires_at > rule_state.expires_at "
                    "THEN excluded.expires_at ELSE rule_state.expires_at END",
                    stamp.key.tenant_id, hashed_name(stamp.key), stamp.at,
                    now + stamp.ttl_s, now,
                )
            await self._sweep(sql, now)

    async def recall(self, keys: Sequence[RuleKey]) -> dict[RuleKey, float]:
        if not keys:
            return {}
        now = self.clock()
        names = {(key.tenant_id, hashed_name(key)): key for key in keys}
        found: dict[RuleKey, float] = {}
        async with self.store._read() as sql:
            for tenant in {key.tenant_id for key in keys}:
                wanted = [name for (owner, name) in names if owner == tenant]
                rows = await sql.fetch(
                    "SELECT name, value FROM rule_state WHERE tenant_id = ? AND expires_at > ? "
                    f"AND name IN ({', '.join('?' for _ in wanted)})",
                    tenant, now, *wanted,
                )
                for row in rows:
                    found[names[(tenant, row["name"])]] = float(row["value"])
        return found

    async def _sweep(self, sql: Any, now: float) -> None:
        if now - self._rules_swept_at >= self.SWEEP_EVERY_S:
            self._rules_swept_at = now
            await sql.execute("DELETE FROM rule_state WHERE expires_at <= ?", now)


#: Adds one unless the counter holds the limit (ARGV[1]); a new counter expires in ARGV[2]
#: ms. Negative: refused, at that count. One script, so replicas never both take the last.
_ADMIT_LUA = """
local count = tonumber(redis.call('GET', KEYS[1]) or '0')
if count >= tonumber(ARGV[1]) then return -count end
count = redis.call('INCR', KEYS[1])
if count == 1 then redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return count
"""
#: Keeps the later of each stamp (ARGV: time, ttl ms, for each key in turn).
_RECORD_LUA = """
for i, key in ipairs(KEYS) do
  local at = ARGV[2 * i - 1]
  local held = redis.call('GET', key)
  if not held or tonumber(at) >= tonumber(held) then
    redis.call('SET', key, at, 'PX', ARGV[2 * i])
  end
end
return 0
"""

#: A rule's whole step for one event (hookgate.state.rules.RuleStep), atomic: read the
#: history keys and judge the checks; when they pass, admit on the limit; when that admits,
#: keep the stamps. KEYS: history keys, the limit's key (when the limit > 0), stamp keys.
#: ARGV[1], words apart (one argument: each costs the client an encoding): now, the number of
#: checks, (absent 1/0, keys, within or -1) per check, the limit (0: none), its ttl ms, then
#: (time, ttl ms) per stamp. Answers {status, count, history...}: status 1 admitted, 0 the
#: limit is full (at count), -1 a history check failed; history values in KEYS order.
_STEP_LUA = """
local arg = {}
for word in string.gmatch(ARGV[1], '%S+') do arg[#arg + 1] = word end
local now = tonumber(arg[1])
local a = 3
local k = 0
local values = {}
local passed = true
for _ = 1, tonumber(arg[2]) do
  local absent = arg[a] == '1'
  local n = tonumber(arg[a + 1])
  local within = tonumber(arg[a + 2])
  a = a + 3
  local before = nil
  for _ = 1, n do
    k = k + 1
    local raw = redis.call('GET', KEYS[k])
    values[k] = raw or false
    local at = raw and tonumber(raw)
    if at and within >= 0 and now - at > within then at = nil end
    if absent then
      if at then passed = false end
    else
      if not at or (before and at < before) then passed = false end
      before = at
    end
  end
end
if not passed then return {-1, 0, unpack(values)} end
local limit = tonumber(arg[a])
local count = 0
if limit > 0 then
  k = k + 1
  count = tonumber(redis.call('GET', KEYS[k]) or '0')
  if count >= limit then return {0, count, unpack(values)} end
  count = redis.call('INCR', KEYS[k])
  if count == 1 then redis.call('PEXPIRE', KEYS[k], arg[a + 1]) end
end
a = a + 2
for i = k + 1, #KEYS do
  local held = redis.call('GET', KEYS[i])
  if not held or tonumber(arg[a]) >= tonumber(held) then
    redis.call('SET', KEYS[i], arg[a], 'PX', arg[a + 1])
  end
  a = a + 2
end
return {1, count, unpack(values)}
"""
#: Redis names kept per rule key (a session's keys recur on each of its events); dropped
#: whole past this many.
_NAMES_KEPT = 4096


class RedisStateStore:
    """One Redis hash per scope; each field holds ``{"v": value, "e": expires_at}``. The hash
    itself expires with its longest-lived entry. Rule counters and stamps are plain keys
    that Redis expires itself."""

    def __init__(self, client: Redis, *, prefix: str = "hookgate:", clock: Clock = time.time
                 ) -> None:
        self.client = client
        self.prefix = prefix + "state:"
        self.rule_prefix = prefix + "rule:"
        self.clock = clock
        self._admit = client.register_script(_ADMIT_LUA)
        self._record = client.register_script(_RECORD_LUA)
        self._step = client.register_script(_STEP_LUA)
        self._names: dict[RuleKey, str] = {}

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

    # -- rule counters and stamps -----------------------------------------------------------

    def _rule_name(self, key: RuleKey) -> str:
        name = self._names.get(key)
        if name is None:
            if len(self._names) >= _NAMES_KEPT:
                self._names.clear()
            name = self._names[key] = self.rule_prefix + hashed_name(key)
        return name

    async def admit(self, key: RuleKey, limit: int, ttl_s: float) -> Admission:
        milliseconds = max(1, int(ttl_s * 1000))
        count = int(await self._admit(keys=[self._rule_name(key)], args=[limit, milliseconds]))
        return Admission(True, count) if count > 0 else Admission(False, -count)

    async def peek(self, key: RuleKey) -> int:
        value = await self.client.get(self._rule_name(key))
        return int(value or 0)

    async def record(self, stamps: Sequence[Stamp]) -> None:
        if not stamps:
            return
        args: list[str | int] = []
        for stamp in stamps:
            args += [repr(stamp.at), max(1, int(stamp.ttl_s * 1000))]
        await self._record(keys=[self._rule_name(stamp.key) for stamp in stamps], args=args)

    async def recall(self, keys: Sequence[RuleKey]) -> dict[RuleKey, float]:
        if not keys:
            return {}
        values = await self.client.mget([self._rule_name(key) for key in keys])
        return {key: float(value) for key, value in zip(keys, values, strict=True)
                if value is not None}

    async def rule_step(self, step: RuleStep) -> RuleAnswer:
        """The whole :class:`~hookgate.state.rules.RuleStep` in one script: one round trip."""
        name = self._rule_name
        keys = [name(key) for key in step.history]
        words = [repr(step.now), str(len(step.checks))]
        for check in step.checks:
            within = -1.0 if check.within_s is None else check.within_s
            words += ["1" if check.absent else "0", str(check.keys), repr(within)]
        limit = step.limit
        if limit is None:
            words += ["0", "0"]
        else:
            keys.append(name(limit[0]))
            words += [str(limit[1]), str(max(1, int(limit[2] * 1000)))]
        for stamp in step.stamps:
            keys.append(name(stamp.key))
            words += [repr(stamp.at), str(max(1, int(stamp.ttl_s * 1000)))]
        status, count, *values = await self._step(keys=keys, args=[" ".join(words)])
        found = {key: float(value) for key, value in zip(step.history, values, strict=True)
                 if value is not None}
        if status < 0:
            return RuleAnswer(False, None, found)
        admission = None if limit is None else Admission(status > 0, int(count))
        return RuleAnswer(True, admission, found)
