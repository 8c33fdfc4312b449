"""``hookgate replay``: what a candidate hooks file would have decided on recorded traffic.

Reads the dispatch records of a store (``--data-dir`` / ``--database-url``) or of a replay
export (``--from FILE``, see :mod:`hookgate.replay.sources`), opens each sealed input with
the gateway's key, runs it through the candidate's chain and reports the dispatches whose
decision would change. Hooks that call out answer from their recorded replies unless
``--live``. Exit 0 when the replay ran (whatever it found), 1 on any error.
"""

from __future__ import annotations

import asyncio
import os
import re
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Final

import click
import orjson

from hookgate.cli.store_options import location_options, run_with_store
from hookgate.cli.terminal import echo_line, printable
from hookgate.config import ConfigError, load_hooks
from hookgate.definition import DefinitionError, HookDefinition
from hookgate.replay.replayer import Replayer
from hookgate.replay.report import ReplayReport, text_lines
from hookgate.replay.run import ReplayBounds, replay_rows
from hookgate.replay.sources import export_rows, store_rows
from hookgate.secrets.keyring import Keyring, SecretError
from hookgate.settings import EDITIONS, STANDARD, Settings
from hookgate.store import Caller, DispatchQuery, Store
from hookgate.store.location import DATA_DIR_ENV, DATABASE_URL_ENV, default_data_dir

__all__ = ["parse_when", "register"]

_UNITS: Final = {"s": 1.0, "m": 60.0, "h": 3600.0, "d": 86_400.0, "w": 604_800.0}
_RELATIVE: Final = re.compile(r"^(\d+(?:\.\d+)?)([smhdw])$")


def register(main: click.Group) -> None:
    main.add_command(replay)


def parse_when(text: str, now: float) -> float:
    """``7d`` / ``12h`` / ``30m`` ago, or an ISO 8601 time (UTC unless it says), as Unix
    seconds; ValueError naming the accepted forms."""
    relative = _RELATIVE.match(text.strip())
    if relative:
        return now - float(relative.group(1)) * _UNITS[relative.group(2)]
    try:
        when = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        raise ValueError(
            f"{text!r} is neither a duration (30m, 12h, 7d, 2w) nor an ISO 8601 time"
        ) from None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return when.timestamp()


def _keyring(data_dir: str | None, database_url: str | None, from_file: str | None) -> Keyring:
    """The gateway's key, found as `hookgate serve` finds it: HOOKGATE_SECRET_KEY(_FILE),
    else the SQLite data directory's key file. Never created here."""
    key_dir: str | Path | None = None
    if not (from_file or database_url or os.environ.get(DATABASE_URL_ENV)):
        key_dir = data_dir or os.environ.get(DATA_DIR_ENV) or default_data_dir()
    try:
        return Keyring.from_env(data_dir=key_dir, create=False)
    except SecretError as exc:
        where = (
            "the data directory's key (secret.key)"
            if key_dir is not None
            else "HOOKGATE_SECRET_KEY or HOOKGATE_SECRET_KEY_FILE (the gateway's key)"
        )
        raise click.ClickException(
            f"no key to open the recorded inputs ({exc}); replay needs {where}"
        ) from None


def _candidate(path: str, edition: str | None) -> list[HookDefinition]:
    try:
        return load_hooks(path, edition=edition or "lite")
    except ConfigError as exc:
        raise click.ClickException(f"the candidate {path}: {exc}") from None
    except DefinitionError as exc:
        raise click.ClickException(f"the candidate {path}: {exc}") from None


def _progress(seen: int, total: int | None, elapsed: float) -> None:
    rate = seen / elapsed if elapsed > 0 else 0.0
    of = f" of {total:,}" if total is not None else ""
    click.echo(f"replay: {seen:,}{of} records ({rate:,.0f}/s)", err=True)


@click.command()
@click.option(
    "-c",
    "--config",
    "config_path",
    required=True,
    type=click.Path(dir_okay=False, exists=True),
    help="The candidate hooks file.",
)
@location_options
@click.option(
    "--from",
    "from_file",
    type=click.Path(dir_okay=False, exists=True),
    default=None,
    help="A replay export (GET /api/v1/dispatches/export?format=jsonl) instead of a store.",
)
@click.option("--tenant", default=None, help="Replay this tenant's records only.")
@click.option("--since", default=None, help="Records from then on: 7d, 12h, or ISO 8601.")
@click.option("--until", default=None, help="Records before then: 1d, or ISO 8601.")
@click.option("--event", default=None, help="Replay this event's records only.")
@click.option(
    "--live",
    is_flag=True,
    help="Call hooks that call out (http, prompt, agent, command, process) instead of "
    "answering from their recorded replies.",
)
@click.option("--limit", type=click.IntRange(min=1), default=None, help="At most N records.")
@click.option(
    "--max-changes",
    type=click.IntRange(min=0),
    default=1000,
    show_default=True,
    help="Changes listed at most (0: all); the counts are always whole.",
)
@click.option("--edition", type=click.Choice(EDITIONS), default=None)
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text")
def replay(
    config_path: str,
    data_dir: str | None,
    database_url: str | None,
    from_file: str | None,
    tenant: str | None,
    since: str | None,
    until: str | None,
    event: str | None,
    live: bool,
    limit: int | None,
    max_changes: int,
    edition: str | None,
    fmt: str,
) -> None:
    """Replay recorded dispatches through the candidate hooks file --config and report
    what would change."""
    if from_file and (data_dir or database_url):
        raise click.UsageError(
            "--from reads an export file: give it without --data-dir/--database-url"
        )
    now = time.time()
    try:
        window = DispatchQuery(
            tenant_id=tenant,
            event=event,
            since=parse_when(since, now) if since else None,
            until=parse_when(until, now) if until else None,
        )
    except ValueError as exc:
        raise click.UsageError(str(exc)) from None
    definitions = _candidate(config_path, edition)
    keyring = _keyring(data_dir, database_url, from_file)
    settings = Settings(edition=STANDARD) if edition == STANDARD else Settings()
    bounds = ReplayBounds(max_records=limit, max_changes=max_changes)

    async def from_store(store: Store) -> ReplayReport:
        caller = Caller.system()
        if tenant is not None and not await store.count_dispatches(
            caller, DispatchQuery(tenant_id=tenant)
        ):
            raise click.ClickException(f"tenant {tenant!r} has no dispatch records in this store")
        total = await store.count_dispatches(caller, window)
        replayer = Replayer(definitions, live=live, settings=settings)
        try:
            rows = store_rows(store, caller, window)
            return await replay_rows(
                rows, replayer, keyring, bounds, total=total, progress=_progress
            )
        finally:
            await replayer.aclose()

    async def from_export(path: Path) -> ReplayReport:
        replayer = Replayer(definitions, live=live, settings=settings)
        try:
            return await replay_rows(
                export_rows(path, window), replayer, keyring, bounds, progress=_progress
            )
        finally:
            await replayer.aclose()

    if from_file:
        try:
            report = asyncio.run(from_export(Path(from_file)))
        except OSError as exc:
            raise click.ClickException(f"{from_file}: {exc.strerror or exc}") from None
        if tenant is not None and not (report.replayed or report.unreadable):
            raise click.ClickException(f"tenant {tenant!r} has no dispatch records in {from_file}")
    else:
        report = run_with_store(data_dir, database_url, from_store)
    if fmt == "json":
        click.echo(orjson.dumps(report.to_dict(), option=orjson.OPT_INDENT_2).decode())
    else:
        for line in text_lines(report, printable):
            echo_line(line)
    sys.exit(0)
