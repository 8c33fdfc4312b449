"""The one place an integration is registered: an :class:`Integration` record per agent
system (Claude Code, Codex, Gemini CLI, PicoClaw, GoClaw), naming what it adds.

An integration lives above everything else (it drives the engine, the gateway, the CLI), so
the layers below it never import it: they ask this registry, which sits at the bottom, for
"the hooks-file formats", "the command format called ``claude_code``" or "the gateway's
routes", and each part is named here as ``"module:attribute"``, imported when first used.
Registering therefore costs no import, and ``hookgate claude-code``, which starts once per
event, loads only the parts its event needs.

Adding an agent is one module: ``hookgate/integrations/<name>/integration.py`` defining
``INTEGRATION = Integration(name=...)``, and its name in :data:`BUILTIN` (a package outside
hookgate calls :func:`register_integration` instead).
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

__all__ = [
    "BUILTIN",
    "Integration",
    "integration",
    "integrations",
    "register_integration",
    "resolve",
]

#: The integrations shipped with hookgate, in the order their hooks-file formats are tried
#: (before hookgate's own): each is ``hookgate.integrations.<name>.integration.INTEGRATION``.
BUILTIN: Final = ("picoclaw", "goclaw", "claude_code", "codex", "gemini")


@dataclass(frozen=True, slots=True)
class Integration:
    """What one agent system adds to hookgate. Every part is a ``"module:attribute"`` path
    (a module alone for ``cli_commands``), so the record itself imports nothing."""

    #: The system's name, as a command hook's ``format`` and in docs (``claude_code``).
    name: str
    #: Hooks-file formats (each a :class:`hookgate.config.formats.ConfigFormat`), tried in
    #: this order before hookgate's own.
    config_formats: tuple[str, ...] = ()
    #: ``format`` values of command hooks that speak this system's script contract, each a
    #: module with ``command_document`` and ``parse_command_answer``
    #: (:class:`hookgate.handlers.command.CommandFormat`).
    command_formats: Mapping[str, str] = field(default_factory=dict)
    #: Modules with a ``register(main)`` that adds the system's ``hookgate`` commands.
    cli_commands: tuple[str, ...] = ()
    #: Commands that run as the agent's own hook: every failure there, a usage error too,
    #: answers "blocked" (exit 2).
    bridge_commands: tuple[str, ...] = ()
    #: Functions returning the gateway routes the system calls (Starlette routes).
    routes: tuple[str, ...] = ()
    #: Handler types it brings: type name -> the :class:`hookgate.handlers.Handler` class.
    handler_types: Mapping[str, str] = field(default_factory=dict)
    #: The system's event names -> hookgate's canonical events (a mapping).
    event_aliases: str | None = None

    def event_names(self) -> Mapping[str, str]:
        """The system's event names, each with the hookgate event it is."""
        return {} if self.event_aliases is None else resolve(self.event_aliases)


_loaded: dict[str, Integration] = {}
_added: list[Integration] = []


def register_integration(record: Integration) -> None:
    """Add an integration from outside hookgate (its formats are tried after the built-in
    ones'); a record with a built-in's name replaces that one."""
    _added[:] = [known for known in _added if known.name != record.name]
    _added.append(record)


def integration(name: str) -> Integration:
    """The integration called ``name``; raise KeyError if there is none. Only that one
    built-in record is imported."""
    for record in reversed(_added):
        if record.name == name:
            return record
    if name not in BUILTIN:
        raise KeyError(name)
    known = _loaded.get(name)
    if known is None:
        module = importlib.import_module(f"hookgate.integrations.{name}.integration")
        known = _loaded[name] = module.INTEGRATION
    return known


def integrations() -> tuple[Integration, ...]:
    """Every integration: the built-in ones in :data:`BUILTIN` order, then the registered."""
    replaced = {record.name for record in _added}
    return (
        *(integration(name) for name in BUILTIN if name not in replaced),
        *_added,
    )


def resolve(path: str) -> Any:
    """What ``"module:attribute"`` names (a module when there is no ``:``)."""
    module_name, _, attribute = path.partition(":")
    module = importlib.import_module(module_name)
    return getattr(module, attribute) if attribute else module
