"""``hooks.export`` and ``hooks.import``: a tenant's hooks as a file, and a file applied back.

Export writes hookgate's native hooks file (``{hooks: [...]}``, YAML or JSON): the tenant's
own user hooks (not builtins, not global hooks), without ids or tenant ids, so the file
imports into any tenant. Secret header values are never written (they are ``null``: sealed
for this gateway, they would be useless and must not leave it).

Import checks every hook with the same rules as ``hooks.create``/``hooks.update`` (role,
tenant, host code, credentials, validation) before anything is written, and answers one
entry per hook: what it does (create, update, unchanged) or its problems, each at its field.
When any hook is invalid nothing is written. A hook whose name exists in the tenant is
updated (a ``null`` secret header keeps the stored value); an unnamed hook is matched by its
``id`` within the tenant only.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final

import yaml

from hookgate.definition import DefinitionError, HookDefinition
from hookgate.definition_model import validate_definition
from hookgate.server import schemas
from hookgate.server.auth import Principal
from hookgate.server.errors import ApiError
from hookgate.server.hook_secrets import prepare_api_key, prepare_secret_headers
from hookgate.server.methods import (
    MASTER_MESSAGE,
    check_code,
    hide_secrets,
    hooks_create,
    hooks_update,
    writable,
)
from hookgate.server.url_warnings import url_warnings
from hookgate.store import HookFilter, HookRecord

if TYPE_CHECKING:
    from hookgate.server.gateway import Gateway

__all__ = ["hooks_export", "hooks_import"]

#: The most hooks one file may hold (each is validated, and may resolve a URL).
MAX_IMPORT_HOOKS: Final = 500
#: Keys a file entry may carry that are not definition fields: identity the import ignores.
_IGNORED: Final = frozenset({"version", "source", "created_at", "updated_at", "created_by",
                             "updated_by", "breaker", "order"})


def _tenant(who: Principal, tenant_id: str | None) -> str:
    if tenant_id is None or tenant_id == who.tenant_id:
        return who.tenant_id
    if not who.master:
        raise ApiError("UNAUTHORIZED", MASTER_MESSAGE)
    return tenant_id


async def _own_hooks(gateway: Gateway, who: Principal, tenant: str) -> list[HookRecord]:
    records = await gateway.store.list_hooks(
        who.caller, HookFilter(source="user", tenant_id=tenant)
    )
    return [
        r for r in records if r.definition.scope != "global" and r.definition.tenant_id == tenant
    ]


def _file_entry(record: HookRecord) -> dict[str, Any]:
    data = record.definition.to_dict(include_identity=False)
    data["config"] = hide_secrets(data["config"])
    entry = {key: value for key, value in data.items() if value is not None and value != []}
    if not record.definition.name:
        entry = {"id": record.id, **entry}  # the only way to find an unnamed hook again
    return entry


async def hooks_export(
    gateway: Gateway, who: Principal, p: schemas.ExportParams
) -> dict[str, Any]:
    tenant = _tenant(who, p.tenant_id)
    records = sorted(
        await _own_hooks(gateway, who, tenant),
        key=lambda r: (r.definition.event, -r.definition.priority, r.definition.order),
    )
    document = {"hooks": [_file_entry(r) for r in records]}
    if p.format == "json":
        content = json.dumps(document, indent=2, ensure_ascii=False) + "\n"
    else:
        content = yaml.safe_dump(document, sort_keys=False, allow_unicode=True)
    return {
        "filename": f"hooks-{tenant}.{p.format}",
        "format": p.format,
        "content": content,
        "count": len(records),
    }


# -- import ------------------------------------------------------------------------------------


@dataclass(slots=True)
class _Entry:
    index: int
    name: str | None
    raw: dict[str, Any] = field(default_factory=dict)
    action: str = "invalid"
    current: HookRecord | None = None
    patch: dict[str, Any] = field(default_factory=dict)
    problems: list[dict[str, str]] = field(default_factory=list)
    warnings: list[dict[str, str]] = field(default_factory=list)
    hook_id: str | None = None

    def view(self) -> dict[str, Any]:
        return {
            "index": self.index,
            "name": self.name,
            "action": self.action,
            "hookId": self.hook_id,
            "problems": self.problems,
            "warnings": self.warnings,
        }


class _PlainLoader(yaml.SafeLoader):
    """YAML without anchors and aliases: a few bytes of aliases can stand for a document too
    large to validate or store (the "billion laughs"); a hooks file never needs them."""

    def compose_node(self, parent: Any, index: Any) -> Any:
        if self.check_event(yaml.AliasEvent):
            raise ValueError("the file uses YAML aliases (*name); write the values out")
        return super().compose_node(parent, index)


def _parse(content: str) -> list[Any]:
    """The file's hook entries; ValueError says what is wrong with the file as a whole."""
    try:
        document = yaml.load(content, Loader=_PlainLoader)  # a SafeLoader; JSON is YAML too
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 1})" if mark is not None else ""
        raise ValueError(f"the file is neither YAML nor JSON{where}") from None
    hooks = document.get("hooks") if isinstance(document, Mapping) else document
    if not isinstance(hooks, list):
        raise ValueError("the file needs a 'hooks' list (as 'Export' writes it)")
    if len(hooks) > MAX_IMPORT_HOOKS:
        raise ValueError(f"the file has {len(hooks)} hooks; at most {MAX_IMPORT_HOOKS} at once")
    return hooks


