"""The rules of the store, written once over a tiny SQL interface both backends provide.

Backends supply connections (:class:`Sql`: ``fetch``/``fetchrow``/``fetchval``/``execute``/
``executemany`` with ``?`` placeholders), a serialized write transaction, a lock clause
(``FOR UPDATE`` on PostgreSQL; SQLite's write transaction already excludes other writers) and
the few dialect details; everything about scope, versions, builtins and budgets lives here.
"""

from __future__ import annotations

import base64
import binascii
import json
import time
import uuid
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import replace
from datetime import date
from typing import Any, ClassVar, Final, Literal, Protocol, cast

import orjson

from hookgate.handlers.prompt.budget import BudgetStatus, month_start, utc_now
from hookgate.chain import sort_key
from hookgate.definition import (
    DEFAULT_APPROVAL_TIMEOUT_MS,
    GLOBAL_TENANT,
    ApprovalPolicy,
    HookDefinition,
    validate_definition,
)
from hookgate.log import log_event
from hookgate.registry import applies_to
from hookgate.store.approvals import ApprovalStoreMixin
from hookgate.store.base import (
    API_KEY_ROLES,
    DEFAULT_BUDGET_TOKENS,
    SYSTEM_ACTOR,
    ApiKey,
    ApiKeyRole,
    BreakerSnapshot,
    BudgetExceeded,
    Caller,
    ExecutionPage,
    ExecutionQuery,
    ExecutionRow,
    Forbidden,
    HookFilter,
    HookRecord,
    NotFound,
    ReadOnlyHook,
    SeedReport,
    Store,
    StoreError,
    TenantBudget,
    VersionConflict,
    hash_api_key,
    new_api_key,
)

__all__ = ["Row", "Sql", "SqlStore"]

Row = Mapping[str, Any]
BudgetOp = Literal["check", "deduct", "set_total"]
MAX_PAGE: Final = 1000

_HOOK_COLUMNS: Final = (
    "id, tenant_id, agent_ids, event, handler_type, scope, config, name, matcher, if_expr, "
    "timeout_ms, on_timeout, on_error, priority, enabled, version, source, sort_order, "
    "created_at, updated_at, breaker_state, breaker_faults, breaker_last_fault, "
    "breaker_changed_at, created_by, updated_by, metadata, approval"
)
_HOOK_INSERT: Final = (
    "INSERT INTO agent_hooks (id, tenant_id, agent_ids, event, handler_type, scope, config, "
    "name, matcher, if_expr, timeout_ms, on_timeout, on_error, priority, enabled, version, "
    "source, sort_order, created_at, updated_at, created_by, updated_by, metadata, approval) "
    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)
# Everything a definition change rewrites (not id, tenant, source, order, created_at).
_HOOK_UPDATE: Final = (
    "UPDATE agent_hooks SET agent_ids = ?, event = ?, handler_type = ?, scope = ?, "
    "config = ?, name = ?, matcher = ?, if_expr = ?, timeout_ms = ?, on_timeout = ?, "
    "on_error = ?, priority = ?, enabled = ?, version = ?, updated_at = ?, updated_by = ?, "
    "approval = ? WHERE id = ?"
)
_RESET_BREAKER: Final = (
    "UPDATE agent_hooks SET breaker_state = 'closed', breaker_faults = 0, "
    "breaker_last_fault = NULL, breaker_changed_at = ? WHERE id = ?"
)
EXECUTION_COLUMNS: Final = (
    "id, hook_id, hook_version, hook_name, handler_type, event, event_id, decision, "
    "duration_ms, tenant_id, agent_id, session_id, input_hash, dedup_key, error, "
    "error_detail, metadata, created_at, tool_name, input_summary, reason, hook_ref"
)
# A row for a hook deleted meanwhile gets hook_id NULL, like the rows the delete touched.
EXECUTION_INSERT: Final = (
    f"INSERT INTO hook_executions ({EXECUTION_COLUMNS}) VALUES "
    "(?, (SELECT h.id FROM agent_hooks h WHERE h.id = ?), "
    "?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
    "ON CONFLICT (dedup_key) DO NOTHING"
)
#: The hook row's metadata key recording that a master-scope caller wrote this version.
MASTER_WRITTEN: Final = "written_by_master"
_KEY_COLUMNS: Final = "id, tenant_id, role, master, name, prefix, created_at, revoked_at"
# Fields a patch may repeat (as sent back by a client) but never change.
_IDENTITY_FIELDS: Final = ("id", "tenant_id", "source", "version", "order")
_BOOKKEEPING_FIELDS: Final = (
    "created_at",
    "updated_at",
    "created_by",
    "updated_by",
    "breaker",
)


