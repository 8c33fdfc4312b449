"""The ``hookgate`` command. Each sub-command lives in its own module in this package."""

from __future__ import annotations

import importlib
import logging
import sys

import click

__all__ = ["main"]

# Modules that each add commands to ``main`` (a ``register(main)`` function each).
COMMAND_MODULES: tuple[str, ...] = (
    "hookgate.cli.check",
    "hookgate.cli.fire",
    "hookgate.cli.demo",
    "hookgate.cli.events",
    "hookgate.cli.migrate",
    "hookgate.integrations.claude_code.cli",
    "hookgate.integrations.codex.cli",
    "hookgate.integrations.gemini.cli",
    "hookgate.cli.serve",
    "hookgate.cli.keys",
    "hookgate.cli.db",
    "hookgate.cli.hooks",
    "hookgate.cli.approvals",
    "hookgate.cli.boundary",
    "hookgate.cli.mcp_proxy",
)
# Commands that run on every git push: when one of them is invoked, only its module loads
# (the others pull in the engine, the store and the gateway).
LIGHT_COMMANDS: dict[str, str] = {
    "scan": "hookgate.cli.boundary",
    "scrub": "hookgate.cli.boundary",
    "pre-push": "hookgate.cli.boundary",
}


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="hookgate")
@click.option("-v", "--verbose", count=True, help="Log more (-v info, -vv debug).")
def main(verbose: int) -> None:
    """hookgate: lifecycle hooks for AI agents."""
    level = logging.WARNING - 10 * min(verbose, 2)
    logging.basicConfig(level=level, stream=sys.stderr, format="%(levelname)s %(message)s")


def _invoked_command(argv: list[str]) -> str | None:
    for arg in argv[1:]:
        if not arg.startswith("-"):
            return arg
    return None


_light = LIGHT_COMMANDS.get(_invoked_command(sys.argv) or "")
for _module in (_light,) if _light else COMMAND_MODULES:
    try:
        importlib.import_module(_module).register(main)
    except ModuleNotFoundError as exc:  # a command whose optional dependency is missing
        if exc.name == _module:
            raise
        click.echo(f"hookgate: {_module} unavailable ({exc})", err=True)
