"""``hookgate claude-code``: hookgate as Claude Code's hook, and ``hookgate import claude-code``.

* ``hookgate claude-code [--config FILE]``: what Claude Code runs for each hook event; reads
  its JSON on stdin, answers in its JSON on stdout with its exit code.
* ``hookgate claude-code install|uninstall [--settings PATH | --user]``: edit settings.json.
* ``hookgate claude-code warm status|stop``: the warm process of :mod:`.warm`.
* ``hookgate import claude-code SETTINGS.json``: print a hookgate hooks file made from the
  hooks in a Claude Code settings file.
"""

from __future__ import annotations

import copy
import json
import os
import sys
from pathlib import Path
from typing import Any

import click

from hookgate.integrations.claude_code import settings_file as cc_settings


def register(main: click.Group) -> None:
    main.add_command(claude_code)
    group = main.commands.get("import")
    if not isinstance(group, click.Group):
        group = click.Group("import", help="Turn other systems' hook configs into hookgate files.")
        main.add_command(group)
    group.add_command(import_claude_code)


@click.group("claude-code", invoke_without_command=True)
@click.option(
    "-c",
    "--config",
    "config_path",
    type=click.Path(dir_okay=False),
    default=None,
    help="Hooks file (default: $HOOKGATE_CLAUDE_CODE_CONFIG, .claude/hookgate.yaml in the "
    "project, then ~/.claude/hookgate.yaml).",
)
@click.option(
    "--gateway",
    "gateway_url",
    envvar="HOOKGATE_GATEWAY_URL",
    default=None,
    help="Ask this hookgate gateway (http://host:port) instead of a local hooks file; the "
    "API key comes from HOOKGATE_API_KEY.",
)
@click.pass_context
def claude_code(ctx: click.Context, config_path: str | None, gateway_url: str | None) -> None:
    """Run as Claude Code's hook: Claude Code's JSON on stdin, its JSON answer on stdout."""
    if ctx.invoked_subcommand is not None:
        return
    from hookgate.integrations.claude_code.main import BridgeArgs, fail, run

    try:
        raw = sys.stdin.buffer.read()
    except Exception as exc:
        raise SystemExit(fail(None, f"cannot read stdin: {exc}", sys.stderr)) from None
    raise SystemExit(
        run(BridgeArgs(config_path, gateway_url), raw, stdout=sys.stdout, stderr=sys.stderr)
    )


def _settings_path(settings: str | None, user: bool) -> Path:
    if settings:
        return Path(settings)
    return cc_settings.default_settings_path(user=user)


@claude_code.command("install")
@click.option("--settings", "settings_file", type=click.Path(dir_okay=False), default=None,
              help="settings.json to edit (default: .claude/settings.json of this project).")
@click.option("--user", is_flag=True,
              help="Edit the user's settings.json ($CLAUDE_CONFIG_DIR, else ~/.claude).")
@click.option("-c", "--config", "config_path", type=click.Path(dir_okay=False), default=None,
              help="Hooks file the installed command passes with --config.")
@click.option("--gateway", "gateway_url", default=None,
              help="Ask this hookgate gateway (http://host:port) instead of a local hooks file; "
              "the key is read from HOOKGATE_API_KEY when Claude Code runs the hook.")
@click.option("--transport", type=click.Choice(cc_settings.TRANSPORTS), default="curl",
              show_default=True,
              help="With --gateway: curl (fail-closed, fast), http (Claude Code's own http "
              "hook; fail-closed through onFailure: block, Claude Code 2.1.295+) or python "
              "(fail-closed, slower start).")
@click.option("-e", "--event", "events", multiple=True,
              type=click.Choice(sorted(cc_settings.ALL_EVENTS)),
              help=f"Claude Code event to hook (repeatable; default: "
              f"{', '.join(cc_settings.DEFAULT_EVENTS)}).")
@click.option("--timeout", type=click.IntRange(3, 600), default=cc_settings.DEFAULT_TIMEOUT_S,
              show_default=True, help="Seconds Claude Code waits for hookgate.")
