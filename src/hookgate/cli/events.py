"""``hookgate events``: print the event catalogue."""

from __future__ import annotations

import json

import click

from hookgate.cli.terminal import echo_line
from hookgate.events import CATALOGUE


def register(main: click.Group) -> None:
    main.add_command(events)


@click.command()
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
def events(as_json: bool) -> None:
    """List every event hookgate knows, its kind, outcomes and aliases."""
    if as_json:
        rows = [
            {
                "name": spec.name,
                "blocking": spec.blocking,
                "origin": spec.origin,
                "fields": list(spec.all_fields),
                "outcomes": sorted(spec.outcomes),
                "input_field": spec.input_field,
                "match_field": spec.match_field,
                "default_timeout_ms": spec.default_timeout_ms,
                "max_timeout_ms": spec.max_timeout_ms,
                "default_policy": spec.default_policy,
                "blocks_when_awaited": spec.blocks_when_awaited,
                "awaited_names": sorted(spec.awaited_names),
                "blocking_names": sorted(spec.blocking_names),
                "answer_keys": dict(spec.answer_keys or {}),
                "aliases": list(spec.aliases),
                "description": spec.description,
            }
            for spec in CATALOGUE
        ]
        click.echo(json.dumps(rows, indent=2))
        return
    for spec in CATALOGUE:
        kind = (
            "blocking" if spec.blocking
            else "when awaited" if spec.blocks_when_awaited
            else "as " + "/".join(sorted(spec.blocking_names)) if spec.blocking_names
            else "awaited" if spec.awaited_names
            else "non-blocking"
        )
        outcomes = ", ".join(sorted(spec.outcomes)) or "observe only"
        aliases = f"  (aka {', '.join(spec.aliases)})" if spec.aliases else ""
        echo_line(f"{spec.name:<22} {kind:<13} {outcomes}{aliases}")
