"""``hookgate hooks export|import``: the store's hooks as a file you keep in git.

``export`` writes hookgate's native hooks file (``{hooks: [...]}``, YAML or JSON). Builtin
hooks are left out (hookgate seeds them). Without ``--tenant`` every user hook is written,
tenant and agent hooks with their ``tenant_id``; with ``--tenant T`` only T's own hooks,
without tenant ids, so the file can be imported into any tenant.

``import FILE`` applies a hooks file (any format ``hookgate check`` accepts): a hook whose
name exists in its tenant is updated (its version bumps) when something differs, a new name
is created; unnamed hooks are matched by ``id``. ``--prune`` also deletes the user hooks of
the imported tenants that the file no longer lists. Every hook is validated before anything
is written; ``--dry-run`` only reports. The commands act in master scope: whoever can open
the store is its operator.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import click
import yaml

from hookgate.cli.store_options import run_with_store, store_options
from hookgate.cli.terminal import echo_line
from hookgate.config import ConfigError, parse_hooks, read_document
from hookgate.definition import GLOBAL_TENANT, HookDefinition
from hookgate.host_code import EDITIONS
from hookgate.settings import Settings
from hookgate.store import Caller, HookFilter, HookRecord, Store

__all__ = ["ImportPlan", "plan_import", "register", "render_export"]

MASTER = Caller.master_scope()
#: Recorded as created_by/updated_by on the hooks an import creates or changes.
IMPORT_ACTOR = "hookgate hooks import"
# Compared when deciding whether an imported hook changed (identity fields are not).
_DEFINITION_FIELDS = (
    "event",
    "handler_type",
    "scope",
    "name",
    "matcher",
    "if_expr",
    "timeout_ms",
    "on_timeout",
    "on_error",
    "priority",
    "enabled",
    "config",
    "agent_ids",
)


def register(main: click.Group) -> None:
    main.add_command(hooks)


@click.group()
def hooks() -> None:
    """Export the store's hooks to a file, or import one."""


# -- export ------------------------------------------------------------------------------------


def _entry(record: HookRecord, *, with_tenant: bool) -> dict[str, Any]:
    definition = record.definition
    data = definition.to_dict(include_identity=False)
    entry: dict[str, Any] = {
        key: value for key, value in data.items() if value is not None and value != []
    }
    if not definition.name:
        entry["id"] = definition.id  # the only way to find an unnamed hook again
    if with_tenant and definition.scope != "global":
        entry["tenant_id"] = definition.tenant_id
    return entry


def render_export(records: Sequence[HookRecord], *, fmt: str, with_tenant: bool) -> str:
    ordered = sorted(
        (r for r in records if r.definition.source == "user"),
        key=lambda r: (
            r.definition.tenant_id or "",
            r.definition.event,
            -r.definition.priority,
            r.definition.order,
        ),
    )
    document = {"hooks": [_entry(r, with_tenant=with_tenant) for r in ordered]}
    if fmt == "json":
        return json.dumps(document, indent=2, ensure_ascii=False) + "\n"
    return yaml.safe_dump(document, sort_keys=False, allow_unicode=True)


@hooks.command("export")
@click.option("-o", "--output", type=click.Path(dir_okay=False), help="File (default: stdout).")
@click.option("--tenant", "tenant_id", default=None, help="Only this tenant's own hooks.")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["yaml", "json"]),
    default=None,
    help="Default: json for a .json output file, else yaml.",
)
@store_options
def export_command(
    output: str | None,
    tenant_id: str | None,
    fmt: str | None,
    data_dir: str | None,
    database_url: str | None,
) -> None:
    """Write the store's user hooks as a hooks file."""
    fmt = fmt or ("json" if output and output.endswith(".json") else "yaml")

    async def action(store: Store) -> list[HookRecord]:
        if tenant_id is None:
            return await store.list_hooks(MASTER, HookFilter(source="user"))
        return await store.list_hooks(MASTER, HookFilter(source="user", tenant_id=tenant_id))

    records = run_with_store(data_dir, database_url, action)
    text = render_export(records, fmt=fmt, with_tenant=tenant_id is None)
    if output:
        Path(output).write_text(text, encoding="utf-8")
        click.echo(f"exported {len(records)} hook(s) to {output}", err=True)
    else:
        sys.stdout.write(text)


# -- import ------------------------------------------------------------------------------------


@dataclass(slots=True)
class ImportPlan:
    create: list[HookDefinition] = field(default_factory=list)
    update: list[tuple[HookRecord, dict[str, Any]]] = field(default_factory=list)
    unchanged: list[HookRecord] = field(default_factory=list)
    delete: list[HookRecord] = field(default_factory=list)


def _label(definition: HookDefinition) -> str:
    owner = "global" if definition.scope == "global" else definition.tenant_id
    return f"{owner}/{definition.name or definition.id}"