def _problems(exc: Exception, field: str = "hook") -> list[dict[str, str]]:
    if isinstance(exc, DefinitionError):
        return [{"field": p.field, "message": p.message} for p in exc.problems]
    if isinstance(exc, ApiError):
        listed = (exc.details or {}).get("problems")
        if isinstance(listed, list) and listed:
            return [{"field": str(p["field"]), "message": str(p["message"])} for p in listed]
        return [{"field": field, "message": exc.message}]
    return [{"field": field, "message": str(exc)}]


def _comparable(definition: HookDefinition) -> dict[str, Any]:
    data = definition.to_dict(include_identity=False)
    data["config"] = hide_secrets(data["config"])
    return data


def _missing_secrets(raw: Mapping[str, Any]) -> list[dict[str, str]]:
    config = raw.get("config")
    headers = config.get("headers") if isinstance(config, Mapping) else None
    if not isinstance(headers, Mapping):
        return []
    return [
        {
            "field": f"config.headers.{name}",
            "message": "a secret header's value is never exported; write it into the file "
            "to create this hook",
        }
        for name, value in headers.items()
        if value is None
    ]


def _check(
    gateway: Gateway,
    who: Principal,
    entry: _Entry,
    tenant: str,
    existing: Mapping[tuple[str, str], HookRecord],
) -> None:
    """Decide what ``entry`` does and record its problems; writes nothing."""
    raw = {k: v for k, v in writable(entry.raw).items() if k not in _IGNORED}
    raw.setdefault("scope", "tenant")
    named = raw.get("tenant_id")
    if named not in (None, "", tenant):
        entry.problems.append({
            "field": "tenant_id",
            "message": f"names tenant {named!r}; this import is into {tenant!r} "
            "(remove tenant_id to import it here)",
        })
        return
    is_global = raw.get("scope") == "global"
    if is_global and not who.master:
        entry.problems.append({"field": "scope", "message": MASTER_MESSAGE})
        return
    raw["tenant_id"] = None if is_global else tenant
    key = ("global" if is_global else tenant, str(raw.get("name") or f"id:{entry.raw.get('id')}"))
    entry.current = existing.get(key)
    raw.pop("id", None)  # a new hook gets a new id, an existing one keeps its own
    try:  # the host-code boundary and the callable allow-list, before validation imports
        check_code(gateway, who, raw, "defining")
        if entry.current is not None:
            check_code(gateway, who, entry.current.definition.to_dict(), "changing")
    except ApiError as exc:
        entry.problems.extend(_problems(exc, "handler_type"))
        return
    try:
        if entry.current is None:
            entry.problems.extend(_missing_secrets(raw))
            if entry.problems:
                return
            candidate = validate_definition(raw, edition=gateway.edition, default_scope=None)
        else:
            current = entry.current
            config = raw.get("config")
            if isinstance(config, Mapping):
                # What hooks.update will store: null secrets keep their sealed value (dropped
                # when the URL changed), new values are sealed.
                stored = current.definition.config
                headers = prepare_secret_headers(config, current.id, gateway.keyring, stored)
                entry.warnings.extend(
                    {
                        "field": f"config.headers.{name}",
                        "message": "the file changes the hook's URL: its stored secret is not "
                        "sent to the new URL and is dropped; give the value again",
                    }
                    for name in headers.dropped
                )
                config = prepare_api_key(headers.config, current.id, gateway.keyring, stored)
            candidate = validate_definition(
                {**raw, "config": config}, edition=gateway.edition, default_scope=None
            )
        gateway.check_credentials(candidate)
    except (ApiError, DefinitionError) as exc:
        entry.problems.extend(_problems(exc))
        return
    entry.raw = raw
    if entry.current is None:
        entry.action = "create"
        return
    # The file is the whole hook: every field that differs from the stored one is patched.
    entry.hook_id = entry.current.id
    old, new = _comparable(entry.current.definition), _comparable(candidate)
    for name, value in new.items():
        if name == "config":
            if raw.get("config", {}) != old["config"]:
                entry.patch["config"] = raw.get("config", {})
        elif old.get(name) != value:
            entry.patch[name] = value
    entry.action = "update" if entry.patch else "unchanged"