class Sql(Protocol):
    """One connection (or transaction) of a backend; ``?`` placeholders."""

    async def fetch(self, sql: str, *args: Any) -> list[Row]: ...

    async def fetchrow(self, sql: str, *args: Any) -> Row | None: ...

    async def fetchval(self, sql: str, *args: Any) -> Any: ...

    async def execute(self, sql: str, *args: Any) -> int:
        """Run a statement; the number of rows it changed."""
        ...

    async def executemany(self, sql: str, rows: Sequence[Sequence[Any]]) -> int: ...


def _json(value: Any, what: str) -> str:
    try:
        return orjson.dumps(value).decode()
    except TypeError:
        pass  # orjson refuses some valid JSON (integers beyond 64 bits): ask json
    try:
        return json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    except (TypeError, ValueError) as exc:
        raise StoreError(f"{what} must be plain JSON to be stored: {exc}") from None


def _hook_params(d: HookDefinition, now: float, actor: str | None) -> tuple[Any, ...]:
    return (
        d.id,
        d.tenant_id,
        _json(list(d.agent_ids), "agent_ids"),
        d.event,
        d.handler_type,
        d.scope,
        _json(dict(d.config), "config"),
        d.name,
        d.matcher,
        d.if_expr,
        d.timeout_ms,
        d.on_timeout,
        d.on_error,
        d.priority,
        d.enabled,
        d.version,
        d.source,
        d.order,
        now,
        now,
        actor,
        actor,
        _json({MASTER_WRITTEN: d.written_by_master}, "metadata"),
        _approval_json(d),
    )


def _approval_json(d: HookDefinition) -> str | None:
    return None if d.approval is None else _json(d.approval.to_dict(), "approval")


def _approval_from(value: Any) -> ApprovalPolicy | None:
    if value is None:
        return None
    raw = _loads(value)
    return ApprovalPolicy(
        required=bool(raw.get("required", False)),
        timeout_ms=int(raw.get("timeout_ms", DEFAULT_APPROVAL_TIMEOUT_MS)),
        on_timeout="allow" if raw.get("on_timeout") == "allow" else "block",
    )


def _update_params(d: HookDefinition, now: float, actor: str | None) -> tuple[Any, ...]:
    return (
        _json(list(d.agent_ids), "agent_ids"),
        d.event,
        d.handler_type,
        d.scope,
        _json(dict(d.config), "config"),
        d.name,
        d.matcher,
        d.if_expr,
        d.timeout_ms,
        d.on_timeout,
        d.on_error,
        d.priority,
        d.enabled,
        d.version,
        now,
        actor,
        _approval_json(d),
        d.id,
    )


def _loads(value: Any) -> Any:
    # SQLite gives JSON text; asyncpg gives jsonb as text too (no codec registered).
    return orjson.loads(value) if isinstance(value, str | bytes) else value


def hook_from_row(row: Row) -> HookRecord:
    definition = HookDefinition(
        event=row["event"],
        handler_type=row["handler_type"],
        scope=row["scope"],
        config=_loads(row["config"]),
        name=row["name"],
        matcher=row["matcher"],
        if_expr=row["if_expr"],
        timeout_ms=row["timeout_ms"],
        on_timeout=row["on_timeout"],
        on_error=row["on_error"],
        priority=row["priority"],
        enabled=bool(row["enabled"]),
        agent_ids=tuple(_loads(row["agent_ids"])),
        tenant_id=row["tenant_id"],
        id=row["id"],
        version=row["version"],
        source=row["source"],
        order=row["sort_order"],
        written_by_master=bool(_loads(row["metadata"] or "{}").get(MASTER_WRITTEN)),
        approval=_approval_from(row["approval"]),
    )
    breaker = BreakerSnapshot(
        state=row["breaker_state"],
        recent_faults=row["breaker_faults"],
        last_fault=row["breaker_last_fault"],
        changed_at=row["breaker_changed_at"],
    )
    return HookRecord(
        definition,
        row["created_at"],
        row["updated_at"],
        breaker,
        created_by=row["created_by"],
        updated_by=row["updated_by"],
    )


