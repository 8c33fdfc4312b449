"""Validated hook definitions of a hooks file, kept between ``hookgate claude-code`` runs.

Claude Code starts ``hookgate claude-code`` for every hook event, and reading a hooks file
costs more than running its hooks: the YAML parser, the validation (and its imports). So the
first run validates the file as always and stores the definitions it produced in
``$XDG_CACHE_HOME/hookgate/claude-code-hooks/`` (else ``~/.cache/…``; a folder only the user may
read, files 0600); later runs take them from there with no parsing and no validation.

The cache never makes a bad file pass:

* An entry holds the hooks file's **exact bytes**: any change to the file (even one that
  keeps its size and time stamp) misses, and the file is validated again.
* It is keyed by what else decides the validation: the file's real path (relative paths
  in it resolve against its folder), the edition, hookgate's version and the time stamps
  of the validating modules, the Python version (marshal's format).
* ``callable`` hooks are checked again on every run, as the validation does: a module that
  no longer imports makes the run validate the file, which then fails (closed).
* Only hookgate's own file format with ``command`` and ``callable`` hooks is cached, and
  only when the stored form gives back equal definitions; anything else is validated on
  every run, as before.
* An entry that cannot be read, is not the user's own, is writable by others, or does not
  decode is ignored and replaced. Failing to write one only costs the next run the time.

``HOOKGATE_CLAUDE_CODE_CACHE=off`` turns the cache off.
"""

from __future__ import annotations

import contextlib
import marshal
import os
import sys
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final

from hookgate.errors import HookgateError

if TYPE_CHECKING:
    from hookgate.definition import HookDefinition

__all__ = [
    "Entry",
    "InvalidHooksFile",
    "cache_folder",
    "edition_of",
    "load_definitions",
    "read_entry",
]

#: Bumped when the entry layout changes.
ENTRY_FORMAT: Final = 1
#: Handler types whose validation depends on nothing but the file (callables are re-checked).
CACHED_HANDLERS: Final = frozenset({"command", "callable"})
#: Modules whose code decides what a hooks file validates to (relative to the package).
_VALIDATING_MODULES: Final = (
    "definition.py",
    "definition_model.py",
    "events.py",
    "host_code.py",
    "matching.py",
    "config/__init__.py",
    "config/formats.py",
    "handlers/base.py",
    "handlers/checks.py",
    "handlers/command.py",
    "handlers/callable.py",
    "state/model.py",
    "integrations/claude_code/definition_cache.py",
)


class InvalidHooksFile(HookgateError, ValueError):
    """The hooks file does not validate; ``problems`` as :class:`hookgate.config.ConfigError`."""

    def __init__(self, problems: Sequence[str]) -> None:
        self.problems = list(problems) or ["invalid"]
        super().__init__("\n".join(self.problems))


def cache_folder(environ: Mapping[str, str]) -> str | None:
    """Where entries live; ``None`` when the cache is off."""
    if environ.get("HOOKGATE_CLAUDE_CODE_CACHE", "").strip().lower() in ("off", "0", "no"):
        return None
    base = environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "hookgate", "claude-code-hooks")


class Entry:
    """A stored entry that holds this exact hooks file (rows not yet made definitions)."""

    __slots__ = ("events", "has_callables", "hooked", "known_fields", "names", "rows",
                 "tool_names")

    def __init__(
        self,
        names: tuple[str, ...],
        rows: list[tuple[Any, ...]],
        events: dict[str, str],
        hooked: frozenset[str],
        has_callables: bool,
        tool_names: dict[str, frozenset[str]],
        known_fields: frozenset[str],
    ) -> None:
        self.names = names
        self.rows = rows
        #: Every event name and alias hookgate knows → its canonical name.
        self.events = events
        #: Canonical events the file has hooks for (enabled or not).
        self.hooked = hooked
        self.has_callables = has_callables
        #: Tool events (matched on ``tool_name``) whose enabled hooks all have a matcher that
        #: is a plain list of names (``^Bash$``, ``^(?:Edit|Write)$``): event → those names.
        #: A tool outside them runs no hook.
        self.tool_names = tool_names
        #: hookgate's field names (a payload with only these is not renamed by the engine).
        self.known_fields = known_fields