async def hooks_import(
    gateway: Gateway, who: Principal, p: schemas.ImportParams
) -> dict[str, Any]:
    """Check every hook of the file, then write them all or none (``dryRun``: none)."""
    tenant = _tenant(who, p.tenant_id)
    try:
        items = _parse(p.content)
    except ValueError as exc:
        return {"applied": False, "hooks": [], "error": str(exc)}
    existing = await _existing(gateway, who, tenant)
    entries = [_entry(index, item) for index, item in enumerate(items)]
    _refuse_repeated_names(entries, tenant)
    for entry in entries:
        if not entry.problems:
            _check(gateway, who, entry, tenant, existing)
    valid = all(not entry.problems for entry in entries)
    if valid and not p.dry_run:
        for entry in entries:
            await _apply(gateway, who, entry, hooks_create, hooks_update)
    # Each check is bounded in time; run at once, a file of webhooks costs one bound, not one
    # per hook.
    checked = [entry for entry in entries if entry.action in ("create", "update")]
    found = await asyncio.gather(*(_warnings(gateway, entry) for entry in checked))
    for entry, warnings in zip(checked, found, strict=True):
        entry.warnings.extend(warnings)
    return {
        "applied": valid and not p.dry_run,
        "hooks": [entry.view() for entry in entries],
        "error": None,
    }


async def _existing(
    gateway: Gateway, who: Principal, tenant: str
) -> dict[tuple[str, str], HookRecord]:
    """The hooks a file entry may name, by (owner, name) and (owner, ``id:<id>``): the
    tenant's own, and for master scope the global ones."""
    records = await _own_hooks(gateway, who, tenant)
    if who.master:
        records += [
            r
            for r in await gateway.store.list_hooks(
                who.caller, HookFilter(source="user", scope="global")
            )
            if r.definition.scope == "global"
        ]
    existing: dict[tuple[str, str], HookRecord] = {}
    for record in records:
        owner = "global" if record.definition.scope == "global" else tenant
        existing[(owner, f"id:{record.id}")] = record
        if record.definition.name:
            existing[(owner, record.definition.name)] = record
    return existing


def _entry(index: int, item: Any) -> _Entry:
    """One file entry, named as the file names it; not an object is its problem."""
    name = item.get("name") if isinstance(item, Mapping) else None
    entry = _Entry(index, name if isinstance(name, str) and name else None)
    if isinstance(item, Mapping):
        entry.raw = dict(item)
    else:
        entry.problems.append({"field": "hook", "message": "each hook must be an object"})
    return entry


def _refuse_repeated_names(entries: list[_Entry], tenant: str) -> None:
    """A name the file gives twice in one owner (the tenant, or global) is a problem of the
    second entry: which of the two the stored hook becomes would be a guess."""
    seen: set[tuple[str, str]] = set()
    for entry in entries:
        if entry.name is None or entry.problems:
            continue
        owner = "global" if entry.raw.get("scope") == "global" else tenant
        if (owner, entry.name) in seen:
            entry.problems.append(
                {"field": "name", "message": f"the file names {entry.name!r} twice"}
            )
        seen.add((owner, entry.name))


async def _warnings(gateway: Gateway, entry: _Entry) -> list[dict[str, str]]:
    config = entry.raw.get("config") or (entry.current.definition.config if entry.current else {})
    return await url_warnings(str(entry.raw.get("handler_type")), config, gateway.settings)


async def _apply(gateway: Gateway, who: Principal, entry: _Entry, create: Any, update: Any) -> None:
    """Write one checked entry through hooks.create/hooks.update (which check it again)."""
    if entry.action == "create":
        entry.hook_id = (await create(gateway, who, entry.raw))["hookId"]
    elif entry.action == "update":
        params = schemas.UpdateParams.model_validate(
            {"hookId": entry.hook_id, "updates": entry.patch}
        )
        await update(gateway, who, params)
