"""Claude Code's ``settings.json`` hooks section, read as hookgate definitions.

Told apart by shape: ``hooks`` is an object whose keys are Claude Code event names
(``PreToolUse``, ``Stop``, …) holding lists of ``{matcher, hooks: [...]}`` groups.

Each ``command`` hook becomes a hookgate ``command`` hook with ``format: claude_code`` (the
script runs unchanged). Matchers: ``*``, empty or missing match everything; a plain name or
``A|B`` list matches those tool names exactly; anything else is used as a regular expression.
``timeout`` (seconds) becomes ``timeout_ms``, capped at hookgate's 10 s (also when missing:
Claude Code's default is 600 s). ``onFailure: continue`` becomes ``on_error``/``on_timeout:
allow``; otherwise hookgate's fail-closed default applies where Claude Code fails open.

Not imported, with a message each: ``http``/``prompt``/``agent``/``mcp_tool`` hooks,
PowerShell hooks, events hookgate has no name for. Noted but imported: ``if`` rules (the
hook then runs for everything its matcher selects) and ``async``. Hooks that run
``hookgate claude-code`` itself are skipped: they are the bridge, not a hook.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from hookgate.config.formats import ConfigError, ConfigFormat
from hookgate.definition import MAX_TIMEOUT_MS, DefinitionError, HookDefinition
from hookgate.events import UnknownEventError, get_event
from hookgate.integrations.claude_code.settings_file import is_hookgate_hook

#: How long Claude Code waits for a command hook that sets no ``timeout``.
CLAUDE_DEFAULT_TIMEOUT_S: Final = 60

__all__ = [
    "CLAUDE_CODE",
    "Conversion",
    "command_line",
    "convert_settings",
    "is_claude_settings",
    "load_claude_settings",
    "translate_matcher",
]

_EXACT: Final = re.compile(r"[A-Za-z0-9_|]+")
_EVENT_KEY: Final = re.compile(r"[A-Z][A-Za-z]+")
_PICOCLAW_KEYS: Final = frozenset({"enabled", "defaults", "builtins", "processes"})


@dataclass(slots=True)
class Conversion:
    """Hook definitions (raw dicts) from a settings file, and what could not come along."""

    hooks: list[dict[str, Any]] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def is_claude_settings(document: Any) -> bool:
    if not isinstance(document, Mapping):
        return False
    hooks = document.get("hooks")
    if not isinstance(hooks, Mapping) or _PICOCLAW_KEYS & set(hooks):
        return False
    return all(
        isinstance(key, str) and _EVENT_KEY.fullmatch(key) and isinstance(value, list)
        for key, value in hooks.items()
    )


def translate_matcher(matcher: Any) -> str | None:
    """A Claude Code matcher as a hookgate matcher (an unanchored RE2 search)."""
    if matcher is None or matcher in ("", "*"):
        return None
    if not isinstance(matcher, str):
        raise ValueError("matcher must be a string")
    if _EXACT.fullmatch(matcher):
        names = [name for name in matcher.split("|") if name]
        return "^(?:" + "|".join(names) + ")$"
    return matcher


def convert_settings(document: Mapping[str, Any]) -> Conversion:
    """Every hook of a Claude Code settings document, as hookgate definitions."""
    out = Conversion()
    disabled = document.get("disableAllHooks") is True
    if disabled:
        out.notes.append("disableAllHooks is true: every imported hook is disabled")
    for event_name, groups in document["hooks"].items():
        try:
            spec = get_event(event_name)
        except UnknownEventError:
            out.problems.append(f"hooks.{event_name}: hookgate has no event for this name")
            continue
        for g, group in enumerate(groups):
            where = f"hooks.{event_name}[{g}]"
            if not isinstance(group, Mapping) or not isinstance(group.get("hooks"), list):
                out.problems.append(f"{where}: must be an object with a 'hooks' list")
                continue
            try:
                matcher = translate_matcher(group.get("matcher"))
            except ValueError as exc:
                out.problems.append(f"{where}.matcher: {exc}")
                continue
            for h, hook in enumerate(group["hooks"]):
                raw = _convert_hook(f"{where}.hooks[{h}]", hook, out)
                if raw is None:
                    continue
                raw.update(event=spec.name, matcher=matcher, scope="global")
                raw["name"] = f"claude-code {event_name}[{g}].hooks[{h}]"
                if disabled:
                    raw["enabled"] = False
                out.hooks.append(raw)
    return out


def command_line(hook: Mapping[str, Any]) -> str:
    """A Claude Code command hook's ``command`` and ``args`` as one shell command line."""
    command = str(hook.get("command"))
    args = hook.get("args")
    if not args:
        return command
    if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
        raise ValueError("must be a list of strings")
    return " ".join(shlex.quote(part) for part in (command, *args))