def edition_of(environ: Mapping[str, str]) -> str:
    """The edition as :meth:`hookgate.settings.Settings.from_env` reads it (without
    importing it: the quick answer in main.py imports nothing with a dataclass)."""
    edition = environ.get("HOOKGATE_EDITION")
    return edition if edition in ("lite", "standard") else "lite"


def read_entry(path: str, *, edition: str, environ: Mapping[str, str]) -> Entry | None:
    """The entry for this exact hooks file, or ``None`` (no cache, a miss, a bad entry)."""
    where = cache_folder(environ)
    if where is None:
        return None
    try:
        real, content = _hooks_file(path)
    except OSError:
        return None  # the validation reports it
    return _entry(os.path.join(where, _entry_name(real)), _key(real, edition), content)[0]


class _Held:
    """An entry the warm process's resident read, with its definitions (see :func:`_entry`)."""

    __slots__ = ("content", "definitions", "entry", "key")

    def __init__(self, key: tuple[Any, ...], content: bytes, entry: Entry,
                 definitions: list[HookDefinition]) -> None:
        self.key = key
        self.content = content
        self.entry = entry
        self.definitions = definitions


#: The resident's entries, by entry file: a long-lived process need not read and decode an
#: entry again while the hooks file's bytes (and the key) are the same. Only entries without
#: ``callable`` hooks (the only ones it answers); bounded.
_HELD: dict[str, _Held] = {}
_MAX_HELD: Final = 256


def _entry(entry_path: str, key: tuple[Any, ...], content: bytes
           ) -> tuple[Entry | None, list[HookDefinition] | None]:
    """The entry for this exact file (and, in the resident, its definitions when held)."""
    from hookgate.integrations.claude_code.in_place import current

    if current() is None:
        return _read_entry(entry_path, key, content), None
    held = _HELD.get(entry_path)
    if held is not None and held.key == key and held.content == content:
        return held.entry, list(held.definitions)
    entry = _read_entry(entry_path, key, content)
    definitions = None if entry is None or entry.has_callables else _definitions(entry)
    if entry is not None and definitions is not None:
        if len(_HELD) >= _MAX_HELD:
            _HELD.clear()
        _HELD[entry_path] = _Held(key, content, entry, definitions)
        definitions = list(definitions)
    return entry, definitions


def load_definitions(
    path: str, *, edition: str, environ: Mapping[str, str]
) -> list[HookDefinition]:
    """The definitions of the hooks file at ``path``: from the cache when it holds this
    exact file, else validated (and stored). Raise :class:`InvalidHooksFile`.

    In the warm process's resident (an event answered in place, see :mod:`.in_place`) only
    a cached file without ``callable`` hooks is answered; anything else raises
    :class:`~.in_place.NeedsFork` (the validation, and any import of the user's modules,
    happen in a fork), and ``sys.path`` is left alone."""
    from hookgate.integrations.claude_code.in_place import NeedsFork, current

    resident = current() is not None
    where = cache_folder(environ)
    content: bytes | None = None
    try:
        real, content = _hooks_file(path) if where is not None else (os.path.realpath(path),
                                                                      None)
    except OSError:
        real = os.path.realpath(path)  # unreadable: the validation reports it
    # As hookgate.config.load_hooks: ``callable: "guards:fn"`` finds guards.py beside the file.
    folder = os.path.dirname(real)
    if not resident and folder not in sys.path:
        sys.path.append(folder)
    entry_path = key = None
    if where is not None and content is not None:
        key = _key(real, edition)
        entry_path = os.path.join(where, _entry_name(real))
        entry, held = _entry(entry_path, key, content)
        if held is not None:
            return held  # the resident's, without callable hooks
        if entry is not None and resident:
            raise NeedsFork  # callable hooks, or definitions this hookgate cannot rebuild
        if entry is not None:
            cached = _definitions(entry)
            if cached is not None and _callables_resolve(cached):
                return cached
    if resident:
        raise NeedsFork
    definitions, cacheable = _validate(path, folder, edition)
    if cacheable and entry_path is not None and key is not None and content is not None:
        _write_entry(entry_path, key, content, definitions)
    return definitions


