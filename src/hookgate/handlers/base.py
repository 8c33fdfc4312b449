"""The handler protocol and the objects every handler receives."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

from hookgate.settings import Settings

if TYPE_CHECKING:
    from hookgate.definition import HookDefinition
    from hookgate.events import EventSpec
    from hookgate.hook_event import HookEvent
    from hookgate.outcome import HookResult

__all__ = ["Handler", "Invocation", "Services"]


@dataclass(slots=True)
class Services:
    """Engine-wide things handlers share: settings and long-lived helpers.

    ``extras`` holds optional collaborators other parts plug in (a budget store, a
    secrets keyring, an HTTP client, the runtime event bus), looked up by name.
    """

    settings: Settings = field(default_factory=Settings)
    extras: dict[str, Any] = field(default_factory=dict)

    def get(self, name: str, default: Any = None) -> Any:
        return self.extras.get(name, default)


@dataclass(slots=True)
class Invocation:
    """One call of one hook for one event."""

    hook: HookDefinition
    event: EventSpec
    #: The event payload as this hook sees it (earlier rewrites applied). Do not mutate.
    payload: Mapping[str, Any]
    timeout_s: float
    services: Services
    dry_run: bool = False


class Handler:
    """Base class and protocol for handlers.

    Subclasses set ``handler_type``, implement ``run`` and, when their config has rules,
    ``validate_config``. ``sync_function`` lets handlers that can answer without an event
    loop (the callable handler) skip the loop in ``Engine.fire_sync``.
    """

    handler_type: ClassVar[str] = ""
    #: Runs code on the host (a program, a Python function): the host-code boundary
    #: (:mod:`hookgate.host_code`) applies to every hook of this type.
    host_code: ClassVar[bool] = False

    def __init__(self, services: Services) -> None:
        self.services = services

    @classmethod
    def validate_config(cls, config: Mapping[str, Any]) -> list[str]:
        """Problems with a hook's ``config``, one message each; empty when valid."""
        return []

    @classmethod
    def runs_on_host(cls, config: Mapping[str, Any]) -> bool:
        """Does a hook with this ``config`` run code on the host? ``host_code`` unless a
        handler's config decides (a quality gate list with a command gate)."""
        return cls.host_code

    async def run(self, call: Invocation) -> HookResult | Mapping[str, Any] | None:
        raise NotImplementedError(f"{type(self).__name__}.run must be implemented")

    def sync_function(self, hook: HookDefinition) -> Callable[[HookEvent], Any] | None:
        """A plain function that answers for ``hook`` without an event loop, or ``None``.

        ``Engine.fire_sync`` calls it directly with the event view (the callable handler's
        fast path); handlers that need I/O return ``None`` and run on a loop.
        """
        return None

    def forget(self, hook_id: str) -> None:
        """Drop per-hook state (a hook was deleted or replaced by a new version)."""

    async def aclose(self) -> None:
        """Release what the handler holds (child processes, connections)."""
