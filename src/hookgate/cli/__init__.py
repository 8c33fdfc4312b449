"""The ``hookgate`` command. Each sub-command lives in its own module in this package.

Exit statuses are the same for every command: 0 success (an allowed event), 1 any error
(a usage error too), 2 only ever "blocked" (``fire``, the agent bridges).
"""

from __future__ import annotations

import importlib
import logging
import sys
from typing import Any

import click

from hookgate.integration_registry import integrations

__all__ = ["main"]

# Modules that each add commands to ``main`` (a ``register(main)`` function each); the
# integrations' own are added from their records (``_command_modules``).
COMMAND_MODULES: tuple[str, ...] = (
    "hookgate.cli.check",
    "hookgate.cli.fire",
    "hookgate.cli.demo",
    "hookgate.cli.events",
    "hookgate.cli.migrate",
    "hookgate.cli.serve",
    "hookgate.cli.keys",
    "hookgate.cli.db",
    "hookgate.cli.hooks",
    "hookgate.cli.approvals",
    "hookgate.cli.boundary",
    "hookgate.cli.mcp_proxy",
    "hookgate.cli.audit",
    "hookgate.cli.replay",
)
# Commands that run on every git push: when one of them is invoked, only its module loads
# (the others pull in the engine, the store and the gateway).
LIGHT_COMMANDS: dict[str, str] = {
    "scan": "hookgate.cli.boundary",
    "scrub": "hookgate.cli.boundary",
    "pre-push": "hookgate.cli.boundary",
}




def _command_modules() -> tuple[str, ...]:
    """Every module that adds commands: hookgate's own and the integrations'."""
    return (*COMMAND_MODULES, *(m for record in integrations() for m in record.cli_commands))


def bridge_commands() -> frozenset[str]:
    """Commands that are an agent's hook (the integrations' records say which): for them
    every failure, a usage error too, must answer "blocked" (exit 2), or the agent would go
    ahead."""
    return frozenset(name for record in integrations() for name in record.bridge_commands)


class HookgateGroup(click.Group):
    """The top-level group: a usage error exits 1 (click's default, 2, is our "blocked"),
    except in an agent bridge, where it blocks."""

    def make_context(self, *args: Any, **kwargs: Any) -> click.Context:
        try:
            return super().make_context(*args, **kwargs)
        except click.UsageError as exc:
            exc.exit_code = 1  # type: ignore[misc]  # click declares it on the class
            raise

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except click.UsageError as exc:
            exc.exit_code = 2 if _in_bridge(exc.ctx) else 1  # type: ignore[misc]
            raise


def _in_bridge(ctx: click.Context | None) -> bool:
    """Whether the failing context is a bridge run as a hook: ``hookgate claude-code`` itself,
    not one of its sub-commands (``claude-code install``) nor ``import codex``."""
    return (
        ctx is not None
        and ctx.info_name in bridge_commands()
        and ctx.parent is not None
        and ctx.parent.parent is None
    )


@click.group(
    cls=HookgateGroup,
    context_settings={"help_option_names": ["-h", "--help"]},
    epilog="""\b
Two families of commands reach the gateway's data:
  store commands (keys, db, hooks import|export) open the database
    directly, as the operator: --data-dir DIR (SQLite; HOOKGATE_DATA_DIR)
    or --database-url postgresql://... (HOOKGATE_DATABASE_URL); default:
    the per-user data directory, the one `hookgate serve` uses. A named
    --data-dir that does not exist is refused unless --init.
  gateway commands (approvals, claude-code/codex/gemini --gateway,
    mcp-proxy --gateway) talk to a running gateway: --gateway URL
    (HOOKGATE_GATEWAY_URL), and the API key in HOOKGATE_API_KEY (never a
    flag: other users can read command lines).
Exit status: 0 ok (allowed), 1 error (a usage error too), 2 blocked.""",)
@click.version_option(package_name="hookgate")
@click.option("-v", "--verbose", count=True, help="Log more (-v info, -vv debug).")
def main(verbose: int) -> None:
    """hookgate: lifecycle hooks for AI agents.

    Run hooks from a file (check, fire, demo, events), serve them to a fleet (serve), bridge
    coding agents and frameworks to them (claude-code, mcp-proxy), guard what leaves the
    host (scan, scrub, pre-push)."""
    level = logging.WARNING - 10 * min(verbose, 2)
    logging.basicConfig(level=level, stream=sys.stderr, format="%(levelname)s %(message)s")


def _invoked_command(argv: list[str]) -> str | None:
    for arg in argv[1:]:
        if not arg.startswith("-"):
            return arg
    return None


_light = LIGHT_COMMANDS.get(_invoked_command(sys.argv) or "")
for _module in (_light,) if _light else _command_modules():
    try:
        importlib.import_module(_module).register(main)
    except ModuleNotFoundError as exc:  # a command whose optional dependency is missing
        if exc.name == _module:
            raise
        click.echo(f"hookgate: {_module} unavailable ({exc})", err=True)
