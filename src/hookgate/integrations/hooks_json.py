"""A JSON file with Claude Code's hook layout (``{"hooks": {Event: [group, …]}, …}``) that
hookgate adds its own groups to and takes them out of again: Codex CLI's ``hooks.json`` and
Gemini CLI's ``settings.json`` (Claude Code's own ``settings.json`` has its installer in
:mod:`hookgate.integrations.claude_code.settings_file`).

A group is hookgate's when one of its commands runs ``hookgate <agent>``. Before the first
install, an existing file is kept beside it (``<name>.before-hookgate``) so that uninstall
gives back the same bytes when nothing else changed; a file install created is removed.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Final

from hookgate.errors import HookgateError

__all__ = ["HooksFile", "HooksFileError", "replace_text", "strip_comments"]

_BACKUP_SUFFIX: Final = ".before-hookgate"


def strip_comments(text: str) -> str:
    """``//`` and ``/* */`` comments out of JSON (Gemini CLI allows them in its settings.json),
    strings left alone; each comment becomes spaces so positions in errors still hold."""
    out: list[str] = []
    index, length = 0, len(text)
    while index < length:
        char = text[index]
        if char == '"':
            end = index + 1
            while end < length and text[end] != '"':
                end += 2 if text[end] == "\\" else 1
            out.append(text[index : end + 1])
            index = end + 1
        elif text.startswith("//", index):
            end = text.find("\n", index)
            end = length if end < 0 else end
            out.append(" " * (end - index))
            index = end
        elif text.startswith("/*", index):
            end = text.find("*/", index + 2)
            end = length if end < 0 else end + 2
            out.append(re.sub(r"[^\n]", " ", text[index:end]))
            index = end
        else:
            # a run of ordinary characters at once (linear, and fast on large files)
            end = index + 1
            while end < length and text[end] not in '"/':
                end += 1
            out.append(text[index:end])
            index = end
    return "".join(out)


def replace_text(path: Path, text: str) -> None:
    """Write ``path`` whole or not at all: a temporary file beside it, then a rename."""
    import os
    import tempfile

    fd, temporary = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent or ".")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as file:
            file.write(text)
        os.replace(temporary, path)
    except BaseException:
        os.unlink(temporary)
        raise


class HooksFileError(HookgateError, ValueError):
    """The file cannot be read or does not have the hooks layout."""


class HooksFile:
    def __init__(self, path: Path, agent: str, *, comments: bool = False) -> None:
        self.path = path
        #: Whether the agent reads the file as JSON with comments (Gemini CLI does); install
        #: writes plain JSON, and the first install's backup keeps the commented original.
        self.comments = comments
        self.backup = path.with_name(path.name + _BACKUP_SUFFIX)
        self._ours = re.compile(rf"(?:^|[\s/'\"])hookgate['\"]?\s+{re.escape(agent)}(?:\s|$)")

    def runs_bridge(self, command: str) -> bool:
        """Whether a hook command runs ``hookgate <agent>`` (hookgate's own entry)."""
        return self._ours.search(command) is not None

    def is_ours(self, group: Any) -> bool:
        return isinstance(group, Mapping) and isinstance(group.get("hooks"), list) and any(
            isinstance(handler, Mapping) and isinstance(handler.get("command"), str)
            and self.runs_bridge(handler["command"])
            for handler in group["hooks"])

    def read(self, path: Path | None = None) -> dict[str, Any]:
        path = path or self.path
        if not path.exists():
            return {"hooks": {}}
        try:
            text = path.read_text(encoding="utf-8")
            document = json.loads(strip_comments(text) if self.comments else text)
        except (OSError, ValueError) as exc:
            raise HooksFileError(f"{path} is not readable JSON: {exc}") from None
        if not isinstance(document, dict) or not isinstance(document.get("hooks", {}), dict):
            raise HooksFileError(f"{path} must be an object whose 'hooks' is an object")
        document.setdefault("hooks", {})
        return document

    def without_ours(self, document: Mapping[str, Any]) -> tuple[dict[str, Any], int]:
        removed = 0
        hooks: dict[str, Any] = {}
        for event, groups in document["hooks"].items():
            if not isinstance(groups, list):
                hooks[event] = groups
                continue
            kept = [group for group in groups if not self.is_ours(group)]
            removed += len(groups) - len(kept)
            if kept:
                hooks[event] = kept
        return {**document, "hooks": hooks}, removed

    def ours(self, document: Mapping[str, Any]) -> list[tuple[str, int, Mapping[str, Any]]]:
        """(event, group index, group) of every group of hookgate's."""
        return [(event, index, group) for event, groups in document["hooks"].items()
                if isinstance(groups, list)
                for index, group in enumerate(groups) if self.is_ours(group)]

    def install(self, events: Sequence[str], group: Mapping[str, Any]) -> dict[str, Any]:
        """Replace hookgate's groups by ``group`` on each of ``events``; the new document."""
        current = self.read()
        if self.path.exists() and not self.backup.exists() and not self.ours(current):
            self.backup.write_bytes(self.path.read_bytes())
        document, _ = self.without_ours(current)
        for event in events:
            document["hooks"].setdefault(event, []).append(json.loads(json.dumps(group)))
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.path.write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")
        return document

    def uninstall(self) -> int:
        """Take hookgate's groups out; the number removed."""
        if not self.path.exists():
            return 0
        document, removed = self.without_ours(self.read())
        if self.backup.exists() and self.read(self.backup) == document:
            self.path.write_bytes(self.backup.read_bytes())
            self.backup.unlink()
        elif not document["hooks"] and set(document) == {"hooks"} and not self.backup.exists():
            self.path.unlink()
        else:
            self.path.write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")
        return removed