def _owner(definition: HookDefinition, tenant_id: str | None, where: str) -> str:
    if definition.scope == "global":
        if tenant_id is not None:
            raise click.ClickException(
                f"{where}: global hooks cannot be imported into a tenant; import without --tenant"
            )
        return GLOBAL_TENANT
    if tenant_id is not None:
        if definition.tenant_id not in (None, tenant_id):
            raise click.ClickException(
                f"{where}: names tenant {definition.tenant_id!r}, but --tenant is {tenant_id!r}"
            )
        return tenant_id
    if not definition.tenant_id:
        raise click.ClickException(
            f"{where}: a {definition.scope}-scope hook needs tenant_id (or use --tenant)"
        )
    return definition.tenant_id


def plan_import(
    definitions: Sequence[HookDefinition],
    existing: Sequence[HookRecord],
    *,
    tenant_id: str | None,
    prune: bool,
) -> ImportPlan:
    """What importing ``definitions`` over ``existing`` (user hooks) would do."""
    by_name = {
        (r.definition.tenant_id, r.definition.name): r for r in existing if r.definition.name
    }
    by_id = {r.id: r for r in existing}
    plan = ImportPlan()
    matched: set[str] = set()
    tenants: set[str] = set()
    for index, definition in enumerate(definitions):
        where = f"hooks[{index}] ({definition.name})" if definition.name else f"hooks[{index}]"
        owner = _owner(definition, tenant_id, where)
        tenants.add(owner)
        wanted = replace(definition, tenant_id=owner)
        current = by_name.get((owner, wanted.name)) if wanted.name else by_id.get(wanted.id)
        if current is not None and current.definition.tenant_id != owner:
            current = None  # an id from another tenant is not this hook
        if current is None:
            plan.create.append(wanted)
            continue
        matched.add(current.id)
        old = current.definition.to_dict()
        new = wanted.to_dict()
        patch = {key: new[key] for key in _DEFINITION_FIELDS if old[key] != new[key]}
        if patch:
            plan.update.append((current, patch))
        else:
            plan.unchanged.append(current)
    if prune:
        scope = {tenant_id} if tenant_id is not None else tenants
        plan.delete = [
            r for r in existing if r.definition.tenant_id in scope and r.id not in matched
        ]
    return plan


def _load_for(path: str, tenant_id: str | None, edition: str) -> list[HookDefinition]:
    """The file's hooks; with ``--tenant``, a hook that names no ``scope`` belongs to that
    tenant (a hooks file made for a project, such as ``hookgate import claude-code``'s,
    imports into a tenant as it is)."""
    document = read_document(path)
    hooks = document.get("hooks") if isinstance(document, dict) else None
    if tenant_id is not None and isinstance(hooks, list):
        document = {**document, "hooks": [
            {**hook, "scope": "tenant"} if isinstance(hook, dict) and "scope" not in hook
            else hook
            for hook in hooks
        ]}
    return parse_hooks(document, edition=edition, base_dir=Path(path).resolve().parent)


@hooks.command("import")
@click.argument("path", type=click.Path(dir_okay=False))
@click.option("--tenant", "tenant_id", default=None, help="Import into this tenant.")
@click.option("--prune", is_flag=True, help="Delete the tenant's user hooks the file omits.")
@click.option("--dry-run", is_flag=True, help="Report what would change; write nothing.")
@click.option(
    "--edition",
    type=click.Choice(EDITIONS),
    default=None,
    help="Validate for this edition (default: HOOKGATE_EDITION or lite).",
)
@store_options
def import_command(
    path: str,
    tenant_id: str | None,
    prune: bool,
    dry_run: bool,
    edition: str | None,
    data_dir: str | None,
    database_url: str | None,
) -> None:
    """Apply the hooks file PATH to the store and report what changed."""
    edition = edition or Settings.from_env().edition
    try:
        definitions = _load_for(path, tenant_id, edition)
    except ConfigError as exc:
        for problem in exc.problems:
            click.echo(f"{path}: {problem}", err=True)
        raise SystemExit(1) from None

    async def action(store: Store) -> list[str]:
        existing = await store.list_hooks(MASTER, HookFilter(source="user"))
        plan = plan_import(definitions, existing, tenant_id=tenant_id, prune=prune)
        lines: list[str] = []
        for definition in plan.create:
            if not dry_run:
                await store.create_hook(MASTER, definition, actor=IMPORT_ACTOR)
            lines.append(f"created    {_label(definition)}")
        for record, patch in plan.update:
            version = record.version + 1
            if not dry_run:
                version = (
                    await store.update_hook(
                        MASTER, record.id, patch, edition=edition, actor=IMPORT_ACTOR
                    )
                ).version
            lines.append(
                f"updated    {_label(record.definition)} -> v{version} ({', '.join(sorted(patch))})"
            )
        for record in plan.delete:
            if not dry_run:
                await store.delete_hook(MASTER, record.id)
            lines.append(f"deleted    {_label(record.definition)}")
        for record in plan.unchanged:
            lines.append(f"unchanged  {_label(record.definition)}")
        prefix = "would apply: " if dry_run else ""
        lines.append(
            f"{prefix}{len(plan.create)} created, {len(plan.update)} updated, "
            f"{len(plan.delete)} deleted, {len(plan.unchanged)} unchanged"
        )
        return lines

    for line in run_with_store(data_dir, database_url, action):
        echo_line(line)
