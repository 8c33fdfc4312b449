"""Hooks files: read a YAML or JSON file and turn it into hook definitions.

Several shapes are accepted and told apart by their content (see :mod:`.formats`): hookgate's
own ``{hooks: [definitions]}``, and the formats other systems use, registered by their own
modules. Every problem is reported with where it is (``hooks[2].matcher: …``).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from hookgate.config.formats import ConfigError, ConfigFormat, detect_format, register_format
from hookgate.definition import HookDefinition

__all__ = [
    "ConfigError",
    "ConfigFormat",
    "detect_format",
    "load_hooks",
    "parse_hooks",
    "read_document",
    "register_format",
]


def read_document(path: str | Path) -> Any:
    """Parse a YAML or JSON file (JSON is YAML, but JSON errors read better from json)."""
    file = Path(path)
    try:
        text = file.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError([f"{file}: cannot read: {exc.strerror or exc}"]) from None
    except UnicodeDecodeError as exc:
        raise ConfigError([f"{file}: not UTF-8 text (byte {exc.start})"]) from None
    if file.suffix.lower() == ".json":
        try:
            return json.loads(text)
        except json.JSONDecodeError as exc:
            where = f"{file}:{exc.lineno}:{exc.colno}"
            raise ConfigError([f"{where}: invalid JSON: {exc.msg}"]) from None
    import yaml  # here, not at the top: a JSON hooks file needs no YAML parser

    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"{file}:{mark.line + 1}:{mark.column + 1}" if mark else str(file)
        problem = getattr(exc, "problem", None) or str(exc)
        raise ConfigError([f"{where}: invalid YAML: {problem}"]) from None


def parse_hooks(
    document: Any, *, edition: str = "lite", base_dir: Path | None = None
) -> list[HookDefinition]:
    fmt = detect_format(document)
    return fmt.load(document, edition=edition, base_dir=base_dir or Path.cwd())


def load_hooks(path: str | Path, *, edition: str = "lite") -> list[HookDefinition]:
    """Definitions from a hooks file in any known format; raise :class:`ConfigError`.

    ``callable: "guards:fn"`` in a hooks file finds ``guards.py`` beside that file: its folder
    is searched after the installed packages (appended, so it never shadows them)."""
    file = Path(path)
    folder = str(file.resolve().parent)
    if folder not in sys.path:
        sys.path.append(folder)
    return parse_hooks(read_document(file), edition=edition, base_dir=file.resolve().parent)
