"""Handlers: what runs a hook. One module per handler type, one small protocol for all.

A handler class declares what it does and needs in its :class:`Capabilities` (runs host
code, editions, needs a filter, calls a model); :mod:`hookgate.handlers.checks` applies them
when a hook is defined. It is constructed once per engine with the engine's
:class:`Services`, and its ``run`` is called for every matched event with an
:class:`Invocation`. It answers a :class:`~hookgate.outcome.HookResult` (or a dict with the
outcome keys, or ``None`` to abstain) and raises :class:`~hookgate.outcome.HookError` /
:class:`~hookgate.outcome.MalformedAnswer` when it fails. Timeouts are enforced by the engine.
"""

from __future__ import annotations

import importlib
from typing import Final

from hookgate.handlers.base import Capabilities, Handler, Invocation, Services

__all__ = [
    "Capabilities",
    "Handler",
    "Invocation",
    "Services",
    "available_handler_types",
    "handler_class",
    "is_handler_type",
    "register_handler_type",
]

# Handler types shipped with hookgate, imported on first use so a missing optional
# dependency only affects the handler that needs it.
_BUILTIN: Final[dict[str, str]] = {
    "callable": "hookgate.handlers.callable:CallableHandler",
    "command": "hookgate.handlers.command:CommandHandler",
    "process": "hookgate.handlers.process:ProcessHandler",
    "http": "hookgate.handlers.http:HttpHandler",
    "prompt": "hookgate.handlers.prompt.handler:PromptHandler",
    "agent": "hookgate.handlers.prompt.agent:AgentHandler",
    # Declarative session rules (limits, taint, required earlier calls): no host code.
    "rule": "hookgate.handlers.rule.handler:RuleHandler",
}
_registered: dict[str, type[Handler] | str] = dict(_BUILTIN)


def _add_integration_types() -> None:
    """Add the integrations' handler types (their records' ``handler_types``: GoClaw's
    ``quality_gate``); done on a lookup of a type that is not one of hookgate's own."""
    # Imported here: an engine running hookgate's own types never reads the records.
    from hookgate.integration_registry import integrations

    for record in integrations():
        for name, path in record.handler_types.items():
            _registered.setdefault(name, path)


def register_handler_type(name: str, cls: type[Handler] | str) -> None:
    """Add a handler type (a class, or a ``"module:Class"`` path imported on first use)."""
    _registered[name] = cls


def is_handler_type(name: str) -> bool:
    """Is ``name`` a handler type (the integrations' records are read only when it is not
    one of hookgate's own)?"""
    if name not in _registered:
        _add_integration_types()
    return name in _registered


def available_handler_types() -> list[str]:
    _add_integration_types()
    return sorted(_registered)


def handler_class(name: str) -> type[Handler]:
    """The class for ``name``; raise KeyError if unknown, ImportError if it cannot load."""
    if name not in _registered:
        _add_integration_types()
    target = _registered[name]
    if isinstance(target, str):
        module_name, _, attr = target.partition(":")
        module = importlib.import_module(module_name)
        cls: type[Handler] = getattr(module, attr)
        _registered[name] = cls
        return cls
    return target
