"""Install hookgate as Claude Code's hook in a ``settings.json``, and take it out again.

:func:`install` adds one matcher group per event, holding one ``command`` hook that runs
``hookgate claude-code``; it never edits the user's own groups, and running it twice
changes nothing (or updates the command in place). :func:`uninstall` removes exactly the
hooks whose command is a ``hookgate claude-code`` call, then the groups, event lists and
``hooks`` object that only existed for them.

The rest of the file is kept as it was. ``install`` saves the file's original text beside
it (``.settings.json.hookgate-original``); when ``uninstall`` leaves the same settings as
that original, the original bytes come back exactly (and a file that did not exist is
removed again). If the settings changed in between, the file is rewritten keeping its key
order, indentation and final newline.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import sys
import tempfile
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from hookgate.errors import HookgateError
from hookgate.integrations.claude_code.gateway_transport import CLAUDE_CODE_PATH

__all__ = [
    "CLAUDE_CODE_PATH",
    "ALL_EVENTS",
    "DEFAULT_EVENTS",
    "TRANSPORTS",
    "InstallReport",
    "SettingsError",
    "bridge_command",
    "claude_config_dir",
    "curl_command",
    "default_settings_path",
    "gateway_hook",
    "install",
    "bridge_hook",
    "is_bridge_command",
    "is_hookgate_hook",
    "remove_hooks",
    "uninstall",
]

#: The events ``install`` hooks by default.
DEFAULT_EVENTS: Final = ("PreToolUse", "PostToolUse", "UserPromptSubmit", "Stop", "SessionStart")
#: What ``install --all-events`` hooks: every Claude Code event but WorktreeCreate, whose
#: hook replaces Claude Code's own worktree creation (it must answer the path).
ALL_EVENTS: Final = tuple(
    name for name in (
        "SessionStart", "Setup", "InstructionsLoaded", "UserPromptSubmit",
        "UserPromptExpansion", "PreToolUse", "PermissionRequest", "PermissionDenied",
        "PostToolUse", "PostToolUseFailure", "PostToolBatch", "Notification", "MessageDisplay",
        "Stop", "StopFailure", "SubagentStart", "SubagentStop", "PreCompact", "PostCompact",
        "Elicitation", "ElicitationResult", "TeammateIdle", "TaskCreated", "TaskCompleted",
        "CwdChanged", "FileChanged", "ConfigChange", "WorktreeRemove", "PreModelSwitch",
        "PostModelSwitch", "DirectoryAdded", "SessionEnd",
    )
)
#: Events whose groups take a matcher (tool events and SessionStart's source).
_MATCHED: Final = frozenset(
    {
        "PreToolUse",
        "PostToolUse",
        "PostToolUseFailure",
        "PermissionRequest",
        "SessionStart",
        "Notification",
        "PreCompact",
        "SubagentStart",
        "SubagentStop",
    }
)
# A command that runs the hookgate executable (any path, or python -m hookgate) with the
# claude-code sub-command and nothing but options after it.
_BRIDGE: Final = re.compile(
    r"""(?:^|[\s/'"])hookgate(?:\.cli)?['"]?\s+(?:(?:-\S+\s+)*)claude-code(?:\s+-[^\n]*)?\s*$"""
)
#: Seconds Claude Code gives the bridge (hookgate's own hooks stop at 10 s each).
DEFAULT_TIMEOUT_S: Final = 30
#: How Claude Code reaches a gateway: curl (fail-closed, default), Claude Code's own http
#: hook (fail-closed only through onFailure: "block", Claude Code 2.1.295+), or the Python
#: bridge (fail-closed, slower start).
TRANSPORTS: Final = ("curl", "http", "python")
#: The shell variable the curl hook keeps the gateway's answer in (it marks the hook as ours).
_CURL_ANSWER: Final = "HOOKGATE_ANSWER"
#: Events where exit 2 stops the action (kept in step with the bridge's own rule).
_BLOCKING: Final = frozenset({"PreToolUse", "PermissionRequest", "UserPromptSubmit"})


class SettingsError(HookgateError, ValueError):
    """The settings file cannot be read or does not have Claude Code's shape."""


@dataclass(slots=True)
class InstallReport:
    path: Path
    added: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    removed: int = 0


def is_bridge_command(command: Any) -> bool:
    return isinstance(command, str) and _BRIDGE.search(command.strip()) is not None


def is_hookgate_hook(hook: Any) -> bool:
    """A hook ``install`` wrote: the bridge command, the curl command or the http hook that
    post to the gateway's Claude Code endpoint."""
    if not isinstance(hook, Mapping):
        return False
    if hook.get("type") == "http":
        url = hook.get("url")
        return isinstance(url, str) and url.rstrip("/").endswith(CLAUDE_CODE_PATH)
    command = hook.get("command")
    args = hook.get("args")
    if isinstance(command, str) and isinstance(args, list) and all(
        isinstance(arg, str) for arg in args
    ):
        command = shlex.join([command, *args])  # the exec form
    if is_bridge_command(command):
        return True
    return (
        isinstance(command, str)
        # today's form, and the bare ``curl …`` of earlier installs (still removed)
        and command.startswith((f"{_CURL_ANSWER}=$(curl ", "curl "))
        and CLAUDE_CODE_PATH in command
        and "HOOKGATE_API_KEY" in command
    )


def _endpoint(gateway: str) -> str:
    return gateway.rstrip("/") + CLAUDE_CODE_PATH


def curl_command(gateway: str, *, event: str, timeout_s: int = DEFAULT_TIMEOUT_S) -> str:
    """A command hook that posts Claude Code's input to the gateway with curl.

    It prints the gateway's answer only when curl succeeded, the status is 200, the content
    type is JSON and the body is a JSON object; anything else (gateway down or slow, a refused
    key, an error status, a redirect, a 204, an HTML page from a proxy in front of the gateway)
    exits 2 on events where that stops the action, 1 elsewhere: curl's own exit 0 on a page
    that is not the gateway's answer would let Claude Code run the tool. curl gives up before
    Claude Code's own timeout would (a timed-out hook lets the action proceed) and follows no
    redirect. The key goes in through a here-document on file descriptor 3, so it never shows
    in the process list. Every value the shell sees is single-quoted: a URL holding ``$(…)``
    is never run.
    """
    url = shlex.quote(_endpoint(gateway))
    code = 2 if event in _BLOCKING else 1
    limit = max(1, timeout_s - 2)
    failed = (f"printf 'hookgate: gateway %s did not answer with its JSON (curl exit %s,"
              f" HTTP %s)\\n' {url} \"$s\" \"$meta\" >&2; exit {code}")
    return (
        f"{_CURL_ANSWER}=$(curl -sS --fail-with-body --max-redirs 0 --proto =http,https"
        f" -m {limit} --connect-timeout {min(5, limit)}"
        " -H 'Content-Type: application/json' -H @/dev/fd/3 --data-binary @-"
        f" -w '\\n%{{http_code}} %{{content_type}}' {url} 3<<HOOKGATE_KEY\n"
        "Authorization: Bearer $HOOKGATE_API_KEY\nHOOKGATE_KEY\n"
        ")\n"
        "s=$?; meta=${HOOKGATE_ANSWER##*\'\n\'}; body=${HOOKGATE_ANSWER%\'\n\'*}\n"
        "case \"$s $meta\" in '0 200 application/json'|'0 200 application/json;'*) ;;"
        f" *) {failed};; esac\n"
        f"case \"$body\" in '{{'*'}}') printf '%s\\n' \"$body\";; *) {failed};; esac"
    )


def gateway_hook(
    gateway: str,
    *,
    event: str,
    transport: str = "curl",
    timeout_s: int = DEFAULT_TIMEOUT_S,
    executable: str | None = None,
) -> dict[str, Any]:
    """The hook entry for ``event`` that asks ``gateway`` through ``transport``."""
    if transport == "curl":
        return {"type": "command", "command": curl_command(gateway, event=event,
                                                           timeout_s=timeout_s),
                "timeout": timeout_s}
    if transport == "http":
        return {"type": "http", "url": _endpoint(gateway),
                "headers": {"Authorization": "Bearer $HOOKGATE_API_KEY"},
                "allowedEnvVars": ["HOOKGATE_API_KEY"], "timeout": timeout_s}
    if transport == "python":
        exe = executable or _hookgate_executable()
        command = " ".join(shlex.quote(p) for p in (exe, "claude-code", "--gateway", gateway))
        return {"type": "command", "command": command, "timeout": timeout_s}
    raise ValueError(f"transport must be one of {', '.join(TRANSPORTS)}, not {transport!r}")


def bridge_command(config: str | None = None, executable: str | None = None, *,
                   timeout_s: int = DEFAULT_TIMEOUT_S) -> str:
    """The command line Claude Code runs: the shell relay (:mod:`.shell_relay`) where it can
    serve, else hookgate's own executable; absolute paths."""
    from hookgate.integrations.claude_code.shell_relay import hook_command

    return hook_command(*_bridge_call(config, executable), timeout_s)


def bridge_hook(config: str | None = None, executable: str | None = None, *,
                timeout_s: int = DEFAULT_TIMEOUT_S) -> dict[str, Any]:
    """The hook entry ``install`` writes without a gateway: the compiled relay in Claude
    Code's exec form (``command`` the binary, ``args`` its arguments: Claude Code starts it
    without a shell), else :func:`bridge_command` in shell form."""
    from hookgate.integrations.claude_code import compiled_relay, shell_relay

    binary = compiled_relay.build() if shell_relay.available() else None
    if binary is None:
        return {"type": "command", "command": bridge_command(config, executable,
                                                             timeout_s=timeout_s),
                "timeout": timeout_s}
    program, *args = shell_relay.relay_argv(*_bridge_call(config, executable), timeout_s,
                                            binary=binary)
    return {"type": "command", "command": program, "args": args, "timeout": timeout_s}


def _bridge_call(config: str | None, executable: str | None) -> tuple[str, str, list[str]]:
    """hookgate's executable, the sub-command and its options, absolute paths."""
    options = ["--config", str(Path(config).resolve())] if config else []
    return executable or _hookgate_executable(), "claude-code", options


def _hookgate_executable() -> str:
    beside = Path(sys.executable).parent / "hookgate"
    if beside.is_file():
        return str(beside)
    return shutil.which("hookgate") or "hookgate"


def claude_config_dir(
    environ: Mapping[str, str] | None = None, home: Path | None = None
) -> Path:
    """Claude Code's user folder: ``$CLAUDE_CONFIG_DIR``, else ``~/.claude``."""
    env = os.environ if environ is None else environ
    configured = env.get("CLAUDE_CONFIG_DIR")
    if configured:
        return Path(configured).expanduser()
    return (home or Path.home()) / ".claude"


def default_settings_path(
    *,
    user: bool,
    cwd: Path | None = None,
    home: Path | None = None,
    environ: Mapping[str, str] | None = None,
) -> Path:
    """``.claude/settings.json`` of the project (``cwd``), or the user's settings.json in
    Claude Code's user folder (``$CLAUDE_CONFIG_DIR`` or ``~/.claude``)."""
    if user:
        return claude_config_dir(environ, home) / "settings.json"
    return (cwd or Path.cwd()) / ".claude" / "settings.json"


def _original_path(path: Path) -> Path:
    return path.with_name(f".{path.name}.hookgate-original")


@dataclass(slots=True)
class _Document:
    data: dict[str, Any]
    indent: str
    newline: bool


def _read(path: Path) -> _Document | None:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise SettingsError(f"{path}: cannot read: {exc.strerror or exc}") from None
    if not text.strip():
        return _Document({}, "  ", True)
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise SettingsError(f"{path}:{exc.lineno}:{exc.colno}: invalid JSON: {exc.msg}") from None
    if not isinstance(data, dict):
        raise SettingsError(f"{path}: a settings file must hold a JSON object")
    found = re.search(r"^\{[ \t]*\r?\n([ \t]+)\S", text)
    return _Document(data, found.group(1) if found else "  ", text.endswith("\n"))


def _write(path: Path, document: _Document) -> None:
    text = json.dumps(document.data, indent=document.indent, ensure_ascii=False)
    if document.newline:
        text += "\n"
    _write_text(path, text)


def _write_text(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    mode = path.stat().st_mode & 0o777 if path.exists() else 0o644
    # Write beside the file and rename, so Claude Code never reads half a file.
    fd, temp = tempfile.mkstemp(prefix=".settings.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.chmod(temp, mode)
        os.replace(temp, path)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise


def _hooks_section(path: Path, data: Mapping[str, Any]) -> Any:
    hooks = data.get("hooks")
    if hooks is not None and not isinstance(hooks, dict):
        raise SettingsError(f"{path}: 'hooks' must be an object of event lists")
    return hooks


def install(
    path: Path,
    command: str | None = None,
    *,
    events: Iterable[str] = DEFAULT_EVENTS,
    timeout_s: int = DEFAULT_TIMEOUT_S,
    hook_for: Callable[[str], dict[str, Any]] | None = None,
) -> InstallReport:
    """Add hookgate's hook for each event (``command``, or the entry ``hook_for(event)``
    makes); idempotent, and a different transport or command replaces the old entry."""
    if hook_for is None:
        if command is None:
            raise ValueError("install needs a command or hook_for")
        bridge = command

        def hook_for(event: str) -> dict[str, Any]:
            return {"type": "command", "command": bridge, "timeout": timeout_s}

    report = InstallReport(path)
    existing = _read(path)
    document = existing or _Document({}, "  ", True)
    hooks = _hooks_section(path, document.data)
    if hooks is None:
        hooks = document.data["hooks"] = {}
    for event in events:
        groups = hooks.setdefault(event, [])
        if not isinstance(groups, list):
            raise SettingsError(f"{path}: hooks.{event} must be a list of matcher groups")
        wanted = hook_for(event)
        if event in _BLOCKING:
            # Claude Code (2.1.295+) lets the action run when a hook crashes, times out or,
            # for an http hook, cannot reach its URL; "block" stops it instead, whatever
            # the transport.
            wanted = {**wanted, "onFailure": "block"}
        ours = [
            (group["hooks"], index)
            for group in groups
            if isinstance(group, dict) and isinstance(group.get("hooks"), list)
            for index, hook in enumerate(group["hooks"])
            if is_hookgate_hook(hook)
        ]
        if ours:
            inner, index = ours[0]
            if inner[index] == wanted:
                report.unchanged.append(event)
            else:
                inner[index] = wanted
                report.updated.append(event)
            continue
        group: dict[str, Any] = {"matcher": "*"} if event in _MATCHED else {}
        group["hooks"] = [wanted]
        groups.append(group)
        report.added.append(event)
    if report.added or report.updated:
        original = _original_path(path)
        if not original.exists() and not report.updated and not report.unchanged:
            # First install into this file: remember it as it was, for uninstall.
            text = path.read_text(encoding="utf-8") if existing is not None else None
            original.parent.mkdir(parents=True, exist_ok=True)
            original.write_text(json.dumps({"text": text}), encoding="utf-8")
        _write(path, document)
    return report


def uninstall(path: Path) -> InstallReport:
    """Remove every hook ``install`` wrote, and the containers only they filled."""
    report = remove_hooks(path, lambda event, hook: is_hookgate_hook(hook), restore=True)
    _original_path(path).unlink(missing_ok=True)
    return report


def remove_hooks(
    path: Path, unwanted: Callable[[str, Any], bool], *, restore: bool = False
) -> InstallReport:
    """Remove the hooks for which ``unwanted(event, hook)`` holds, and the groups, event
    lists and ``hooks`` object that only held them. With ``restore``, the original text
    saved by ``install`` comes back when the settings are the same as it."""
    report = InstallReport(path)
    document = _read(path)
    if document is None:
        return report
    hooks = _hooks_section(path, document.data)
    if not hooks:
        return report
    for event in list(hooks):
        groups = hooks[event]
        if not isinstance(groups, list):
            continue
        kept_groups = []
        touched = False
        for group in groups:
            inner = group.get("hooks") if isinstance(group, dict) else None
            if not isinstance(inner, list):
                kept_groups.append(group)
                continue
            kept = [h for h in inner if not unwanted(event, h)]
            if len(kept) == len(inner):
                kept_groups.append(group)
                continue
            touched = True
            report.removed += len(inner) - len(kept)
            if kept:
                group["hooks"] = kept
                kept_groups.append(group)
        if touched:
            report.updated.append(event)
            if kept_groups:
                hooks[event] = kept_groups
            else:
                del hooks[event]
    if report.removed:
        if not hooks:
            del document.data["hooks"]
        if not (restore and _restore_original(path, document.data)):
            _write(path, document)
    return report


def _restore_original(path: Path, data: Mapping[str, Any]) -> bool:
    """Put back the saved original when it holds exactly ``data``; False if it cannot."""
    try:
        saved = json.loads(_original_path(path).read_text(encoding="utf-8"))
        text = saved["text"]
    except (OSError, ValueError, KeyError, TypeError):
        return False
    if text is None:  # the file did not exist before install
        if data:
            return False
        path.unlink(missing_ok=True)
        return True
    try:
        if not isinstance(text, str) or json.loads(text) != data:
            return False
    except ValueError:
        return False
    _write_text(path, text)
    return True