def _metadata_json(metadata: Mapping[str, Any]) -> str:
    # str() for anything exotic a handler left in its details, and no NUL escapes (jsonb
    # refuses them): an execution row is never refused for its metadata.
    try:
        text = orjson.dumps(metadata, default=str, option=orjson.OPT_NON_STR_KEYS).decode()
    except TypeError:  # e.g. an integer beyond 64 bits, which orjson refuses
        text = json.dumps(metadata, separators=(",", ":"), ensure_ascii=False, default=str)
    return text.replace("\\u0000", "\\\\0") if "\\u0000" in text else text


def execution_params(row: ExecutionRow) -> tuple[Any, ...]:
    return (
        row.id,
        row.hook_id,
        row.hook_version,
        row.hook_name,
        row.handler_type,
        row.event,
        row.event_id,
        row.decision,
        row.duration_ms,
        row.tenant_id,
        row.agent_id,
        row.session_id,
        row.input_hash,
        row.dedup_key,
        row.error,
        row.error_detail,
        _metadata_json(row.metadata),
        row.created_at,
        row.tool_name,
        row.input_summary,
        row.reason,
        row.hook_ref or row.hook_id,
    )


def execution_from_row(row: Row) -> ExecutionRow:
    detail = row["error_detail"]
    return ExecutionRow(
        id=row["id"],
        hook_id=row["hook_id"],
        hook_version=row["hook_version"],
        hook_name=row["hook_name"],
        handler_type=row["handler_type"],
        event=row["event"],
        event_id=row["event_id"],
        decision=row["decision"],
        duration_ms=row["duration_ms"],
        tenant_id=row["tenant_id"],
        agent_id=row["agent_id"],
        session_id=row["session_id"],
        input_hash=row["input_hash"],
        dedup_key=row["dedup_key"],
        error=row["error"],
        error_detail=bytes(detail) if detail is not None else None,
        metadata=_loads(row["metadata"]),
        created_at=row["created_at"],
        tool_name=row["tool_name"],
        input_summary=row["input_summary"],
        reason=row["reason"],
        hook_ref=row["hook_ref"],
        seq=row["seq"],
    )


def _key_from_row(row: Row) -> ApiKey:
    return ApiKey(
        id=row["id"],
        tenant_id=row["tenant_id"],
        role=row["role"],
        master=bool(row["master"]),
        name=row["name"],
        prefix=row["prefix"],
        created_at=row["created_at"],
        revoked_at=row["revoked_at"],
    )


def encode_cursor(seq: int) -> str:
    return base64.urlsafe_b64encode(f"s{seq}".encode()).decode().rstrip("=")


def decode_cursor(cursor: str) -> int:
    try:
        text = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode()
        if not text.startswith("s"):
            raise ValueError(text)
        return int(text[1:])
    except (binascii.Error, UnicodeDecodeError, ValueError):
        raise StoreError(f"invalid history cursor {cursor!r}") from None


