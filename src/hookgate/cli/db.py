"""``hookgate db upgrade|status|prune``: the store's schema and housekeeping."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

import click

from hookgate.cli.store_options import run_with_store, store_options
from hookgate.cli.terminal import echo_line
from hookgate.store import Caller, StoreError, create_store
from hookgate.store.base import ExecutionQuery, Store
from hookgate.store.retention import (
    RETENTION_ENV,
    UNMATCHED_RETENTION_ENV,
    prune,
    prune_dispatches,
    retention_days,
    unmatched_retention_days,
)

__all__ = ["register"]


def _when(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%d %H:%M:%SZ")


def register(main: click.Group) -> None:
    main.add_command(db)


@click.group()
def db() -> None:
    """Upgrade, inspect and prune the store."""


@db.command()
@store_options
def upgrade(data_dir: str | None, database_url: str | None) -> None:
    """Apply pending schema migrations (safe to run while gateways start)."""

    async def main() -> tuple[str, int, int]:
        try:
            store = create_store(data_dir, database_url)
            await store.open()
        except StoreError as exc:
            raise click.ClickException(str(exc)) from None
        try:
            before = await store.schema_version()
            after = await store.migrate()
            return store.location, before, after
        except StoreError as exc:
            raise click.ClickException(str(exc)) from None
        finally:
            await store.close()

    where, before, after = asyncio.run(main())
    if before == after:
        click.echo(f"{where}: schema is current (version {after})")
    else:
        click.echo(f"{where}: schema upgraded from version {before} to {after}")


@db.command()
@store_options
def status(data_dir: str | None, database_url: str | None) -> None:
    """Show where the store is, its schema version and what it holds."""

    async def action(store: Store) -> list[str]:
        master = Caller.master_scope()
        hooks = await store.list_hooks(master)
        latest = await store.query_executions(master, ExecutionQuery(limit=1))
        return [
            f"backend: {store.backend}",
            f"location: {store.location}",
            f"schema version: {await store.schema_version()}",
            f"hooks: {len(hooks)} ({sum(1 for h in hooks if h.definition.enabled)} enabled)",
            f"hooks version: {await store.hooks_version()}",
            "latest execution: "
            + (_when(latest.items[0].created_at) if latest.items else "none recorded"),
        ]

    for line in run_with_store(data_dir, database_url, action):
        echo_line(line)


@db.command("prune")
@click.option(
    "--days",
    type=float,
    default=None,
    help=f"Delete execution rows and dispatch records older than this (default: {RETENTION_ENV} "
    "or 30).",
)
@click.option(
    "--unmatched-days",
    type=float,
    default=None,
    help="Delete records of dispatches no hook matched older than this (default: "
    f"{UNMATCHED_RETENTION_ENV}, else as --days).",
)
@store_options
def prune_command(
    days: float | None,
    unmatched_days: float | None,
    data_dir: str | None,
    database_url: str | None,
) -> None:
    """Delete old execution rows and dispatch records (retention)."""
    try:
        window = retention_days() if days is None else days
        unmatched = unmatched_retention_days() if unmatched_days is None else unmatched_days
    except StoreError as exc:
        raise click.ClickException(str(exc)) from None
    if window < 0 or (unmatched is not None and unmatched < 0):
        raise click.ClickException("--days and --unmatched-days cannot be negative")

    async def action(store: Store) -> tuple[int, int]:
        return await prune(store, window), await prune_dispatches(store, window, unmatched)

    count, records = run_with_store(data_dir, database_url, action)
    click.echo(
        f"pruned {count} execution row(s) older than {window:g} day(s) "
        f"and {records} dispatch record(s)"
    )
