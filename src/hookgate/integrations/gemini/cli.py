"""``hookgate gemini``: hookgate as Gemini CLI's hook, and ``hookgate gemini install|uninstall``.

* ``hookgate gemini [--config FILE | --gateway URL]``: what Gemini CLI runs for each hook
  event; its JSON on stdin, its JSON answer on stdout, always exit 0 (a deny when hookgate
  fails: Gemini CLI lets the tool run when a hook crashes or times out).
* ``hookgate gemini install --config FILE [--gateway URL] [--scope project|user]``: hookgate
  in ``.gemini/settings.json`` of the project, or the user's ``~/.gemini/settings.json``.
* ``hookgate import gemini SETTINGS.json [-o FILE]``: a hookgate hooks file made from the
  hooks in a Gemini CLI settings file (:mod:`.settings_import`).
"""

from __future__ import annotations

from pathlib import Path

import click

from hookgate.integrations.gemini.contract import GEMINI_EVENTS, INSTALLED_EVENTS
from hookgate.integrations.hooks_json import HooksFile, HooksFileError

#: Milliseconds Gemini CLI gives hookgate per event (its own default is 60,000).
DEFAULT_TIMEOUT_MS = 30_000


def register(main: click.Group) -> None:
    main.add_command(gemini)
    group = main.commands.get("import")
    if not isinstance(group, click.Group):
        group = click.Group("import", help="Turn other systems' hook configs into hookgate files.")
        main.add_command(group)
    group.add_command(import_gemini)


@click.group("gemini", invoke_without_command=True)
@click.option("-c", "--config", "config_path", type=click.Path(dir_okay=False), default=None,
              help="Hooks file (default: $HOOKGATE_GEMINI_CONFIG).")
@click.option("--gateway", "gateway_url", default=None,
              help="Ask this hookgate gateway (http://host:port) instead of a hooks file; "
              "the API key comes from HOOKGATE_API_KEY.")
@click.pass_context
def gemini(ctx: click.Context, config_path: str | None, gateway_url: str | None) -> None:
    """Run as Gemini CLI's hook: Gemini's JSON on stdin, its JSON answer on stdout."""
    if ctx.invoked_subcommand is not None:
        return
    from hookgate.integrations.agent_bridge import main
    from hookgate.integrations.gemini.contract import GeminiContract

    raise SystemExit(main(GeminiContract(), config_path, gateway_url))


def settings_path(scope: str, settings: str | None) -> Path:
    if settings:
        return Path(settings)
    if scope == "user":
        return Path.home() / ".gemini" / "settings.json"
    return Path.cwd() / ".gemini" / "settings.json"


@gemini.command("install")
@click.option("-c", "--config", "config_path", type=click.Path(dir_okay=False, exists=True),
              default=None, help="Hooks file the installed command passes with --config.")
@click.option("--gateway", "gateway_url", default=None,
              help="Ask this gateway instead; the key is read from HOOKGATE_API_KEY when "
              "Gemini CLI runs the hook.")
@click.option("--scope", type=click.Choice(["project", "user"]), default="project",
              show_default=True, help="The project's .gemini/settings.json or the user's.")
@click.option("--settings", "settings_file", type=click.Path(dir_okay=False), default=None,
              help="The settings.json to edit (instead of --scope's).")
@click.option("-e", "--event", "events", multiple=True, type=click.Choice(sorted(GEMINI_EVENTS)),
              help="Gemini CLI event to hook (repeatable; default: "
              f"{', '.join(INSTALLED_EVENTS)}).")
@click.option("--timeout", type=click.IntRange(3, 600), default=DEFAULT_TIMEOUT_MS // 1000,
              show_default=True, help="Seconds Gemini CLI waits for hookgate.")
def install(config_path: str | None, gateway_url: str | None, scope: str,
            settings_file: str | None, events: tuple[str, ...], timeout: int) -> None:
    """Add hookgate to a Gemini CLI settings.json."""
    if bool(config_path) == bool(gateway_url):
        raise click.UsageError("give exactly one of --config FILE and --gateway URL")
    if gateway_url and not gateway_url.startswith(("http://", "https://")):
        raise click.UsageError("--gateway must be an http:// or https:// URL")
    from hookgate.integrations.claude_code.settings_file import _hookgate_executable
    from hookgate.integrations.codex.install import bridge_command

    command = bridge_command(_hookgate_executable(), config=config_path, gateway=gateway_url,
                             agent="gemini", timeout_s=timeout)
    path = settings_path(scope, settings_file)
    chosen = events or INSTALLED_EVENTS
    try:
        HooksFile(path, "gemini", comments=True).install(chosen, {"hooks": [
            {"type": "command", "name": "hookgate", "command": command,
             "timeout": timeout * 1000}]})
    except HooksFileError as exc:
        raise click.ClickException(str(exc)) from None
    click.echo(f"hookgate installed in {path} for: {', '.join(chosen)}")
    from hookgate.integrations.claude_code.cli import start_warm_process

    start_warm_process()
    if scope == "project" and not settings_file:
        click.echo("note: Gemini CLI loads a project's hooks only in a trusted folder; "
                   "`gemini --skip-trust` silently drops them (use --scope user there).",
                   err=True)


@gemini.command("uninstall")
@click.option("--scope", type=click.Choice(["project", "user"]), default="project",
              show_default=True)
@click.option("--settings", "settings_file", type=click.Path(dir_okay=False), default=None)
def uninstall(scope: str, settings_file: str | None) -> None:
    """Take hookgate out of a Gemini CLI settings.json."""
    path = settings_path(scope, settings_file)
    try:
        removed = HooksFile(path, "gemini", comments=True).uninstall()
    except HooksFileError as exc:
        raise click.ClickException(str(exc)) from None
    click.echo(f"removed {removed} hookgate hook group(s) from {path}")


@click.command("gemini")
@click.argument("settings_file", type=click.Path(dir_okay=False, exists=True))
@click.option("-o", "--output", type=click.Path(dir_okay=False), default=None,
              help="Write the hooks file here instead of stdout (.json writes JSON).")
def import_gemini(settings_file: str, output: str | None) -> None:
    """Convert the hooks of a Gemini CLI SETTINGS_FILE (settings.json) into a hookgate hooks
    file.

    Each command hook becomes a ``command`` hook with ``format: gemini`` (the script runs
    unchanged, shown Gemini's input and read by Gemini's answer contract) on hookgate's event;
    matchers keep their meaning under hookgate's tool names; ``timeout`` (ms) becomes
    ``timeout_ms``; hookgate's own ``hookgate gemini`` entries are left out. A hook that
    cannot be converted stops the import (exit 1, every problem listed, nothing written)."""
    from hookgate.integrations.gemini.settings_import import (
        convert_gemini_settings,
        read_gemini_settings,
    )
    from hookgate.integrations.hook_import import HooksImportError, finish_import

    try:
        document = read_gemini_settings(settings_file)
    except HooksImportError as exc:
        raise click.ClickException(str(exc)) from None
    conversion = convert_gemini_settings(document, Path(settings_file))
    finish_import(conversion, settings_file, output, agent="gemini")