class SqlStore(ApprovalStoreMixin, ABC, Store):
    """The shared implementation of :class:`~hookgate.store.base.Store`."""

    backend: str
    #: Appended to a SELECT that must lock its rows until the transaction ends.
    lock_clause: ClassVar[str] = ""

    def __init__(self) -> None:
        self._listeners: list[Callable[[int], None]] = []
        self._approval_listeners = []

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

    async def _announce(self, sql: Sql, version: int) -> None:
        """Tell other processes that hooks changed (PostgreSQL NOTIFY); in the transaction."""
        return None

    async def __aenter__(self) -> SqlStore:
        await self.open()
        try:
            await self.migrate()
        except BaseException:
            await self.close()
            raise
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    # -- change notification ----------------------------------------------------------------

    def add_change_listener(self, callback: Callable[[int], None]) -> None:
        """Call ``callback(hooks_version)`` after every committed hook change made through
        this store object (other processes are seen by polling or NOTIFY, see resolver)."""
        self._listeners.append(callback)

    def remove_change_listener(self, callback: Callable[[int], None]) -> None:
        if callback in self._listeners:
            self._listeners.remove(callback)

    async def watch_changes(self) -> None:
        """Nothing to listen to: other processes' changes are seen by polling the version."""
        return None

    def _changed(self, version: int) -> None:
        for callback in list(self._listeners):
            try:
                callback(version)
            except Exception as exc:  # a listener must not undo a committed change
                log_event("hookgate.store.listener_failed", error=str(exc))

    async def _bump(self, sql: Sql) -> int:
        version = int(
            await sql.fetchval(
                "UPDATE hookgate_state SET hooks_version = hooks_version + 1 WHERE id = 1 "
                "RETURNING hooks_version"
            )
        )
        await self._announce(sql, version)
        return version

    async def hooks_version(self) -> int:
        async with self._read() as sql:
            return int(await sql.fetchval("SELECT hooks_version FROM hookgate_state"))

    # -- hooks ------------------------------------------------------------------------------

    def _owner(self, caller: Caller, definition: HookDefinition) -> str:
        """The tenant a new hook belongs to, or raise if the caller may not create it."""
        if definition.scope == "global":
            if not caller.master:
                raise Forbidden("only master scope can create global hooks")
            if definition.tenant_id not in (None, GLOBAL_TENANT):
                raise StoreError("a global hook has no tenant; leave tenant_id empty")
            return GLOBAL_TENANT
        tenant = definition.tenant_id or (None if caller.master else caller.tenant_id)
        if tenant is None or tenant == GLOBAL_TENANT:
            raise StoreError(
                f"a {definition.scope}-scope hook needs the tenant it belongs to (tenant_id)"
            )
        if not caller.can_change_tenant(tenant):
            raise Forbidden(f"cannot create hooks for tenant {tenant!r}")
        return tenant

    def _name_taken(self, definition: HookDefinition) -> StoreError:
        return StoreError(
            f"a hook named {definition.name!r} already exists for this tenant; "
            "names are unique within a tenant"
        )

    async def create_hook(
        self, caller: Caller, definition: HookDefinition, *, actor: str | None = None
    ) -> HookRecord:
        if definition.source == "builtin":
            raise Forbidden("builtin hooks are seeded by hookgate, not created")
        tenant = self._owner(caller, definition)
        now = time.time()
        try:
            async with self._write() as sql:
                version = await self._bump(sql)
                stored = replace(
                    definition,
                    tenant_id=tenant,
                    version=1,
                    order=version,
                    written_by_master=caller.master,
                )
                await sql.execute(_HOOK_INSERT, *_hook_params(stored, now, actor))
        except Exception as exc:
            if self._is_unique_violation(exc):
                if await self._hook_exists(definition.id):
                    raise StoreError(f"a hook with id {definition.id} already exists") from None
                raise self._name_taken(definition) from None
            raise
        self._changed(version)
        return HookRecord(stored, now, now, created_by=actor, updated_by=actor)

    async def _hook_exists(self, hook_id: str) -> bool:
        async with self._read() as sql:
            return await sql.fetchrow("SELECT 1 FROM agent_hooks WHERE id = ?", hook_id) is not None

    async def get_hook(self, caller: Caller, hook_id: str) -> HookRecord:
        async with self._read() as sql:
            row = await sql.fetchrow(
                f"SELECT {_HOOK_COLUMNS} FROM agent_hooks WHERE id = ?", hook_id
            )
        if row is None or not caller.can_see_tenant(row["tenant_id"]):
            raise NotFound(f"no hook {hook_id}")
        return hook_from_row(row)

    async def list_hooks(
        self, caller: Caller, filters: HookFilter | None = None
    ) -> list[HookRecord]:
        filters = filters or HookFilter()
        where: list[str] = []
        args: list[Any] = []
        if not caller.master:
            where.append("tenant_id IN (?, ?)")
            args += [caller.tenant_id, GLOBAL_TENANT]
        for column, value in (
            ("event", filters.event),
            ("handler_type", filters.handler_type),
            ("scope", filters.scope),
            ("enabled", filters.enabled),
            ("source", filters.source),
            ("name", filters.name),
            ("tenant_id", filters.tenant_id),
        ):
            if value is not None:
                where.append(f"{column} = ?")
                args.append(value)
        clause = f" WHERE {' AND '.join(where)}" if where else ""
        async with self._read() as sql:
            rows = await sql.fetch(f"SELECT {_HOOK_COLUMNS} FROM agent_hooks{clause}", *args)
        records = [hook_from_row(row) for row in rows]
        if filters.agent_id is not None:
            agent = filters.agent_id
            records = [
                r for r in records if applies_to(r.definition, r.definition.tenant_id, agent)
            ]
        records.sort(
            key=lambda r: (
                r.definition.event,
                sort_key(r.definition.priority, r.definition.order, r.id),
            )
        )
        return records

    async def _locked_hook(self, sql: Sql, caller: Caller, hook_id: str) -> HookRecord:
        return hook_from_row(await self._locked_row(sql, caller, hook_id))

    async def _locked_row(self, sql: Sql, caller: Caller, hook_id: str) -> Row:
        row = await sql.fetchrow(
            f"SELECT {_HOOK_COLUMNS} FROM agent_hooks WHERE id = ?{self.lock_clause}", hook_id
        )
        if row is None or not caller.can_see_tenant(row["tenant_id"]):
            raise NotFound(f"no hook {hook_id}")
        if not caller.can_change_tenant(row["tenant_id"]):
            raise Forbidden(f"hook {hook_id} is global: only master scope can change it")
        return row

    def _merge(
        self, current: HookDefinition, patch: Mapping[str, Any], edition: str
    ) -> HookDefinition:
        base = current.to_dict()
        base["order"] = current.order
        changes: dict[str, Any] = {}
        for key, value in patch.items():
            if key in _BOOKKEEPING_FIELDS:
                continue
            if key in _IDENTITY_FIELDS:
                if value != base.get(key):
                    raise Forbidden(f"{key}: cannot be changed by an update")
                continue
            if base.get(key, None) != value:
                changes[key] = value
        if current.source == "builtin" and set(changes) - {"enabled"}:
            names = ", ".join(sorted(set(changes) - {"enabled"}))
            raise ReadOnlyHook(
                f"hook {current.label} is builtin: only enabled can change ({names})"
            )
        merged = {**base, **changes}
        if "agent_id" in changes and "agent_ids" not in changes:
            merged.pop("agent_ids", None)
        scope = merged.get("scope")
        if (scope == "global") != (current.scope == "global"):
            raise Forbidden(
                f"scope: cannot change from {current.scope} to {scope}; create a new hook instead"
            )
        updated = validate_definition(merged, edition=edition)
        return replace(
            updated,
            id=current.id,
            tenant_id=current.tenant_id,
            source=current.source,
            order=current.order,
            version=current.version + 1,
        )

    async def update_hook(
        self,
        caller: Caller,
        hook_id: str,
        patch: Mapping[str, Any],
        *,
        expected_version: int | None = None,
        edition: str = "lite",
        actor: str | None = None,
    ) -> HookRecord:
        now = time.time()
        try:
            async with self._write() as sql:
                row = await self._locked_row(sql, caller, hook_id)
                current = hook_from_row(row)
                current_metadata = _loads(row["metadata"] or "{}")
                if expected_version is not None and current.version != expected_version:
                    raise VersionConflict(hook_id, expected_version, current.version)
                updated = replace(
                    self._merge(current.definition, patch, edition),
                    written_by_master=caller.master,
                )
                await sql.execute(_HOOK_UPDATE, *_update_params(updated, now, actor))
                await sql.execute(
                    "UPDATE agent_hooks SET metadata = ? WHERE id = ?",
                    _json({**current_metadata, MASTER_WRITTEN: caller.master}, "metadata"),
                    hook_id,
                )
                breaker = current.breaker
                if updated.enabled and not current.definition.enabled:
                    await sql.execute(_RESET_BREAKER, now, hook_id)
                    breaker = BreakerSnapshot(changed_at=now)
                version = await self._bump(sql)
        except Exception as exc:
            if self._is_unique_violation(exc):
                raise self._name_taken(current.definition) from None
            raise
        self._changed(version)
        return HookRecord(
            updated, current.created_at, now, breaker, current.created_by, updated_by=actor
        )

    async def delete_hook(self, caller: Caller, hook_id: str) -> None:
        async with self._write() as sql:
            current = await self._locked_hook(sql, caller, hook_id)
            if current.definition.source == "builtin":
                raise ReadOnlyHook(
                    f"hook {current.definition.label} is builtin: disable it instead"
                )
            await sql.execute("DELETE FROM agent_hooks WHERE id = ?", hook_id)
            version = await self._bump(sql)
        self._changed(version)

    async def set_enabled(
        self, caller: Caller, hook_id: str, enabled: bool, *, actor: str | None = None
    ) -> HookRecord:
        now = time.time()
        async with self._write() as sql:
            current = await self._locked_hook(sql, caller, hook_id)
            updated = current.definition.bumped(enabled=enabled)
            await sql.execute(
                "UPDATE agent_hooks SET enabled = ?, version = ?, updated_at = ?, updated_by = ? "
                "WHERE id = ?",
                enabled,
                updated.version,
                now,
                actor,
                hook_id,
            )
            await sql.execute(_RESET_BREAKER, now, hook_id)
            version = await self._bump(sql)
        self._changed(version)
        return HookRecord(
            updated,
            current.created_at,
            now,
            BreakerSnapshot(changed_at=now),
            current.created_by,
            updated_by=actor,
        )

    async def save_breaker_state(
        self, caller: Caller, hook_id: str, breaker: BreakerSnapshot
    ) -> None:
        where = "id = ?" if caller.master else "id = ? AND tenant_id = ?"
        args: list[Any] = [hook_id] if caller.master else [hook_id, caller.tenant_id]
        async with self._write() as sql:
            changed = await sql.execute(
                "UPDATE agent_hooks SET breaker_state = ?, breaker_faults = ?, "
                f"breaker_last_fault = ?, breaker_changed_at = ? WHERE {where}",
                breaker.state,
                breaker.recent_faults,
                breaker.last_fault[:256] if breaker.last_fault else None,
                breaker.changed_at if breaker.changed_at is not None else time.time(),
                *args,
            )
        if not changed:
            raise NotFound(f"no hook {hook_id}")

    async def seed_builtins(self, definitions: Sequence[HookDefinition]) -> SeedReport:
        created: list[str] = []
        updated: list[str] = []
        unchanged: list[str] = []
        now = time.time()
        version: int | None = None
        async with self._write() as sql:
            for definition in definitions:
                if not definition.name:
                    raise StoreError("a builtin hook needs a name (it identifies the row)")
                row = await sql.fetchrow(
                    f"SELECT {_HOOK_COLUMNS} FROM agent_hooks "
                    f"WHERE source = 'builtin' AND tenant_id = ? AND name = ?{self.lock_clause}",
                    GLOBAL_TENANT,
                    definition.name,
                )
                # The release version lives apart from the row version, which also counts
                # the operator's toggles.
                release = _json(
                    {"builtin_version": definition.version, MASTER_WRITTEN: True}, "metadata"
                )
                if row is None:
                    version = await self._bump(sql)
                    fresh = replace(
                        definition,
                        scope="global",
                        tenant_id=GLOBAL_TENANT,
                        source="builtin",
                        order=version,
                        version=1,
                    )
                    await sql.execute(_HOOK_INSERT, *_hook_params(fresh, now, SYSTEM_ACTOR))
                    await sql.execute(
                        "UPDATE agent_hooks SET metadata = ? WHERE id = ?", release, fresh.id
                    )
                    created.append(definition.name)
                    continue
                current = hook_from_row(row).definition
                shipped = int(_loads(row["metadata"]).get("builtin_version", 0))
                if definition.version <= shipped:
                    unchanged.append(definition.name)
                    continue
                # A newer release of the builtin: take its definition, keep the operator's
                # enabled toggle, the row identity and its place in the order.
                newer = replace(
                    definition,
                    id=current.id,
                    scope="global",
                    tenant_id=GLOBAL_TENANT,
                    source="builtin",
                    order=current.order,
                    enabled=current.enabled,
                    version=current.version + 1,
                )
                await sql.execute(_HOOK_UPDATE, *_update_params(newer, now, SYSTEM_ACTOR))
                await sql.execute(
                    "UPDATE agent_hooks SET metadata = ? WHERE id = ?", release, current.id
                )
                version = await self._bump(sql)
                updated.append(definition.name)
        if version is not None:
            self._changed(version)
        return SeedReport(tuple(created), tuple(updated), tuple(unchanged))

    # -- executions -------------------------------------------------------------------------

    async def write_executions(self, rows: Sequence[ExecutionRow]) -> int:
        if not rows:
            return 0
        async with self._write() as sql:
            return await sql.executemany(EXECUTION_INSERT, [execution_params(r) for r in rows])

    async def query_executions(self, caller: Caller, query: ExecutionQuery) -> ExecutionPage:
        where: list[str] = []
        args: list[Any] = []
        tenant = query.tenant_id if caller.master else caller.tenant_id
        if tenant is not None:
            where.append("tenant_id = ?")
            args.append(tenant)
        for column, value in (
            ("hook_ref", query.hook_id),  # the executed id: a deleted hook's rows too
            ("tool_name", query.tool_name),
            ("session_id", query.session_id),
            ("decision", query.decision),
            ("event", query.event),
            ("agent_id", query.agent_id),
        ):
            if value is not None:
                where.append(f"{column} = ?")
                args.append(value)
        if query.since is not None:
            where.append("created_at >= ?")
            args.append(float(query.since))
        if query.until is not None:
            where.append("created_at < ?")
            args.append(float(query.until))
        if query.cursor:
            where.append("seq < ?")
            args.append(decode_cursor(query.cursor))
        limit = max(1, min(int(query.limit), MAX_PAGE))
        clause = f" WHERE {' AND '.join(where)}" if where else ""
        async with self._read() as sql:
            rows = await sql.fetch(
                f"SELECT seq, {EXECUTION_COLUMNS} FROM hook_executions{clause} "
                f"ORDER BY seq DESC LIMIT {limit + 1}",
                *args,
            )
        items = tuple(execution_from_row(row) for row in rows[:limit])
        more = len(rows) > limit
        return ExecutionPage(items, encode_cursor(items[-1].seq) if more and items else None)

    async def get_execution(self, caller: Caller, execution_id: str) -> ExecutionRow:
        async with self._read() as sql:
            # Rows with an error detail are indexed by id; the rest need a scan (they hold
            # nothing the history pages do not already show).
            row = await sql.fetchrow(
                f"SELECT seq, {EXECUTION_COLUMNS} FROM hook_executions "
                "WHERE id = ? AND error_detail IS NOT NULL",
                execution_id,
            ) or await sql.fetchrow(
                f"SELECT seq, {EXECUTION_COLUMNS} FROM hook_executions WHERE id = ?",
                execution_id,
            )
        if row is None or not (caller.master or row["tenant_id"] == caller.tenant_id):
            raise NotFound(f"no execution {execution_id}")
        return execution_from_row(row)

    async def prune_executions(self, caller: Caller, older_than: float) -> int:
        cutoff = float(older_than)
        tenant = "" if caller.master else " AND tenant_id = ?"
        scope: list[Any] = [] if caller.master else [caller.tenant_id]
        async with self._write() as sql:
            # Rows arrive in time order, so the oldest row young enough to keep bounds the
            # range to delete along the primary key (a walk over the rows being deleted,
            # not the table). A row written out of order is kept until the bound passes it.
            bound = await sql.fetchval(
                "SELECT seq FROM hook_executions WHERE created_at >= ? ORDER BY seq LIMIT 1",
                cutoff,
            )
            if bound is None:
                return await sql.execute(
                    f"DELETE FROM hook_executions WHERE created_at < ?{tenant}", cutoff, *scope
                )
            return await sql.execute(
                f"DELETE FROM hook_executions WHERE seq < ? AND created_at < ?{tenant}",
                int(bound),
                cutoff,
                *scope,
            )

    # -- budgets ----------------------------------------------------------------------------

    async def budget_apply(
        self,
        tenant_id: str,
        op: BudgetOp,
        amount: int = 0,
        *,
        today: date | None = None,
        default_total: int = DEFAULT_BUDGET_TOKENS,
    ) -> BudgetStatus:
        """Check, deduct or set a tenant's budget in one transaction, rolling over first.

        ``today`` is any day of the current month (UTC); the SQL budget store passes its
        clock's. Deductions stop at zero and report what was actually taken.
        """
        if amount < 0:
            what = "deduct" if op == "deduct" else "set a budget total of"
            raise ValueError(f"cannot {what} a negative number of tokens ({amount})")
        month = month_start(utc_now()) if today is None else date(today.year, today.month, 1)
        now = time.time()
        async with self._write() as sql:
            await sql.execute(
                "INSERT INTO tenant_hook_budget (tenant_id, month_start, budget_total, "
                "remaining, updated_at) VALUES (?, ?, ?, ?, ?) "
                "ON CONFLICT (tenant_id) DO NOTHING",
                tenant_id,
                self._date_param(month),
                default_total,
                default_total,
                now,
            )
            row = await sql.fetchrow(
                "SELECT month_start, budget_total, remaining FROM tenant_hook_budget "
                f"WHERE tenant_id = ?{self.lock_clause}",
                tenant_id,
            )
            assert row is not None  # inserted above when missing
            stored_month = _as_date(row["month_start"])
            total = int(row["budget_total"])
            remaining = int(row["remaining"])
            if stored_month < month:  # rollover keeps a custom total
                stored_month, remaining = month, total
            taken = 0
            if op == "deduct":
                taken = min(amount, max(remaining, 0))
                remaining -= taken
            elif op == "set_total":
                remaining = max(0, remaining + amount - total)
                total = amount
            await sql.execute(
                "UPDATE tenant_hook_budget SET month_start = ?, budget_total = ?, "
                "remaining = ?, updated_at = ? WHERE tenant_id = ?",
                self._date_param(stored_month),
                total,
                remaining,
                now,
                tenant_id,
            )
        return BudgetStatus(tenant_id, stored_month, total, remaining, taken)

    def _budget_scope(self, caller: Caller, tenant_id: str) -> None:
        if not (caller.master or tenant_id == caller.tenant_id):
            raise NotFound(f"no budget for tenant {tenant_id!r}")

    async def get_budget(self, caller: Caller, tenant_id: str) -> TenantBudget:
        self._budget_scope(caller, tenant_id)
        return _tenant_budget(await self.budget_apply(tenant_id, "check"))

    async def deduct_budget(
        self, caller: Caller, tenant_id: str, tokens: int, *, allow_negative: bool = True
    ) -> TenantBudget:
        self._budget_scope(caller, tenant_id)
        if not allow_negative:
            status = await self.budget_apply(tenant_id, "check")
            if tokens > status.remaining:
                raise BudgetExceeded(
                    f"tenant {tenant_id!r} has {status.remaining} tokens left this month, "
                    f"not {tokens}"
                )
        return _tenant_budget(await self.budget_apply(tenant_id, "deduct", tokens))

    async def set_budget_total(self, caller: Caller, tenant_id: str, total: int) -> TenantBudget:
        if not caller.master:
            raise Forbidden("only master scope can set a tenant's budget")
        return _tenant_budget(await self.budget_apply(tenant_id, "set_total", total))

    # -- API keys ---------------------------------------------------------------------------

    async def create_api_key(
        self,
        caller: Caller,
        *,
        tenant_id: str,
        role: ApiKeyRole,
        master: bool = False,
        name: str = "",
        token: str | None = None,
    ) -> tuple[ApiKey, str]:
        if role not in API_KEY_ROLES:
            raise StoreError(f"role must be one of {', '.join(API_KEY_ROLES)}, got {role!r}")
        if not caller.master and (master or tenant_id != caller.tenant_id):
            raise Forbidden("only master scope can create master keys or keys for other tenants")
        if not tenant_id:
            raise StoreError("an API key needs a tenant id")
        token = token or new_api_key()
        key = ApiKey(
            id=str(uuid.uuid4()),
            tenant_id=tenant_id,
            role=role,
            master=master,
            name=name,
            prefix=token[:10],
            created_at=time.time(),
        )
        try:
            async with self._write() as sql:
                await sql.execute(
                    "INSERT INTO hookgate_api_keys (id, key_hash, prefix, tenant_id, role, "
                    "master, name, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                    key.id,
                    hash_api_key(token),
                    key.prefix,
                    key.tenant_id,
                    key.role,
                    key.master,
                    key.name,
                    key.created_at,
                )
        except Exception as exc:
            if self._is_unique_violation(exc):
                raise StoreError("that API key already exists") from None
            raise
        return key, token

    async def list_api_keys(self, caller: Caller) -> list[ApiKey]:
        async with self._read() as sql:
            if caller.master:
                rows = await sql.fetch(
                    f"SELECT {_KEY_COLUMNS} FROM hookgate_api_keys ORDER BY created_at, id"
                )
            else:
                rows = await sql.fetch(
                    f"SELECT {_KEY_COLUMNS} FROM hookgate_api_keys WHERE tenant_id = ? "
                    "ORDER BY created_at, id",
                    caller.tenant_id,
                )
        return [_key_from_row(row) for row in rows]

    async def revoke_api_key(self, caller: Caller, key_id: str) -> ApiKey:
        async with self._write() as sql:
            row = await sql.fetchrow(
                f"SELECT {_KEY_COLUMNS} FROM hookgate_api_keys WHERE id = ?{self.lock_clause}",
                key_id,
            )
            if row is None or not (caller.master or row["tenant_id"] == caller.tenant_id):
                raise NotFound(f"no API key {key_id}")
            key = _key_from_row(row)
            if not caller.master and key.master:
                raise Forbidden("only master scope can revoke a master key")
            if key.revoked_at is None:
                key = replace(key, revoked_at=time.time())
                await sql.execute(
                    "UPDATE hookgate_api_keys SET revoked_at = ? WHERE id = ?",
                    key.revoked_at,
                    key_id,
                )
        return key

    async def lookup_api_key(self, key_hash: str) -> ApiKey | None:
        async with self._read() as sql:
            row = await sql.fetchrow(
                f"SELECT {_KEY_COLUMNS} FROM hookgate_api_keys "
                "WHERE key_hash = ? AND revoked_at IS NULL",
                key_hash,
            )
        return _key_from_row(row) if row is not None else None


def _as_date(value: Any) -> date:
    if isinstance(value, date):
        return value
    return date.fromisoformat(cast(str, value))


def _tenant_budget(status: BudgetStatus) -> TenantBudget:
    return TenantBudget(
        tenant_id=status.tenant_id,
        month_start=status.month_start.isoformat(),
        budget_total=status.budget_total,
        remaining=status.remaining,
        updated_at=time.time(),
    )