@click.option("--all-events", is_flag=True,
              help="Hook every Claude Code event (all but WorktreeCreate, whose hook would "
              "replace Claude Code's own worktree creation).")
@click.option("--move-imported/--keep-imported", "move_imported", default=None,
              help="Hooks that `hookgate import claude-code` copied into the hooks file would "
              "run twice: take them out of settings.json (asked when interactive).")
def install(
    settings_file: str | None,
    user: bool,
    config_path: str | None,
    gateway_url: str | None,
    transport: str,
    events: tuple[str, ...],
    timeout: int,
    all_events: bool,
    move_imported: bool | None,
) -> None:
    """Add hookgate to the hooks of a Claude Code settings.json."""
    if all_events and events:
        raise click.UsageError("--all-events and --event exclude each other")
    chosen = cc_settings.ALL_EVENTS if all_events else (events or cc_settings.DEFAULT_EVENTS)
    from hookgate.integrations.claude_code.imported_twice import (
        hooks_file_beside,
        imported_twice,
        remove_imported,
    )

    path = _settings_path(settings_file, user)
    if gateway_url and config_path:
        raise click.UsageError("--config and --gateway exclude each other")
    if gateway_url:
        if not gateway_url.startswith(("http://", "https://")):
            raise click.UsageError("--gateway must be an http:// or https:// URL")
        url = gateway_url

        def hook_for(event: str) -> dict[str, Any]:
            return cc_settings.gateway_hook(url, event=event, transport=transport,
                                            timeout_s=timeout)
    else:
        bridge = cc_settings.bridge_hook(config_path, timeout_s=timeout)

        def hook_for(event: str) -> dict[str, Any]:
            return copy.deepcopy(bridge)  # an entry of its own for each event

    try:
        report = cc_settings.install(
            path, events=chosen, hook_for=hook_for
        )
    except cc_settings.SettingsError as exc:
        raise click.ClickException(str(exc)) from None
    for label, names in (("added", report.added), ("updated", report.updated),
                         ("already installed", report.unchanged)):
        if names:
            click.echo(f"{path}: {label}: {', '.join(names)}")
    click.echo(f"hook: {json.dumps(hook_for(chosen[0]))}")
    if gateway_url is None:
        start_warm_process()
        hooks_file = Path(config_path) if config_path else hooks_file_beside(path)
        twice = imported_twice(path, hooks_file)
        if twice:
            _offer_to_move(path, hooks_file, twice, move_imported, remove_imported)


def _offer_to_move(path: Path, hooks_file: Path | None, twice: list[Any],
                   move: bool | None, remove: Any) -> None:
    listing = "".join(f"\n  {hook}" for hook in twice)
    click.echo(f"{len(twice)} hook(s) in {path} are also in {hooks_file} (imported) and "
               f"would run twice:{listing}", err=True)
    if move is None and sys.stdin.isatty():
        move = click.confirm(f"Take them out of {path}?", default=True, err=True)
    if move:
        removed = remove(path, twice)
        click.echo(f"{path}: removed {removed} imported hook(s); hookgate runs them now",
                   err=True)
    elif move is None:
        click.echo("warning: they run twice; rerun with --move-imported to take them out of "
                   "settings.json, or --keep-imported to keep both", err=True)


def start_warm_process() -> None:
    """The warm process, started now: the first event of the next session finds it."""
    from hookgate.integrations.claude_code.relay import prestart

    if prestart():
        click.echo("warm process: started (or already running); it answers the events "
                   "and exits after HOOKGATE_CLAUDE_CODE_WARM_IDLE seconds idle (3600)",
                   err=True)


@claude_code.group("warm")
def warm() -> None:
    """The warm process that answers ``hookgate claude-code`` events (see docs/claude-code.md)."""


def _warm_sockets() -> list[Path]:
    from hookgate.integrations.claude_code.warm_place import folder_of, usable_folder

    folder = folder_of(os.environ)
    if not os.path.isdir(folder) or not usable_folder(folder):
        return []
    return sorted(Path(folder).glob("cc-*.sock"))


