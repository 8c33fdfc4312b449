"""The host-code boundary: which hooks run code on the machine hookgate runs on, and who
may define, test and run them.

A handler class says whether it runs code on the host in its capabilities,
``capabilities = Capabilities(host_code=True)`` (``command``, ``process`` and ``callable``
do; ``quality_gate`` does when a gate is a command, see ``Handler.runs_on_host``).
:func:`runs_host_code` is the one place that reads it. The rules built on it:

* the **standard** edition refuses every such hook: when defined (validation), when tested
  and when dispatched (:meth:`HostCodePolicy.refusal`, checked by the engine);
* on the gateway, defining, testing or dispatching one needs **master scope**, unless
  ``hookgate serve --tenant-host-code`` lets tenant admins do it. At dispatch this is read
  from the hook itself (:attr:`HookDefinition.written_by_master`, kept by the store).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

from hookgate.handlers.base import edition_refusal
from hookgate.settings import EDITIONS, LITE, STANDARD, Edition

if TYPE_CHECKING:
    from hookgate.definition import HookDefinition

__all__ = [
    "EDITIONS",
    "LITE",
    "STANDARD",
    "Edition",
    "HostCodePolicy",
    "edition_refusal",
    "host_code_types",
    "runs_host_code",
]

TENANT_FLAG: Final = "--tenant-host-code"


def runs_host_code(handler_type: object, config: object = None) -> bool:
    """Does a hook of this type (and config) run code on the host? Unknown types: no (they
    are refused by validation anyway)."""
    from hookgate.handlers import handler_class

    if not isinstance(handler_type, str):
        return False
    try:
        cls = handler_class(handler_type)
    except (KeyError, ImportError):
        return False
    return cls.runs_on_host(config if isinstance(config, dict) else {})


def host_code_types() -> list[str]:
    """Handler types whose every hook runs code on the host (quality_gate only may)."""
    from hookgate.handlers import available_handler_types, handler_class

    types = []
    for name in available_handler_types():
        try:
            if handler_class(name).capabilities.host_code:
                types.append(name)
        except ImportError:
            continue
    return types


@dataclass(frozen=True, slots=True)
class HostCodePolicy:
    """Who may run host code. The library's default lets the engine's owner run anything
    the edition allows; the gateway also asks for master scope."""

    #: Host-code hooks run only when a master-scope key wrote them (the gateway's default).
    master_only: bool = False

    def refusal(self, definition: HookDefinition, edition: str) -> str | None:
        """Why ``definition`` may not run on ``edition`` here, or None when it may."""
        if not runs_host_code(definition.handler_type, dict(definition.config)):
            return None
        why = edition_refusal(edition, definition.handler_type)
        if why is not None:
            return why
        # Global hooks and builtins are master scope's by construction (only it writes them).
        trusted = (
            definition.written_by_master
            or definition.scope == "global"
            or definition.source == "builtin"
        )
        if self.master_only and not trusted:
            return master_refusal(definition.handler_type, "running")
        return None


def master_refusal(handler_type: str, action: str) -> str:
    """The message for a tenant key (or a tenant-written hook) meeting the master rule."""
    return (
        f"{action} a {handler_type} hook needs master scope: it runs code on the gateway "
        f"host (the operator can let tenant admins do it with hookgate serve {TENANT_FLAG})"
    )
