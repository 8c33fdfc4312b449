"""``hookgate fire EVENT``: run one event through the hooks of a file and print the outcome."""

from __future__ import annotations

import asyncio
import json
import sys
from typing import Any

import click

from hookgate.config import ConfigError
from hookgate.engine import Engine
from hookgate.events import UnknownEventError, get_event
from hookgate.host_code import EDITIONS
from hookgate.outcome import Outcome
from hookgate.settings import Settings


def register(main: click.Group) -> None:
    main.add_command(fire)


def parse_input(text: str | None) -> dict[str, Any]:
    if text is None:
        return {}
    if text == "-":
        text = sys.stdin.read()
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise click.BadParameter(f"not JSON: {exc.msg} at column {exc.colno}") from None
    if not isinstance(value, dict):
        raise click.BadParameter("the input must be a JSON object of event fields")
    return value


@click.command()
@click.argument("event")
@click.option(
    "-c",
    "--config",
    "config_path",
    required=True,
    type=click.Path(dir_okay=False),
    help="Hooks file (YAML or JSON).",
)
@click.option(
    "-i",
    "--input",
    "input_json",
    default=None,
    help="Event fields as a JSON object (tool_name, tool_input, prompt, …); - reads stdin.",
)
@click.option("--edition", type=click.Choice(EDITIONS), default=None)
@click.option("--compact", is_flag=True, help="Print the outcome on one line.")
def fire(
    event: str, config_path: str, input_json: str | None, edition: str | None, compact: bool
) -> None:
    """Fire EVENT through the hooks in --config and print the outcome JSON.

    Exit status: 0 when the outcome allows, 2 when it blocks, 1 on a usage or config error.
    """
    try:
        get_event(event)
    except UnknownEventError as exc:
        raise click.BadParameter(str(exc), param_hint="EVENT") from None
    payload = parse_input(input_json)
    settings = Settings.from_env()
    if edition:
        settings.edition = edition  # type: ignore[assignment]
    outcome = asyncio.run(_fire(event, payload, config_path, settings))
    click.echo(outcome.to_json(indent=None if compact else 2))
    for entry in outcome.shadow:  # what they would have done; the exit status ignores them
        reason = entry.details.get("reason") or entry.error
        click.echo(
            f"shadow: {entry.name or entry.hook_id} {entry.decision}"
            + (f": {reason}" if reason else ""),
            err=True,
        )
    raise SystemExit(0 if outcome.allowed else 2)


async def _fire(
    event: str, payload: dict[str, Any], config_path: str, settings: Settings
) -> Outcome:
    engine = Engine(settings=settings)
    try:
        engine.load(config_path)
    except ConfigError as exc:
        for problem in exc.problems:
            click.echo(f"{config_path}: {problem}", err=True)
        raise SystemExit(1) from None
    try:
        # Non-blocking events run now too, so the trace shows what every hook did.
        return await engine.fire(event, payload, wait=True)
    finally:
        await engine.aclose()
