"""The registry of hooks-file formats, and hookgate's native one.

A format is a name, a ``detect(document) -> bool`` predicate and a ``load`` function.
Formats are tried in order: the integrations' (their records' ``config_formats``), those
registered by hand, and the native format last, so that the more specific shapes of other
systems win.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from hookgate.definition import DefinitionError, HookDefinition
from hookgate.errors import HookgateError

__all__ = [
    "NATIVE",
    "ConfigError",
    "ConfigFormat",
    "detect_format",
    "load_native",
    "register_format",
]


class ConfigError(HookgateError, ValueError):
    """A hooks file is invalid; ``problems`` holds one line per problem."""

    def __init__(self, problems: Sequence[str]) -> None:
        self.problems = list(problems)
        super().__init__("\n".join(self.problems))


class Loader(Protocol):
    def __call__(self, document: Any, *, edition: str, base_dir: Path) -> list[HookDefinition]: ...


@dataclass(frozen=True, slots=True)
class ConfigFormat:
    name: str
    detect: Callable[[Any], bool]
    load: Loader


#: Formats added by hand (:func:`register_format`), tried after the integrations' own.
_formats: list[ConfigFormat] = []


def register_format(fmt: ConfigFormat) -> None:
    """Add a format; it is tried before hookgate's native one."""
    _formats.append(fmt)


def _registered_formats() -> list[ConfigFormat]:
    """The integrations' formats (their records' ``config_formats``: PicoClaw, GoClaw's
    quality gates, Claude Code settings), then those registered by hand."""
    # Imported here: a plain hookgate file is never offered to the other formats.
    from hookgate.integration_registry import integrations, resolve

    found = []
    for record in integrations():
        for path in record.config_formats:
            try:
                found.append(resolve(path))
            except ModuleNotFoundError as exc:  # the module is absent: the core works alone
                if exc.name != path.partition(":")[0]:
                    raise
    return [*found, *_formats]


def detect_format(document: Any) -> ConfigFormat:
    if _plainly_native(document):
        return NATIVE  # no other format claims it: skip importing them (CLI start-up time)
    for fmt in (*_registered_formats(), NATIVE):
        if fmt.detect(document):
            return fmt
    raise ConfigError(
        [
            "not a hooks file: expected {hooks: [ … hook definitions … ]}"
            " (or a PicoClaw config, a quality-gate file, or Claude Code settings)"
        ]
    )


def _plainly_native(document: Any) -> bool:
    """A list of hookgate definitions (each with a ``handler_type``) and nothing else that
    another format looks at. The other formats want ``hooks`` to be an object (PicoClaw,
    Claude Code settings) or a list of gates without ``handler_type``, or a
    ``quality_gates`` list; none of them can claim such a document."""
    if not isinstance(document, Mapping):
        return False
    hooks = document.get("hooks")
    return (
        isinstance(hooks, list)
        and all(isinstance(item, Mapping) and "handler_type" in item for item in hooks)
        and not {"quality_gates", "other_config"} & set(document)
    )


def _is_native(document: Any) -> bool:
    return isinstance(document, Mapping) and isinstance(document.get("hooks"), list)


def load_native(document: Any, *, edition: str, base_dir: Path) -> list[HookDefinition]:
    # The schema imports pydantic: only when a file is validated, never just to run hooks.
    from hookgate.definition_model import validate_definition

    problems: list[str] = []
    definitions: list[HookDefinition] = []
    seen_names: dict[str, int] = {}
    for index, raw in enumerate(document["hooks"]):
        where = f"hooks[{index}]"
        if not isinstance(raw, Mapping):
            problems.append(f"{where}: a hook definition must be an object")
            continue
        raw = dict(raw)
        raw.setdefault("order", index + 1)
        try:
            definition = validate_definition(raw, edition=edition, default_scope="global")
        except DefinitionError as exc:
            label = f"{where} ({raw['name']})" if raw.get("name") else where
            problems.extend(f"{label}.{p.field}: {p.message}" for p in exc.problems)
            continue
        if definition.name:
            if definition.name in seen_names:
                problems.append(
                    f"{where}.name: duplicate name {definition.name!r} "
                    f"(also hooks[{seen_names[definition.name]}])"
                )
            seen_names[definition.name] = index
        definitions.append(definition)
    if problems:
        raise ConfigError(problems)
    return definitions


NATIVE = ConfigFormat("hookgate", _is_native, load_native)
