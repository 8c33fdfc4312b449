"""``hookgate audit verify|head``: check the dispatch records' hash chain (and the hook rows
each record covers), export its head.

``verify`` exits 0 when every chain checked is intact and 1 naming, per broken tenant, the
first record that was altered, removed or reordered. ``head`` prints each tenant's checkpoint
as JSON, to keep somewhere the database's operators cannot write (see docs/storage.md);
``verify --anchor FILE`` then checks that the chain still contains those heads.
"""

from __future__ import annotations

import gc
import sys
from pathlib import Path
from typing import Any

import click
import orjson

from hookgate.cli.store_options import run_with_store, store_options
from hookgate.store import Caller
from hookgate.store.base import Store
from hookgate.store.chain import ChainHead, ChainReport, TenantChain

__all__ = ["register"]


def register(main: click.Group) -> None:
    main.add_command(audit)


@click.group()
def audit() -> None:
    """Check the tamper-evident audit log (the dispatch records' hash chain and their hook
    rows)."""


@audit.command()
@store_options
@click.option("--tenant", default=None, help="Check this tenant's chain only.")
@click.option(
    "--anchor",
    type=click.Path(dir_okay=False, exists=True),
    default=None,
    help="A file `hookgate audit head` wrote: the chain must still hold those heads.",
)
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text")
def verify(
    data_dir: str | None,
    database_url: str | None,
    tenant: str | None,
    anchor: str | None,
    fmt: str,
) -> None:
    """Exit 0 when the chain is intact, 1 naming the first record altered, removed or
    reordered."""
    anchors = _read_anchor(Path(anchor)) if anchor else []

    async def action(store: Store) -> tuple[ChainReport, list[str]]:
        report = await store.verify_chain(Caller.system(), tenant)
        return report, await _anchor_problems(store, anchors, tenant)

    # The walk makes no reference cycles (refcounting frees every page), so the cyclic
    # collector would only re-traverse the pages being read: a fifth of the CPU on PostgreSQL
    # (asyncpg's records are tracked). This process ends after the walk.
    gc.disable()
    report, anchor_problems = run_with_store(data_dir, database_url, action)
    intact = report.intact and not anchor_problems
    if fmt == "json":
        data = report.to_dict()
        data["intact"] = intact
        data["anchor_problems"] = anchor_problems
        click.echo(orjson.dumps(data, option=orjson.OPT_INDENT_2).decode())
    else:
        for chain in report.tenants:
            click.echo(_line(chain))
        for problem in anchor_problems:
            click.echo(f"anchor: {problem}")
        rate = report.records / report.elapsed_s if report.elapsed_s > 0 else 0.0
        verdict = "intact" if intact else "BROKEN"
        click.echo(
            f"{verdict}: {len(report.tenants)} chain(s), {report.records} records checked "
            f"in {report.elapsed_s:.3f} s ({rate:,.0f}/s)"
        )
    sys.exit(0 if intact else 1)


@audit.command()
@store_options
@click.option("--tenant", default=None, help="This tenant's head only.")
def head(data_dir: str | None, database_url: str | None, tenant: str | None) -> None:
    """Print each tenant's chain head (last place and hash) as JSON, to anchor elsewhere."""

    async def action(store: Store) -> list[ChainHead]:
        return await store.chain_heads(Caller.system(), tenant)

    heads = run_with_store(data_dir, database_url, action)
    click.echo(
        orjson.dumps({"heads": [h.to_dict() for h in heads]}, option=orjson.OPT_INDENT_2).decode()
    )


def _line(chain: TenantChain) -> str:
    head = chain.head
    reach = f"places {head.base_seq + 1}–{head.seq}" if head else "no head"
    extra = f", {chain.hook_rows} hook rows" if chain.hook_rows else ""
    extra += f", {chain.unchained} from before the chain" if chain.unchained else ""
    if chain.unlisted_hook_rows:
        extra += f", {chain.unlisted_hook_rows} hook rows written after their record (unchecked)"
    if chain.problem is None:
        return f"tenant {chain.tenant_id}: intact, {chain.records} records ({reach}){extra}"
    problem = chain.problem
    return (
        f"tenant {chain.tenant_id}: BROKEN at place {problem.chain_seq}: "
        f"{problem.kind}: {problem.why}"
    )


def _read_anchor(path: Path) -> list[ChainHead]:
    try:
        data: Any = orjson.loads(path.read_bytes())
        return [
            ChainHead(str(h["tenant_id"]), int(h["seq"]), str(h["hash"])) for h in data["heads"]
        ]
    except (orjson.JSONDecodeError, KeyError, TypeError, ValueError) as exc:
        raise click.ClickException(f"{path} is not a `hookgate audit head` file: {exc}") from None


async def _anchor_problems(store: Store, anchors: list[ChainHead], tenant: str | None) -> list[str]:
    """An anchored head must still be in the chain: its place holds the same hash (or,
    once retention passed it, the base lies at or beyond it)."""
    problems: list[str] = []
    current = {h.tenant_id: h for h in await store.chain_heads(Caller.system(), tenant)}
    for anchored in anchors:
        if tenant is not None and anchored.tenant_id != tenant:
            continue
        now = current.get(anchored.tenant_id)
        if now is None:
            problems.append(f"tenant {anchored.tenant_id}: no chain any more")
            continue
        if anchored.seq < now.base_seq:
            continue  # retention deleted that part since
        found = await store.chain_hash_at(Caller.system(), anchored.tenant_id, anchored.seq)
        if found != anchored.hash:
            problems.append(
                f"tenant {anchored.tenant_id}: place {anchored.seq} no longer holds the "
                f"anchored hash {anchored.hash[:16]}…: the chain was rewritten from there or "
                "before"
            )
    return problems