# -- the miss: validate as ``hookgate.config.load_hooks`` does ------------------------------


def _validate(path: str, folder: str, edition: str) -> tuple[list[HookDefinition], bool]:
    from pathlib import Path

    from hookgate.config import ConfigError, read_document
    from hookgate.config.formats import NATIVE, detect_format

    try:
        document = read_document(path)
        fmt = detect_format(document)
        definitions = fmt.load(document, edition=edition, base_dir=Path(folder))
    except ConfigError as exc:
        raise InvalidHooksFile(exc.problems) from None
    cacheable = fmt is NATIVE and all(
        d.handler_type in CACHED_HANDLERS and isinstance(d.config.get("callable", ""), str)
        for d in definitions
    )
    return definitions, cacheable


def _callables_resolve(definitions: Sequence[HookDefinition]) -> bool:
    """The check the validation makes of ``callable`` hooks: the function imports."""
    targets = [d.config["callable"] for d in definitions if d.handler_type == "callable"]
    if not targets:
        return True
    from hookgate.handlers.callable import resolve_callable

    try:
        for target in targets:
            resolve_callable(target)
    except ValueError:
        return False
    return True


# -- entries ----------------------------------------------------------------------------------


def _key(real: str, edition: str) -> tuple[Any, ...]:
    import hookgate

    return (ENTRY_FORMAT, hookgate.__version__, sys.version_info[:2], marshal.version,
            edition, real, _validating_stamps())


#: The resident's stamps of the validating modules, taken once: it checks before every
#: event that none of hookgate's code changed (and ends if it did), so they cannot be stale.
_RESIDENT_STAMPS: list[tuple[tuple[int, int] | None, ...]] = []


def _validating_stamps() -> tuple[tuple[int, int] | None, ...]:
    from hookgate.integrations.claude_code.in_place import current

    resident = current() is not None
    if resident and _RESIDENT_STAMPS:
        return _RESIDENT_STAMPS[0]
    import hookgate

    package = os.path.dirname(hookgate.__file__ or "")
    stamps: list[tuple[int, int] | None] = []
    for module in _VALIDATING_MODULES:
        try:
            stat = os.stat(os.path.join(package, module))
        except OSError:
            stamps.append(None)
        else:
            stamps.append((stat.st_mtime_ns, stat.st_size))
    if resident:
        _RESIDENT_STAMPS[:] = [tuple(stamps)]
    return tuple(stamps)


def _hooks_file(path: str) -> tuple[str, bytes]:
    """The hooks file's real path and bytes; read once per event in the resident (the quick
    answer and the full path both ask)."""
    from hookgate.integrations.claude_code.in_place import current, read_whole

    event = current()
    found = None if event is None else event.files.get(path)
    if found is None:
        real = os.path.realpath(path)
        found = (real, read_whole(real))
        if event is not None:
            event.files[path] = found
    return found