def _convert_hook(where: str, hook: Any, out: Conversion) -> dict[str, Any] | None:
    if not isinstance(hook, Mapping):
        out.problems.append(f"{where}: must be an object")
        return None
    kind = hook.get("type", "command")
    if kind != "command":
        out.problems.append(
            f"{where}: {kind!r} hooks are not imported (only command hooks); recreate it with "
            "a hookgate handler (http, prompt, agent)"
        )
        return None
    command = hook.get("command")
    if not isinstance(command, str) or not command.strip():
        out.problems.append(f"{where}.command: must be a non-empty string")
        return None
    if is_hookgate_hook(hook):
        out.notes.append(f"{where}: skipped, it runs hookgate itself (the bridge)")
        return None
    if hook.get("shell") not in (None, "bash", "sh"):
        out.problems.append(f"{where}.shell: {hook['shell']!r} hooks are not supported")
        return None
    try:
        command = command_line(hook)
    except ValueError as exc:
        out.problems.append(f"{where}.args: {exc}")
        return None
    timeout = hook.get("timeout")
    timeout_ms = MAX_TIMEOUT_MS
    if timeout is None:
        out.notes.append(
            f"{where}.timeout: not set, so Claude Code would wait {CLAUDE_DEFAULT_TIMEOUT_S} s; "
            f"imported as hookgate's most, {MAX_TIMEOUT_MS // 1000} s"
        )
    else:
        if not isinstance(timeout, int | float) or isinstance(timeout, bool) or timeout <= 0:
            out.problems.append(f"{where}.timeout: must be a positive number of seconds")
            return None
        timeout_ms = min(MAX_TIMEOUT_MS, max(1, int(timeout * 1000)))
        if timeout * 1000 > MAX_TIMEOUT_MS:
            out.notes.append(
                f"{where}.timeout: {timeout:g} s capped at hookgate's {MAX_TIMEOUT_MS // 1000} s"
            )
    raw: dict[str, Any] = {
        "handler_type": "command",
        "timeout_ms": timeout_ms,
        "config": {"command": command, "format": "claude_code"},
    }
    failure = hook.get("onFailure")
    if failure == "continue":
        raw["on_error"] = raw["on_timeout"] = "allow"
    elif failure not in (None, "block"):
        out.problems.append(f"{where}.onFailure: must be 'continue' or 'block'")
        return None
    if hook.get("if"):
        out.notes.append(
            f"{where}.if: the rule {hook['if']!r} is not imported; the hook runs for every "
            "call its matcher selects"
        )
    if hook.get("async"):
        out.notes.append(f"{where}.async: imported as a synchronous hook")
    return raw


def load_claude_settings(document: Any, *, edition: str, base_dir: Path) -> list[HookDefinition]:
    from hookgate.definition_model import validate_definition

    conversion = convert_settings(document)
    problems = list(conversion.problems)
    definitions = []
    for order, raw in enumerate(conversion.hooks, start=1):
        raw["order"] = order
        try:
            definitions.append(validate_definition(raw, edition=edition, default_scope="global"))
        except DefinitionError as exc:
            problems.extend(f"{raw['name']}.{p.field}: {p.message}" for p in exc.problems)
    if problems:
        raise ConfigError(problems)
    return definitions


CLAUDE_CODE: Final = ConfigFormat("claude_code", is_claude_settings, load_claude_settings)
