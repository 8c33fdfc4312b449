"""The ``agent_hooks`` table: hook definitions per tenant, their versions, breaker state
and the seeded builtins."""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any, Final

from hookgate.definition import (
    DEFAULT_APPROVAL_TIMEOUT_MS,
    GLOBAL_TENANT,
    ApprovalPolicy,
    HookDefinition,
)
from hookgate.definition_model import validate_definition
from hookgate.registry import applies_to, sort_key
from hookgate.store.base import (
    SYSTEM_ACTOR,
    BreakerSnapshot,
    Caller,
    Forbidden,
    HookChange,
    HookFilter,
    HookRecord,
    HookRevision,
    NotFound,
    ReadOnlyHook,
    SeedReport,
    StoreError,
    VersionConflict,
)
from hookgate.store.sql.base import Row, Sql, SqlBackend, loads, to_json

__all__ = ["MASTER_WRITTEN", "HookTable", "hook_from_row"]

_HOOK_COLUMNS: Final = (
    "id, tenant_id, agent_ids, event, handler_type, scope, config, name, matcher, if_expr, "
    "timeout_ms, on_timeout, on_error, priority, enabled, version, source, sort_order, "
    "created_at, updated_at, breaker_state, breaker_faults, breaker_last_fault, "
    "breaker_changed_at, created_by, updated_by, metadata, approval, mode"
)
_HOOK_INSERT: Final = (
    "INSERT INTO agent_hooks (id, tenant_id, agent_ids, event, handler_type, scope, config, "
    "name, matcher, if_expr, timeout_ms, on_timeout, on_error, priority, enabled, version, "
    "source, sort_order, created_at, updated_at, created_by, updated_by, metadata, approval, "
    "mode) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)
# Everything a definition change rewrites (not id, tenant, source, order, created_at).
_HOOK_UPDATE: Final = (
    "UPDATE agent_hooks SET agent_ids = ?, event = ?, handler_type = ?, scope = ?, "
    "config = ?, name = ?, matcher = ?, if_expr = ?, timeout_ms = ?, on_timeout = ?, "
    "on_error = ?, priority = ?, enabled = ?, version = ?, updated_at = ?, updated_by = ?, "
    "approval = ?, mode = ? WHERE id = ?"
)
_RESET_BREAKER: Final = (
    "UPDATE agent_hooks SET breaker_state = 'closed', breaker_faults = 0, "
    "breaker_last_fault = NULL, breaker_changed_at = ? WHERE id = ?"
)
_REVISION_INSERT: Final = (
    "INSERT INTO hook_revisions (hook_id, tenant_id, version, action, changed_at, changed_by, "
    "definition) VALUES (?, ?, ?, ?, ?, ?, ?)"
)


async def _record_revision(
    sql: Sql, d: HookDefinition, action: str, now: float, actor: str | None
) -> None:
    """One definition-history row, in the transaction of the change it records."""
    await sql.execute(
        _REVISION_INSERT, d.id, d.tenant_id, d.version, action, now, actor,
        to_json(d.to_dict(include_identity=False), "definition"),
    )


#: The hook row's metadata key recording that a master-scope caller wrote this version.
MASTER_WRITTEN: Final = "written_by_master"
# Fields a patch may repeat (as sent back by a client) but never change.
_IDENTITY_FIELDS: Final = ("id", "tenant_id", "source", "version", "order")
_BOOKKEEPING_FIELDS: Final = (
    "created_at",
    "updated_at",
    "created_by",
    "updated_by",
    "breaker",
)



def _definition_params(d: HookDefinition) -> tuple[Any, ...]:
    """The columns an insert and an update both write, in their order in both statements."""
    return (
        to_json(list(d.agent_ids), "agent_ids"),
        d.event,
        d.handler_type,
        d.scope,
        to_json(dict(d.config), "config"),
        d.name,
        d.matcher,
        d.if_expr,
        d.timeout_ms,
        d.on_timeout,
        d.on_error,
        d.priority,
        d.enabled,
        d.version,
    )


def _hook_params(d: HookDefinition, now: float, actor: str | None) -> tuple[Any, ...]:
    return (
        d.id,
        d.tenant_id,
        *_definition_params(d),
        d.source,
        d.order,
        now,
        now,
        actor,
        actor,
        to_json({MASTER_WRITTEN: d.written_by_master}, "metadata"),
        _approval_json(d),
        d.mode,
    )


def _approval_json(d: HookDefinition) -> str | None:
    return None if d.approval is None else to_json(d.approval.to_dict(), "approval")


def _approval_from(value: Any) -> ApprovalPolicy | None:
    if value is None:
        return None
    raw = loads(value)
    return ApprovalPolicy(
        required=bool(raw.get("required", False)),
        timeout_ms=int(raw.get("timeout_ms", DEFAULT_APPROVAL_TIMEOUT_MS)),
        on_timeout="allow" if raw.get("on_timeout") == "allow" else "block",
    )


def _update_params(d: HookDefinition, now: float, actor: str | None) -> tuple[Any, ...]:
    return (
        *_definition_params(d),
        now,
        actor,
        _approval_json(d),
        d.mode,
        d.id,
    )


def hook_from_row(row: Row) -> HookRecord:
    definition = HookDefinition(
        event=row["event"],
        handler_type=row["handler_type"],
        scope=row["scope"],
        config=loads(row["config"]),
        name=row["name"],
        matcher=row["matcher"],
        if_expr=row["if_expr"],
        timeout_ms=row["timeout_ms"],
        on_timeout=row["on_timeout"],
        on_error=row["on_error"],
        priority=row["priority"],
        enabled=bool(row["enabled"]),
        agent_ids=tuple(loads(row["agent_ids"])),
        tenant_id=row["tenant_id"],
        id=row["id"],
        version=row["version"],
        source=row["source"],
        order=row["sort_order"],
        written_by_master=bool(loads(row["metadata"] or "{}").get(MASTER_WRITTEN)),
        approval=_approval_from(row["approval"]),
        mode="shadow" if row["mode"] == "shadow" else "enforce",
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



class HookTable(SqlBackend):
    """Hook definitions: create, read, update, delete, enable, breaker state, builtins."""

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
                version = await self._bump(sql, definition.id)
                stored = replace(
                    definition,
                    tenant_id=tenant,
                    version=1,
                    order=version,
                    written_by_master=caller.master,
                )
                await sql.execute(_HOOK_INSERT, *_hook_params(stored, now, actor))
                await _record_revision(sql, stored, "created", now, actor)
        except Exception as exc:
            if self._is_unique_violation(exc):
                if await self._hook_exists(definition.id):
                    raise StoreError(f"a hook with id {definition.id} already exists") from None
                raise self._name_taken(definition) from None
            raise
        self._changed(HookChange(version, definition.id))
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
        # A builtin may be switched off, or watched in shadow mode before it decides.
        if current.source == "builtin" and set(changes) - {"enabled", "mode"}:
            names = ", ".join(sorted(set(changes) - {"enabled", "mode"}))
            raise ReadOnlyHook(
                f"hook {current.label} is builtin: only enabled and mode can change ({names})"
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
        keep_writer: bool = False,
    ) -> HookRecord:
        now = time.time()
        try:
            async with self._write() as sql:
                row = await self._locked_row(sql, caller, hook_id)
                current = hook_from_row(row)
                current_metadata = loads(row["metadata"] or "{}")
                if expected_version is not None and current.version != expected_version:
                    raise VersionConflict(hook_id, expected_version, current.version)
                writer = current.definition.written_by_master if keep_writer else caller.master
                updated = replace(
                    self._merge(current.definition, patch, edition), written_by_master=writer
                )
                await sql.execute(_HOOK_UPDATE, *_update_params(updated, now, actor))
                await _record_revision(sql, updated, "updated", now, actor)
                await sql.execute(
                    "UPDATE agent_hooks SET metadata = ? WHERE id = ?",
                    to_json({**current_metadata, MASTER_WRITTEN: writer}, "metadata"),
                    hook_id,
                )
                breaker = current.breaker
                if updated.enabled and not current.definition.enabled:
                    await sql.execute(_RESET_BREAKER, now, hook_id)
                    breaker = BreakerSnapshot(changed_at=now)
                version = await self._bump(sql, hook_id)
        except Exception as exc:
            if self._is_unique_violation(exc):
                raise self._name_taken(current.definition) from None
            raise
        self._changed(HookChange(version, hook_id))
        return HookRecord(
            updated, current.created_at, now, breaker, current.created_by, updated_by=actor
        )

    async def delete_hook(
        self, caller: Caller, hook_id: str, *, actor: str | None = None
    ) -> None:
        async with self._write() as sql:
            current = await self._locked_hook(sql, caller, hook_id)
            if current.definition.source == "builtin":
                raise ReadOnlyHook(
                    f"hook {current.definition.label} is builtin: disable it instead"
                )
            await sql.execute("DELETE FROM agent_hooks WHERE id = ?", hook_id)
            await _record_revision(sql, current.definition, "deleted", time.time(), actor)
            version = await self._bump(sql, hook_id)
        self._changed(HookChange(version, hook_id))

    async def hook_revisions(
        self, caller: Caller, hook_id: str, limit: int
    ) -> tuple[HookRevision, ...]:
        tenant = "" if caller.master else " AND tenant_id = ?"
        scope: list[Any] = [] if caller.master else [caller.tenant_id]
        async with self._read() as sql:
            rows = await sql.fetch(
                "SELECT version, action, changed_at, changed_by, definition FROM hook_revisions "
                f"WHERE hook_id = ?{tenant} ORDER BY seq DESC LIMIT {max(1, int(limit))}",
                hook_id,
                *scope,
            )
        return tuple(
            HookRevision(
                version=int(row["version"]),
                action=row["action"],
                changed_at=float(row["changed_at"]),
                changed_by=row["changed_by"],
                definition=loads(row["definition"]),
            )
            for row in rows
        )

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
            await _record_revision(
                sql, updated, "enabled" if enabled else "disabled", now, actor
            )
            await sql.execute(_RESET_BREAKER, now, hook_id)
            version = await self._bump(sql, hook_id)
        self._changed(HookChange(version, hook_id))
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
            # Replicas starting at once seed one after the other: the second finds the rows.
            await self._lock_bootstrap(sql)
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
                release = to_json(
                    {"builtin_version": definition.version, MASTER_WRITTEN: True}, "metadata"
                )
                if row is None:
                    version = await self._bump(sql, definition.id)
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
                shipped = int(loads(row["metadata"]).get("builtin_version", 0))
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
                version = await self._bump(sql, current.id)
                updated.append(definition.name)
        if version is not None:
            self._changed(HookChange(version, None))  # several: reload all
        return SeedReport(tuple(created), tuple(updated), tuple(unchanged))