def _entry_name(real: str) -> str:
    """A file name for the hooks file's path (64-bit FNV-1a: a collision only costs a miss,
    since an entry names its path; no hashlib or zlib import)."""
    digest = 0xCBF29CE484222325
    for byte in real.encode("utf-8", "surrogateescape"):
        digest = ((digest ^ byte) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return f"{digest:016x}.marshal"


def _field_names() -> tuple[str, ...]:
    import dataclasses

    from hookgate.definition import HookDefinition

    return tuple(f.name for f in dataclasses.fields(HookDefinition))


def _read_entry(entry: str, key: tuple[Any, ...], content: bytes) -> Entry | None:
    try:
        fd = os.open(entry, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return None
    try:
        with os.fdopen(fd, "rb") as file:
            stat = os.fstat(file.fileno())
            if stat.st_uid != os.getuid() or stat.st_mode & 0o022:
                return None  # not written by us: never trusted
            stored = marshal.loads(file.read())
        (stored_key, stored_content, names, rows, events, hooked, has_callables, tool_names,
         known_fields) = stored
        if stored_key != key or stored_content != content:
            return None
        if not (isinstance(names, tuple) and isinstance(rows, list) and isinstance(events, dict)
                and isinstance(hooked, frozenset) and isinstance(has_callables, bool)
                and isinstance(tool_names, dict) and isinstance(known_fields, frozenset)):
            return None
        return Entry(names, rows, events, hooked, has_callables, tool_names, known_fields)
    except Exception:  # a torn or foreign entry: validate instead, and replace it
        return None


def _definitions(entry: Entry) -> list[HookDefinition] | None:
    """The entry's definitions; ``None`` when they do not fit this hookgate's definition."""
    try:
        if entry.names != _field_names():
            return None
        return [_definition(entry.names, row) for row in entry.rows]
    except Exception:
        return None


def _write_entry(
    entry: str, key: tuple[Any, ...], content: bytes, definitions: Sequence[HookDefinition]
) -> None:
    from hookgate.events import CATALOGUE, KNOWN_FIELDS

    try:
        names = _field_names()
        rows = [_row(names, d) for d in definitions]
        if [_definition(names, row) for row in rows] != list(definitions):
            return  # the stored form would not give back the same hooks: keep validating
        events = {alias: spec.name for spec in CATALOGUE for alias in (spec.name, *spec.aliases)}
        hooked = frozenset(d.event for d in definitions)
        has_callables = any(d.handler_type == "callable" for d in definitions)
        tool_names = _tool_names(definitions)
        data = marshal.dumps((key, content, names, rows, events, hooked, has_callables,
                              tool_names, KNOWN_FIELDS))
        folder = os.path.dirname(entry)
        os.makedirs(folder, mode=0o700, exist_ok=True)
        temporary = f"{entry}.{os.getpid()}.tmp"
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
        try:
            with os.fdopen(fd, "wb") as file:
                file.write(data)
            os.replace(temporary, entry)  # readers see the old entry or the new one, whole
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temporary)
            raise
    except Exception:
        pass


#: ``^Name$``, and ``^(?:A|B)$`` or ``^(A|B)$`` of plain names: an RE2 search for one of
#: these matches exactly those names (``$`` is the end of the text in RE2, never before a
#: newline).
_ONE_NAME = r"\^([A-Za-z0-9_]+)\$"
_NAME_GROUP = r"\^\((?:\?:)?([A-Za-z0-9_]+(?:\|[A-Za-z0-9_]+)*)\)\$"


def literal_names(pattern: str | None) -> frozenset[str] | None:
    """The names a matcher matches when it is a plain list of names, else ``None``."""
    import re

    if not pattern:
        return None
    found = re.fullmatch(_ONE_NAME, pattern) or re.fullmatch(_NAME_GROUP, pattern)
    return frozenset(found.group(1).split("|")) if found else None


def _tool_names(definitions: Sequence[HookDefinition]) -> dict[str, frozenset[str]]:
    from hookgate.events import get_event

    lists: dict[str, set[str]] = {}
    refused: set[str] = set()
    for definition in definitions:
        event = definition.event
        if get_event(event).match_field != "tool_name" or get_event(event).prepare is not None:
            refused.add(event)
            continue
        if not definition.enabled:
            lists.setdefault(event, set())  # never runs
            continue
        names = literal_names(definition.matcher)
        if names is None:
            refused.add(event)
        else:
            lists.setdefault(event, set()).update(names)
    return {event: frozenset(names) for event, names in lists.items() if event not in refused}


def _row(names: Sequence[str], definition: HookDefinition) -> tuple[Any, ...]:
    values = []
    for name in names:
        value = getattr(definition, name)
        if name == "approval" and value is not None:
            value = value.to_dict()
        values.append(value)
    return tuple(values)


def _definition(names: Sequence[str], row: Sequence[Any]) -> HookDefinition:
    from hookgate.definition import ApprovalPolicy, HookDefinition

    if len(row) != len(names):
        raise ValueError("entry row does not match the definition's fields")
    fields = dict(zip(names, row, strict=True))
    if fields.get("approval") is not None:
        fields["approval"] = ApprovalPolicy(**fields["approval"])
    return HookDefinition(**fields)

