"""The handler protocol and the objects every handler receives."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import KW_ONLY, dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, NamedTuple, Protocol

from hookgate.settings import EDITIONS, STANDARD, Edition, Settings

if TYPE_CHECKING:
    # Types only: a handler that needs none of these never imports them.
    from pydantic import BaseModel

    from hookgate.approvals import Approver
    from hookgate.definition import HookDefinition
    from hookgate.events import EventSpec
    from hookgate.handlers.prompt.review import ReviewerRunner
    from hookgate.handlers.prompt.state import DecisionCache, TurnCounter
    from hookgate.hook_event import HookEvent
    from hookgate.llm.budget import BudgetStore
    from hookgate.llm.providers import ProviderRegistry
    from hookgate.net.outbound import OutboundClient
    from hookgate.net.ssrf import Resolver
    from hookgate.outcome import HookResult
    from hookgate.secrets.keyring import Keyring
    from hookgate.state.stores import StateStore

__all__ = [
    "Capabilities",
    "Handler",
    "HookThreads",
    "Invocation",
    "PlainFunction",
    "Services",
    "edition_refusal",
]


class HookThreads(Protocol):
    """The worker threads isolated plain-function hooks run on, named by their shape (the
    engine's :class:`hookgate.execution.workers.WorkerPool`, which sits above the handlers)."""

    async def call(self, fn: Callable[[Any], Any], arg: Any, tenant: str | None = None) -> Any:
        """``fn(arg)`` on a worker; the caller's cancel abandons it at its deadline."""


@dataclass(frozen=True, slots=True)
class Capabilities:
    """What a handler type does and needs, declared once on its class and checked in one
    place when a hook is defined (:func:`hookgate.handlers.checks.handler_problems`)."""

    #: Every hook of this type runs code on the host (a program, a Python function): the
    #: host-code boundary applies (:mod:`hookgate.host_code`), so it is refused on the
    #: standard edition whatever ``editions`` says. A handler whose config decides overrides
    #: :meth:`Handler.runs_on_host` instead.
    host_code: bool = False
    #: The editions that offer this handler type.
    editions: tuple[Edition, ...] = EDITIONS
    #: A hook of this type needs a ``matcher`` or an ``if_expr`` (a model is not asked about
    #: every event).
    needs_filter: bool = False
    #: Calls a model provider: the gateway vets the credentials a hook names before saving it
    #: (:func:`hookgate.llm.providers.credential_problems`).
    model_credentials: bool = False


def edition_refusal(edition: str, handler_type: str) -> str | None:
    """Why ``edition`` refuses a host-code hook of ``handler_type`` (None: it does not): the
    one edition rule of :attr:`Capabilities.host_code`."""
    if edition != STANDARD:
        return None
    return (
        f"{handler_type} hooks run code on the gateway host and are not available on the "
        "standard edition; use http or prompt"
    )


@dataclass(slots=True)
class Services:
    """Engine-wide things handlers share: settings and the collaborators other parts plug
    in. Every collaborator is optional: ``None`` means the default (made on first use where
    one exists, see each field)."""

    settings: Settings = field(default_factory=Settings)
    _: KW_ONLY
    #: Opens sealed http-hook headers and hooks' own model API keys (the gateway's keyring).
    keyring: Keyring | None = None
    #: Where a person decides a hook's ``ask``; without one an ``ask`` blocks.
    approver: Approver | None = None
    #: The worker threads of isolated plain-function hooks (the engine sets its own).
    hook_threads: HookThreads | None = None
    #: Hook state (``config.state``); default: a file store at ``$HOOKGATE_STATE_FILE``, else
    #: one in memory.
    hook_state: StateStore | None = None
    #: The SSRF-guarded client of http hooks and gates; default: one made on first use.
    http_client: OutboundClient | None = None
    #: The DNS answers that client's SSRF guard gets (tests inject them); default: the system.
    ssrf_resolver: Resolver | None = None
    #: Monthly token budgets of prompt and agent hooks; default: one in memory.
    budget_store: BudgetStore | None = None
    #: The operator's model providers (the gateway's); default: chosen from the settings.
    llm_providers: ProviderRegistry | None = None
    #: Prompt hooks' decision cache and per-turn counters; default: in memory.
    decision_cache: DecisionCache | None = None
    turn_counter: TurnCounter | None = None
    #: Defaults per reviewer name for agent hooks and agent quality gates (``model``, ...).
    reviewer_agents: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    #: Hands an agent review to the agent runtime instead of a model call.
    reviewer_runner: ReviewerRunner | None = None


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
    #: The worker threads an isolated function runs on, when not ``services.hook_threads``
    #: (shadow hooks have their own, so their stuck workers never count against others).
    threads: HookThreads | None = None


class PlainFunction(NamedTuple):
    """A hook that is a plain function (:meth:`Handler.sync_function`)."""

    #: Called with the event view; answers as a handler's ``run`` does.
    call: Callable[[HookEvent], Any]
    #: Run on a worker with a hard deadline (``isolate: thread``); else in place on the
    #: caller's thread, where an overrun is reported when the function returns.
    isolated: bool


class Handler:
    """Base class and protocol for handlers.

    Subclasses set ``handler_type`` and ``capabilities``, implement ``run`` and, when their
    config has rules, ``validate_config``. ``sync_function`` lets handlers that can answer
    without an event loop (the callable handler) skip the loop in ``Engine.fire_sync``.
    """

    handler_type: ClassVar[str] = ""
    capabilities: ClassVar[Capabilities] = Capabilities()
    #: The type's config model, ``"module:Class"`` (a pydantic model, as a rule a
    #: :class:`hookgate.handlers.config_model.HandlerConfig`): it checks a hook's ``config``
    #: and describes it to the gateway's API and panel. Named, not imported: the model's
    #: pydantic loads only when something is validated or documented.
    config_model: ClassVar[str | None] = None

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        # The attribute that used to mark host code: a handler still setting it would pass
        # the host-code boundary unnoticed, so it fails at class creation instead.
        if "host_code" in cls.__dict__:
            raise TypeError(
                f"{cls.__name__}: declare capabilities = Capabilities(host_code=True) "
                "instead of host_code"
            )

    def __init__(self, services: Services) -> None:
        self.services = services

    @classmethod
    def config_class(cls) -> type[BaseModel] | None:
        """The class :attr:`config_model` names (``None``: the type has none)."""
        if cls.config_model is None:
            return None
        module_name, _, name = cls.config_model.partition(":")
        model: type[BaseModel] = getattr(importlib.import_module(module_name), name)
        return model

    @classmethod
    def validate_config(cls, config: Mapping[str, Any]) -> list[str]:
        """Problems with a hook's ``config``, one message each; empty when valid: its
        config model's."""
        model = cls.config_class()
        if model is None:
            return []
        from hookgate.handlers.config_model import config_problems

        return config_problems(model, cls.handler_type, config)

    @classmethod
    def runs_on_host(cls, config: Mapping[str, Any]) -> bool:
        """Does a hook with this ``config`` run code on the host? ``capabilities.host_code``
        unless a handler's config decides (a quality gate list with a command gate)."""
        return cls.capabilities.host_code

    async def run(self, call: Invocation) -> HookResult | Mapping[str, Any] | None:
        raise NotImplementedError(f"{type(self).__name__}.run must be implemented")

    def sync_function(self, hook: HookDefinition) -> PlainFunction | None:
        """The plain function that answers for ``hook`` without an event loop, or ``None``.

        The engine calls it directly with the event view (the callable handler's fast path),
        in place or on a worker as it says; handlers that need I/O return ``None`` and run
        on a loop.
        """
        return None

    def forget(self, hook_id: str) -> None:
        """Drop per-hook state (a hook was deleted or replaced by a new version)."""

    async def aclose(self) -> None:
        """Release what the handler holds (child processes, connections)."""
