"""``hookgate keys create|list|revoke``: the gateway's API keys, managed on the store directly.

Whoever can open the store is the operator, so these commands act in master scope. ``create``
prints the new key alone on its last line (scripts take ``tail -n 1``); only its hash is kept.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import click

from hookgate.cli.store_options import run_with_store, store_options
from hookgate.cli.terminal import echo_line
from hookgate.store import ApiKey, Caller, Store
from hookgate.store.base import API_KEY_ROLES

__all__ = ["register"]


def register(main: click.Group) -> None:
    main.add_command(keys)


def _when(ts: float | None) -> str:
    if ts is None:
        return "-"
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%d %H:%M:%SZ")


def _with_store(data_dir: str | None, database_url: str | None, action: Any) -> Any:
    """Run ``action`` on the store ``hookgate serve`` would use with the same options, and
    say which one it is: a key made in another store would not work on the gateway."""

    async def announced(store: Store) -> Any:
        click.echo(f"using {store!r}", err=True)
        return await action(store)

    return run_with_store(data_dir, database_url, announced)


@click.group()
def keys() -> None:
    """Create, list and revoke gateway API keys."""


@keys.command("create")
@click.option("--tenant", "tenant_id", default="default", show_default=True, help="Tenant id.")
@click.option(
    "--role",
    type=click.Choice(list(API_KEY_ROLES)),
    default="operator",
    show_default=True,
    help=(
        "viewer reads; approver also decides approvals (never dispatches); operator also "
        "tests and dispatches; admin also writes."
    ),
)
@click.option("--master", is_flag=True, help="Master scope: sees and manages every tenant.")
@click.option("--name", default="", help="A label shown by 'keys list'.")
@store_options
def create(
    tenant_id: str,
    role: str,
    master: bool,
    name: str,
    data_dir: str | None,
    database_url: str | None,
) -> None:
    """Create a key and print it (once) on the last line."""

    async def action(store: Any) -> tuple[ApiKey, str]:
        result: tuple[ApiKey, str] = await store.create_api_key(
            Caller.master_scope(),
            tenant_id=tenant_id,
            role=role,
            master=master,
            name=name,
        )
        return result

    key, token = _with_store(data_dir, database_url, action)
    scope = ", master scope" if key.master else ""
    click.echo(f"created key {key.id} ({key.role}, tenant {key.tenant_id}{scope})", err=True)
    click.echo("the key is shown once; store it now:", err=True)
    click.echo(token)


@keys.command("list")
@click.option("--json", "as_json", is_flag=True, help="One JSON object per key.")
@store_options
def list_keys(as_json: bool, data_dir: str | None, database_url: str | None) -> None:
    """List keys (never their secret part)."""

    async def action(store: Any) -> list[ApiKey]:
        found: list[ApiKey] = await store.list_api_keys(Caller.master_scope())
        return found

    found = _with_store(data_dir, database_url, action)
    if as_json:
        for key in found:
            click.echo(json.dumps(key.to_dict()))
        return
    echo_line(f"{'id':<36}  {'prefix':<10}  {'tenant':<20}  {'role':<8}  master  "
              f"{'created':<20}  revoked")
    for key in found:
        echo_line(
            f"{key.id:<36}  {key.prefix:<10}  {key.tenant_id[:20]:<20}  {key.role:<8}  "
            f"{'yes' if key.master else 'no':<6}  {_when(key.created_at):<20}  "
            f"{_when(key.revoked_at)}  {key.name}"
        )


@keys.command("revoke")
@click.argument("key_id")
@store_options
def revoke(key_id: str, data_dir: str | None, database_url: str | None) -> None:
    """Revoke the key KEY_ID (see 'keys list'); a running gateway stops accepting it within
    two seconds."""

    async def action(store: Any) -> ApiKey:
        key: ApiKey = await store.revoke_api_key(Caller.master_scope(), key_id)
        return key

    key = _with_store(data_dir, database_url, action)
    echo_line(f"revoked key {key.id} ({key.role}, tenant {key.tenant_id})")
