"""``hookgate codex``: hookgate as Codex CLI's hook, and ``hookgate codex install|uninstall``.

* ``hookgate codex [--config FILE | --gateway URL]``: what Codex runs for each hook event;
  Codex's JSON on stdin, its JSON answer on stdout, always exit 0 (an explicit deny when
  hookgate fails: Codex would let the action run on an error).
* ``hookgate codex install --config FILE [--gateway URL] [--codex-home DIR]``: hooks.json
  for every event ``codex exec`` fires, and the trust entries in config.toml.
"""

from __future__ import annotations

import sys

import click

from hookgate.integrations.codex import install as codex_install
from hookgate.integrations.codex.contract import INSTALLED_EVENTS


def register(main: click.Group) -> None:
    main.add_command(codex)
    group = main.commands.get("import")
    if not isinstance(group, click.Group):
        group = click.Group("import", help="Turn other systems' hook configs into hookgate files.")
        main.add_command(group)
    group.add_command(import_codex)


@click.group("codex", invoke_without_command=True)
@click.option("-c", "--config", "config_path", type=click.Path(dir_okay=False), default=None,
              help="Hooks file (default: $HOOKGATE_CODEX_CONFIG).")
@click.option("--gateway", "gateway_url", default=None,
              help="Ask this hookgate gateway (http://host:port) instead of a hooks file; "
              "the API key comes from HOOKGATE_API_KEY.")
@click.pass_context
def codex(ctx: click.Context, config_path: str | None, gateway_url: str | None) -> None:
    """Run as Codex CLI's hook: Codex's JSON on stdin, its JSON answer on stdout."""
    if ctx.invoked_subcommand is not None:
        return
    from hookgate.integrations.agent_bridge import main
    from hookgate.integrations.codex.contract import CodexContract

    raise SystemExit(main(CodexContract(), config_path, gateway_url))


@codex.command("install")
@click.option("-c", "--config", "config_path", type=click.Path(dir_okay=False, exists=True),
              default=None, help="Hooks file the installed command passes with --config.")
@click.option("--gateway", "gateway_url", default=None,
              help="Ask this gateway instead; the key is read from HOOKGATE_API_KEY when Codex "
              "runs the hook.")
@click.option("--codex-home", default=None,
              help="Codex's folder (default: $CODEX_HOME, else ~/.codex).")
@click.option("-e", "--event", "events", multiple=True, type=click.Choice(INSTALLED_EVENTS),
              help="Codex event to hook (repeatable; default: all of "
              f"{', '.join(INSTALLED_EVENTS)}).")
@click.option("--timeout", type=click.IntRange(3, 600),
              default=codex_install.DEFAULT_TIMEOUT_S, show_default=True,
              help="Seconds Codex waits for hookgate.")
def install(config_path: str | None, gateway_url: str | None, codex_home: str | None,
            events: tuple[str, ...], timeout: int) -> None:
    """Add hookgate to Codex's hooks.json and trust it in config.toml."""
    if bool(config_path) == bool(gateway_url):
        raise click.UsageError("give exactly one of --config FILE and --gateway URL")
    if gateway_url and not gateway_url.startswith(("http://", "https://")):
        raise click.UsageError("--gateway must be an http:// or https:// URL")
    from hookgate.integrations.claude_code.settings_file import _hookgate_executable

    command = codex_install.bridge_command(_hookgate_executable(), config=config_path,
                                           gateway=gateway_url, timeout_s=timeout)
    home = codex_install.codex_home(codex_home)
    try:
        report = codex_install.install(home, command, events or INSTALLED_EVENTS,
                                       timeout_s=timeout)
    except codex_install.InstallError as exc:
        raise click.ClickException(str(exc)) from None
    click.echo(f"hookgate installed in {report.hooks_json} for: {', '.join(report.events)}")
    click.echo(f"trusted in {report.config_toml} (edit a hook and Codex skips it until "
               "`hookgate codex install` runs again)")
    from hookgate.integrations.claude_code.cli import start_warm_process

    start_warm_process()


@codex.command("uninstall")
@click.option("--codex-home", default=None,
              help="Codex's folder (default: $CODEX_HOME, else ~/.codex).")
def uninstall(codex_home: str | None) -> None:
    """Take hookgate out of Codex's hooks.json and config.toml."""
    home = codex_install.codex_home(codex_home)
    try:
        report = codex_install.uninstall(home)
    except codex_install.InstallError as exc:
        raise click.ClickException(str(exc)) from None
    click.echo(f"removed {report.removed} hookgate hook group(s) from {report.hooks_json}",
               file=sys.stdout)


@click.command("codex")
@click.argument("hooks_file", type=click.Path(dir_okay=False, exists=True))
@click.option("-o", "--output", type=click.Path(dir_okay=False), default=None,
              help="Write the hooks file here instead of stdout (.json writes JSON).")
def import_codex(hooks_file: str, output: str | None) -> None:
    """Convert the hooks of a Codex HOOKS_FILE (hooks.json) into a hookgate hooks file.

    Codex's hooks have Claude Code's shape and answer contract (permissionDecision deny,
    decision block, exit 2 with the reason), so each becomes a ``command`` hook with
    ``format: claude_code``; hookgate's own ``hookgate codex`` entries are left out. A hook
    that cannot be converted stops the import (exit 1, every problem listed, nothing
    written)."""
    from pathlib import Path

    from hookgate.integrations.claude_code.settings_format import (
        convert_settings,
        is_claude_settings,
    )
    from hookgate.integrations.hook_import import HooksImportError, finish_import, read_hooks_json
    from hookgate.integrations.hooks_json import HooksFile

    example = '{"hooks": {"PreToolUse": […]}}'
    try:
        document = read_hooks_json(hooks_file, agent="Codex", comments=False, example=example)
    except HooksImportError as exc:
        raise click.ClickException(str(exc)) from None
    if not is_claude_settings(document):
        raise click.ClickException(f"{hooks_file}: not a Codex hooks file ({example})")
    mine, skipped = HooksFile(Path(hooks_file), "codex").without_ours(document)
    notes = [f"{skipped} group(s) that run hookgate itself were skipped"] if skipped else []
    finish_import(convert_settings(mine), hooks_file, output, agent="codex", notes=notes)
