"""What ``hookgate import codex`` and ``hookgate import gemini`` share: reading another
agent's hooks file, which may come from a repository and be hostile, and finishing an import
whole or not at all.

* :func:`read_hooks_json`: only a regular file, at most :data:`MAX_HOOKS_FILE_BYTES` of it,
  UTF-8, JSON (with comments where the agent allows them), an object with a ``hooks`` object;
  anything else is a :class:`HooksImportError` saying what is wrong (no traceback, no hang on
  a FIFO, no memory spent on a huge file or deep nesting).
* :func:`finish_import`: every problem of the conversion, and every rule of hookgate's the
  converted hooks would break, stops the import with all of them listed and nothing written;
  else the hooks file is printed or written (whole: a temporary file, then a rename).
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Final

import click
import yaml

from hookgate.errors import HookgateError
from hookgate.integrations.claude_code.settings_format import Conversion
from hookgate.integrations.hooks_json import replace_text, strip_comments

__all__ = [
    "MAX_HOOKS_FILE_BYTES",
    "HooksImportError",
    "definition_problems",
    "finish_import",
    "read_hooks_json",
    "write_conversion",
]

#: A hooks file larger than this is refused (the agents' own are a few KiB).
MAX_HOOKS_FILE_BYTES: Final = 4 * 1024 * 1024


class HooksImportError(HookgateError, ValueError):
    """The file cannot be read as the agent's hooks file."""


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def read_hooks_json(
    path: str | Path, *, agent: str, comments: bool, example: str
) -> dict[str, Any]:
    """The document at ``path``; raise :class:`HooksImportError` (see the module
    docstring). ``example`` shows the hooks section the agent's file has."""
    file = Path(path)
    try:
        if not stat.S_ISREG(os.stat(file).st_mode):
            raise HooksImportError(f"{file}: not a regular file")
        with open(file, "rb") as handle:
            data = handle.read(MAX_HOOKS_FILE_BYTES + 1)
    except OSError as exc:
        raise HooksImportError(f"{file}: cannot read: {exc.strerror or exc}") from None
    if len(data) > MAX_HOOKS_FILE_BYTES:
        raise HooksImportError(
            f"{file}: larger than {MAX_HOOKS_FILE_BYTES // (1024 * 1024)} "
            f"MiB; not a {agent} hooks file"
        )
    try:
        text = data.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError as exc:
        raise HooksImportError(f"{file}: not UTF-8 text (byte {exc.start})") from None
    try:
        document = json.loads(
            strip_comments(text) if comments else text, parse_constant=_no_constant
        )
    except json.JSONDecodeError as exc:
        raise HooksImportError(
            f"{file}:{exc.lineno}:{exc.colno}: invalid JSON: {exc.msg}"
        ) from None
    except RecursionError:
        raise HooksImportError(f"{file}: JSON nested too deeply") from None
    except ValueError as exc:
        raise HooksImportError(f"{file}: invalid JSON: {exc}") from None
    if not isinstance(document, dict):
        raise HooksImportError(f"{file}: must hold a JSON object ({agent} hooks)")
    if not isinstance(document.get("hooks"), dict):
        raise HooksImportError(f"{file}: no {agent} hooks section ({example})")
    return document


def definition_problems(conversion: Conversion, agent: str = "claude-code") -> list[str]:
    """What hookgate's own validation says of the converted hooks (a matcher RE2 cannot
    run, say): the file written must load as it is."""
    from hookgate.definition import DefinitionError
    from hookgate.definition_model import validate_definition

    problems: list[str] = []
    for raw in conversion.hooks:
        try:
            validate_definition(
                {k: v for k, v in raw.items() if v is not None},
                edition="lite",
                default_scope="global",
            )
        except DefinitionError as exc:
            name = str(raw["name"]).replace("claude-code ", f"{agent} ", 1)
            problems.extend(f"{name}: {p.field}: {p.message}" for p in exc.problems)
    return problems


def finish_import(
    conversion: Conversion,
    source: str,
    output: str | None,
    *,
    agent: str,
    notes: Sequence[str] = (),
) -> None:
    """Write the converted hooks (see the module docstring); exit 1 with every problem."""
    problems = [*conversion.problems, *definition_problems(conversion, agent)]
    if problems:
        for note in (*notes, *conversion.notes):
            click.echo(f"note: {note}", err=True)
        for problem in problems:
            click.echo(f"not imported: {problem}", err=True)
        raise click.ClickException(
            f"{len(problems)} problem(s) in {source}; nothing written "
            "(fix or remove those hooks and import again)"
        )
    write_conversion(conversion, output, agent=agent, notes=notes)


def write_conversion(conversion: Conversion, output: str | None, *, agent: str = "claude-code",
                     notes: Sequence[str] = ()) -> None:
    """Print (or write to ``output``) the hooks file a conversion made, with its notes and
    what it could not import on stderr; hook names say which ``agent`` they came from."""
    for note in (*notes, *conversion.notes):
        click.echo(f"note: {note}", err=True)
    for problem in conversion.problems:
        click.echo(f"not imported: {problem}", err=True)
    hooks: list[dict[str, Any]] = [
        # No scope: the file loads as global hooks, or as a tenant's with
        # `hookgate hooks import --tenant T`.
        {key: value for key, value in raw.items() if value is not None and key != "scope"}
        | {"name": str(raw["name"]).replace("claude-code ", f"{agent} ", 1)}
        for raw in conversion.hooks
    ]
    if output and output.endswith(".json"):
        text = json.dumps({"hooks": hooks}, indent=2) + "\n"
    else:
        text = yaml.safe_dump({"hooks": hooks}, sort_keys=False, allow_unicode=True)
    if output:
        replace_text(Path(output), text)
        click.echo(f"{output}: {len(hooks)} hook(s) written", err=True)
    else:
        click.echo(text, nl=False)
