"""``hookgate check FILE``: validate a hooks file, one line per problem."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import click

from hookgate.config import ConfigError, load_hooks
from hookgate.host_code import EDITIONS
from hookgate.settings import Settings


def register(main: click.Group) -> None:
    main.add_command(check)


@click.command()
@click.argument("path", type=click.Path(dir_okay=False))
@click.option(
    "--edition",
    type=click.Choice(EDITIONS),
    default=None,
    help="Validate for this edition (default: HOOKGATE_EDITION or lite).",
)
def check(path: str, edition: str | None) -> None:
    """Validate the hooks file PATH; exit 0 when every hook is valid."""
    edition = edition or Settings.from_env().edition
    try:
        definitions = load_hooks(path, edition=edition)
    except ConfigError as exc:
        for problem in exc.problems:
            click.echo(f"{path}: {problem}", err=True)
        raise SystemExit(1) from None
    # A process hook that cannot start would only fail when the event fires (and PicoClaw-
    # style interceptors fail open): report it now.
    unstartable = [
        f"{path}: {definition.label}.config.command: {missing}"
        for definition in definitions
        if definition.handler_type == "process"
        and (missing := _missing_program(definition.config)) is not None
    ]
    if unstartable:
        for line in unstartable:
            click.echo(line, err=True)
        raise SystemExit(1)
    shadow = [definition for definition in definitions if definition.shadow]
    for definition in shadow:
        click.echo(f"{path}: {definition.label} ({definition.event}) runs in shadow mode")
    note = f", {len(shadow)} in shadow mode" if shadow else ""
    click.echo(f"{path}: {len(definitions)} hook(s) OK{note}")


def _missing_program(config: Mapping[str, Any]) -> str | None:
    from hookgate.handlers.process.config import parse_spec
    from hookgate.handlers.process.spec import missing_program

    try:
        return missing_program(parse_spec(config))
    except ValueError as exc:
        return "; ".join(str(arg) for arg in exc.args)
