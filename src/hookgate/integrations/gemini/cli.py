"""``hookgate gemini``: hookgate as Gemini CLI's hook, and ``hookgate gemini install|uninstall``.

* ``hookgate gemini [--config FILE | --gateway URL]``: what Gemini CLI runs for each hook
  event; its JSON on stdin, its JSON answer on stdout, always exit 0 (a deny when hookgate
  fails: Gemini CLI lets the tool run when a hook crashes or times out).
* ``hookgate gemini install --config FILE [--gateway URL] [--scope project|user]``: hookgate
  in ``.gemini/settings.json`` of the project, or the user's ``~/.gemini/settings.json``.
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
        HooksFile(path, "gemini").install(chosen, {"hooks": [
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
        removed = HooksFile(path, "gemini").uninstall()
    except HooksFileError as exc:
        raise click.ClickException(str(exc)) from None
    click.echo(f"removed {removed} hookgate hook group(s) from {path}")
