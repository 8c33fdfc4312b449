"""Hooks that would run twice: Claude Code command hooks still in ``settings.json`` after
``hookgate import claude-code`` copied them into the hooks file that ``hookgate claude-code``
runs. ``install`` finds them (:func:`imported_twice`) and can take them out of the settings
(:func:`remove_imported`)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hookgate.config import ConfigError, read_document
from hookgate.integrations.claude_code.settings_file import remove_hooks

__all__ = ["ImportedTwice", "hooks_file_beside", "imported_twice", "remove_imported"]

_NAMES = ("hookgate.yaml", "hookgate.yml", "hookgate.json")


@dataclass(frozen=True, slots=True)
class ImportedTwice:
    """A command hook of ``settings.json`` that the hooks file runs too (it was imported)."""

    event: str
    command: str

    def __str__(self) -> str:
        return f"{self.event}: {self.command}"


def hooks_file_beside(settings: Path) -> Path | None:
    """The hooks file ``hookgate claude-code`` finds next to these settings, if any."""
    for name in _NAMES:
        candidate = settings.parent / name
        if candidate.is_file():
            return candidate
    return None


def _imported_commands(hooks_file: Path) -> set[tuple[str, str]]:
    try:
        document = read_document(hooks_file)
    except ConfigError:
        return set()
    hooks = document.get("hooks") if isinstance(document, Mapping) else None
    found: set[tuple[str, str]] = set()
    for hook in hooks if isinstance(hooks, list) else []:
        config = hook.get("config") if isinstance(hook, Mapping) else None
        if isinstance(config, Mapping) and isinstance(config.get("command"), str):
            found.add((str(hook.get("event")), config["command"]))
    return found


def imported_twice(settings: Path, hooks_file: Path | None) -> list[ImportedTwice]:
    """Command hooks of ``settings`` that ``hooks_file`` also runs (as ``import claude-code``
    wrote them: same event, same command line)."""
    from hookgate.integrations.claude_code.settings_format import convert_settings

    if hooks_file is None or not settings.is_file():
        return []
    try:
        data = json.loads(settings.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    if not isinstance(data, Mapping) or not isinstance(data.get("hooks"), Mapping):
        return []
    imported = _imported_commands(hooks_file)
    twice: list[ImportedTwice] = []
    for raw in convert_settings(data).hooks:
        command = (raw.get("config") or {}).get("command")
        if isinstance(command, str) and (raw["event"], command) in imported:
            # the hook's name says where it was: "claude-code PreToolUse[0].hooks[1]"
            event = str(raw["name"]).split()[1].split("[")[0]
            twice.append(ImportedTwice(event, command))
    return twice


def remove_imported(settings: Path, twice: list[ImportedTwice]) -> int:
    """Take ``twice`` out of ``settings``; returns how many hooks were removed."""
    from hookgate.integrations.claude_code.settings_format import command_line

    wanted = {(d.event, d.command) for d in twice}

    def unwanted(event: str, hook: Any) -> bool:
        if not isinstance(hook, Mapping) or hook.get("type", "command") != "command":
            return False
        try:
            line = command_line(hook)
        except ValueError:
            return False
        return (event, line) in wanted

    return remove_hooks(settings, unwanted).removed