def _ask_warm(sock_path: Path, kind: bytes) -> str | None:
    import socket

    from hookgate.integrations.claude_code import warm_wire as wire
    from hookgate.integrations.claude_code.warm_place import peer_uid

    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.settimeout(10)
            sock.connect(str(sock_path))
            if peer_uid(sock) != os.getuid():
                return None
            sock.sendall(wire.pack(kind, []))
            chunks = []
            while chunk := sock.recv(4096):
                chunks.append(chunk)
    except OSError:
        return None
    return b"".join(chunks).decode("utf-8", "replace")


@warm.command("status")
def warm_status() -> None:
    """List the warm processes of this user (each one's pid, socket, start, idle timeout)."""
    from hookgate.integrations.claude_code import warm_wire as wire

    found = 0
    for sock_path in _warm_sockets():
        answer = _ask_warm(sock_path, wire.STATUS)
        if answer:
            found += 1
            click.echo(answer)
    if not found:
        click.echo("no warm hookgate claude-code process")


@warm.command("stop")
def warm_stop() -> None:
    """Stop every warm process of this user (the next event starts a new one)."""
    from hookgate.integrations.claude_code import warm_wire as wire

    for sock_path in _warm_sockets():
        status = _ask_warm(sock_path, wire.STATUS)
        if status and _ask_warm(sock_path, wire.STOP) == "K":
            pid = next((line.split(": ", 1)[1] for line in status.splitlines()
                        if line.startswith("pid: ")), "?")
            click.echo(f"stopped {pid}")


@claude_code.command("uninstall")
@click.option("--settings", "settings_file", type=click.Path(dir_okay=False), default=None,
              help="settings.json to edit (default: .claude/settings.json of this project).")
@click.option("--user", is_flag=True,
              help="Edit the user's settings.json ($CLAUDE_CONFIG_DIR, else ~/.claude).")
def uninstall(settings_file: str | None, user: bool) -> None:
    """Remove what ``install`` added (any transport); the rest of the file stays as it was."""
    path = _settings_path(settings_file, user)
    try:
        report = cc_settings.uninstall(path)
    except cc_settings.SettingsError as exc:
        raise click.ClickException(str(exc)) from None
    if report.removed:
        click.echo(f"{path}: removed {report.removed} hook(s) from {', '.join(report.updated)}")
    else:
        click.echo(f"{path}: hookgate is not installed there")


@click.command("claude-code")
@click.argument("settings_file", type=click.Path(dir_okay=False, exists=True))
@click.option("-o", "--output", type=click.Path(dir_okay=False), default=None,
              help="Write the hooks file here instead of stdout (.json writes JSON).")
def import_claude_code(settings_file: str, output: str | None) -> None:
    """Convert the hooks of a Claude Code SETTINGS_FILE into a hookgate hooks file.

    A hook of a type hookgate does not run (``http``, ``prompt``, ``mcp_tool``, …) is listed
    as not imported and stays Claude Code's own; a converted hook that would not load (a
    matcher RE2 cannot run, say) stops the import with nothing written."""
    from hookgate.integrations.claude_code.settings_format import (
        convert_settings,
        is_claude_settings,
    )
    from hookgate.integrations.hook_import import (
        HooksImportError,
        definition_problems,
        read_hooks_json,
        write_conversion,
    )

    example = '{"hooks": {"PreToolUse": […]}}'
    try:
        document = read_hooks_json(
            settings_file, agent="Claude Code", comments=False, example=example
        )
    except HooksImportError as exc:
        raise click.ClickException(str(exc)) from None
    if not is_claude_settings(document):
        raise click.ClickException(f"{settings_file}: no Claude Code hooks section ({example})")
    conversion = convert_settings(document)
    unloadable = definition_problems(conversion)
    if unloadable:
        for problem in unloadable:
            click.echo(f"not imported: {problem}", err=True)
        raise click.ClickException(
            f"{len(unloadable)} converted hook(s) of {settings_file} would not load; "
            "nothing written"
        )
    write_conversion(conversion, output)

