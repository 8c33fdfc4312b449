"""The gateway object: one store, one engine, the audit writer, keys, metrics and tracing.

:class:`Gateway` is what the ASGI app and the methods share. ``start()`` loads the hooks and
wires the engine's listeners; ``close()`` is the graceful shutdown: it refuses new work,
drains the engine's background queue, flushes the audit writer and closes the store, in that
order, so no accepted execution row is lost.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from functools import partial
from typing import Any, Final

from hookgate import __version__
from hookgate.builtins import builtin_definitions
from hookgate.definition import HookDefinition
from hookgate.engine import Engine
from hookgate.handlers import Services, available_handler_types
from hookgate.handlers.callable import module_allowed
from hookgate.handlers.checks import calls_models, config_schemas, offered
from hookgate.host_code import (
    HostCodePolicy,
    edition_refusal,
    host_code_types,
    master_refusal,
    runs_host_code,
)
from hookgate.llm.providers import ProviderRegistry, ProviderSpec, credential_problems
from hookgate.llm.select import operator_registry
from hookgate.log import log_event
from hookgate.safeguards import BreakerStatus
from hookgate.secrets.keyring import Keyring
from hookgate.server.approvals import GatewayApprovals
from hookgate.server.auth import Authenticator, Principal, require_role
from hookgate.server.errors import ApiError
from hookgate.server.metrics import GatewayMetrics
from hookgate.server.shared_breakers import SharedBreakers
from hookgate.server.tracing import HookTracer
from hookgate.settings import Settings
from hookgate.state.shared import SqlStateStore
from hookgate.store import Caller, ExecutionRow, Store
from hookgate.store.approvals import DEFAULT_MAX_PENDING_APPROVALS, ApprovalStoreMixin
from hookgate.store.audit_writer import AuditWriter, open_error_detail
from hookgate.store.breakers import BreakerBackend, BreakerRecorder, SqlBreakerBackend
from hookgate.store.budget import SqlBudgetStore
from hookgate.store.resolver import StoreHookSource
from hookgate.store.sql import SqlStore

__all__ = ["Gateway", "GatewayOptions", "seed_builtin_hooks"]

DEFAULT_MAX_FRAME_BYTES: Final = 1 << 20
#: How long one step of the shutdown after the drain (closing the store, flushing the audit
#: log, …) may take: a step that hangs is named in the log and the shutdown goes on, so a
#: replica always exits instead of waiting for its orchestrator's SIGKILL.
CLOSE_STEP_TIMEOUT_S: Final = 15.0


@dataclass(slots=True)
class GatewayOptions:
    """How one gateway process behaves (the ``hookgate serve`` options)."""

    edition: str = "lite"
    #: Largest WebSocket frame or REST body accepted, in bytes.
    max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES
    #: Module prefixes whose functions ``callable`` hooks may name (empty: none may).
    callable_modules: tuple[str, ...] = ()
    #: Seconds a browser has to send its ``connect`` frame.
    connect_timeout_s: float = 10.0
    #: ``async``: execution rows are committed in batches at least every 100 ms;
    #: ``sync``: a decision is answered only once its rows are committed.
    audit_mode: str = "async"
    #: ``redis://…``: prompt hooks' decision cache and per-turn counters live there, shared by
    #: every replica (``None``: in this process only).
    redis_url: str | None = None
    #: The model providers prompt and agent hooks may use (``--llm-provider``); empty: the
    #: public OpenAI and Anthropic endpoints with the keys in the gateway's environment.
    llm_providers: tuple[ProviderSpec, ...] = ()
    #: Let tenant admins define, test and run hooks that run code on the host (default: only
    #: master scope may; see :mod:`hookgate.host_code`).
    tenant_host_code: bool = False
    #: POSTed (SSRF-guarded) when an approval is created; ``None``: no notification.
    approval_webhook_url: str | None = None
    #: The panel's public address, for the link in approval notifications.
    public_url: str | None = None
    #: Seconds a drain (SIGTERM) waits for requests in flight before the sockets close.
    drain_timeout_s: float = 30.0
    #: Pending approvals a tenant may have at once; past it a hook that asks blocks.
    max_pending_approvals: int = DEFAULT_MAX_PENDING_APPROVALS


async def seed_builtin_hooks(store: Store) -> None:
    """Insert or upgrade the builtin hooks (once, however many replicas start at once)."""
    seeded = await store.seed_builtins(builtin_definitions())
    if seeded.created or seeded.updated:
        log_event(
            "hookgate.builtins.seeded",
            level=logging.INFO,
            created=list(seeded.created),
            updated=list(seeded.updated),
        )


class Gateway:
    def __init__(
        self,
        store: Store,
        *,
        options: GatewayOptions | None = None,
        settings: Settings | None = None,
        services: Services | None = None,
        keyring: Keyring | None = None,
        tracing: bool | None = None,
        tracer_provider: Any = None,
    ) -> None:
        self.options = options or GatewayOptions()
        self.settings = settings or Settings.from_env()
        self.settings.edition = self.options.edition  # type: ignore[assignment]
        # Plain function hooks go to worker threads: the loop serves every tenant meanwhile.
        self.settings.isolate_callables = True
        # Checked before any import, at definition and again when a hook runs.
        self.settings.callable_modules = tuple(self.options.callable_modules)
        self.store = store
        self.keyring = keyring
        self.source = StoreHookSource(store)
        self.audit = AuditWriter(
            store,
            keyring=keyring,
            mode="sync" if self.options.audit_mode == "sync" else "async",
        )
        #: The shared Redis client (``--redis-url``), for the readiness probe and shared state.
        self.redis: Any = None
        self._handler_configs: dict[str, Any] | None = None
        services = services or Services(settings=self.settings)
        # Collaborators the caller passed in stay; the gateway fills in the others.
        if services.keyring is None:
            services.keyring = keyring  # http hooks open sealed headers
        if services.budget_store is None:
            services.budget_store = SqlBudgetStore(store)
        # Tenants' hooks use the operator's providers, never a URL or key variable of their own.
        if services.llm_providers is None:
            services.llm_providers = operator_registry(
                list(self.options.llm_providers), self.settings
            )
        self.providers: ProviderRegistry = services.llm_providers
        if self.options.redis_url:
            from hookgate.handlers.prompt.redis_state import (
                RedisDecisionCache,
                RedisTurnCounter,
                connect,
            )
            from hookgate.state.shared import RedisStateStore

            redis = connect(self.options.redis_url)
            self.redis = redis
            if services.decision_cache is None:
                services.decision_cache = RedisDecisionCache(redis)
            if services.turn_counter is None:
                services.turn_counter = RedisTurnCounter(redis)
            if services.hook_state is None:
                services.hook_state = RedisStateStore(redis)
        elif isinstance(store, SqlStore) and services.hook_state is None:
            services.hook_state = SqlStateStore(store)  # shared by replicas on one database
        # Hooks that ask wait for a person: approvals live in the store (every SQL store).
        self.approvals: GatewayApprovals | None = None
        if isinstance(store, ApprovalStoreMixin):
            self.approvals = GatewayApprovals(
                store,
                keyring=keyring,
                services=services,
                webhook_url=self.options.approval_webhook_url,
                panel_url=self.options.public_url,
                max_pending=self.options.max_pending_approvals,
            )
            services.approver = self.approvals
        self.engine = Engine(
            settings=self.settings, source=self.source, audit=self.audit, services=services
        )
        self.engine.host_code_policy = HostCodePolicy(master_only=not self.options.tenant_host_code)
        self.auth = Authenticator(store)
        # Revocations by any replica (or the CLI) drop cached checks at once.
        store.add_key_listener(self.auth.forget_key)
        store.add_resync_listener(self.auth.forget_all)
        self._breaker_states: dict[str, str] = {}
        self._audit_progress = (0, time.monotonic())
        self.metrics = GatewayMetrics(
            breakers=self._breaker_states_view,
            engine_stats=self.engine.stats.to_dict,
            audit_stats=self._audit_stats,
        )
        self.engine.listeners.append(self.metrics.observe_records)
        use_tracing = HookTracer.active() if tracing is None else tracing
        self.tracer: HookTracer | None = HookTracer() if use_tracing else None
        self._tracer_provider = tracer_provider
        if self.tracer is not None:
            self.engine.listeners.append(self.tracer.observe_records)
        self._breaker_recorder = BreakerRecorder(store)
        # Replicas share their breakers: in Redis when configured, else in PostgreSQL.
        shared: BreakerBackend | None = None
        if self.redis is not None:
            from hookgate.server.redis_breakers import RedisBreakerBackend

            shared = RedisBreakerBackend(self.redis)
        elif isinstance(store, SqlStore) and getattr(store, "backend", "") == "postgres":
            shared = SqlBreakerBackend(store)
        self.shared_breakers = (
            SharedBreakers(self.engine.breakers, shared) if shared is not None else None
        )
        self.engine.breakers.on_change = self._breaker_changed
        self._closing = False
        self._draining = False
        self._inflight = 0
        self._idle = asyncio.Event()
        self._idle.set()

    @property
    def edition(self) -> str:
        return self.options.edition

    # -- lifecycle ------------------------------------------------------------------------------

    async def start(self) -> None:
        await self.audit.start()
        # Builtins first, so the resolver's first snapshot has them (seeding is idempotent;
        # `hookgate serve` has seeded already, under the start-up lock).
        await seed_builtin_hooks(self.store)
        await self.source.start()
        if self.shared_breakers is not None:
            self.shared_breakers.start()
        if self.approvals is not None:
            await self.approvals.start()
        # Count every stored hook, not only the served (enabled) ones: a fresh gateway has
        # disabled builtins, and "hooks=0" would read as "nothing was loaded".
        stored = await self.store.list_hooks(Caller.system())
        log_event(
            "hookgate.gateway.started",
            level=logging.INFO,
            edition=self.edition,
            hook_sandbox="bwrap" if self.settings.sandbox().active else "off",
            hooks=len(stored),
            enabled=len(self.source.snapshot()),
            backend=getattr(self.store, "backend", "?"),
        )

    async def drain(self, timeout_s: float | None = None) -> bool:
        """Stop taking work while the sockets stay open: readiness turns 503, new requests
        are refused (``UNAVAILABLE``, retryable: the client goes to another replica),
        agents waiting for a person get ``pending`` with the approval id, requests in flight
        are answered, the audit log is flushed. True when everything in flight finished
        within ``timeout_s``. The caller closes the sockets afterwards."""
        if timeout_s is None:
            timeout_s = self.options.drain_timeout_s
        if self._draining:
            return await self._wait_idle(timeout_s)
        self._draining = True
        # Said first: how long the rest takes depends on the requests still in flight.
        log_event("hookgate.gateway.draining", level=logging.INFO, inflight=self._inflight)
        if self.approvals is not None:
            # Agents waiting for a person get "pending" with the approval id now, instead of
            # holding the shutdown; the approval stays in the store for any replica.
            await self.approvals.close()
        drained = await self._wait_idle(timeout_s)
        try:
            await asyncio.wait_for(self.audit.flush(), timeout=max(1.0, timeout_s))
        except Exception as exc:  # the store is down: close() reports what is left
            log_event("hookgate.gateway.audit_not_flushed", error=repr(exc))
        log_event(
            "hookgate.gateway.drained", level=logging.INFO, complete=drained,
            inflight=self._inflight,
        )
        return drained

    async def _wait_idle(self, timeout_s: float) -> bool:
        try:
            await asyncio.wait_for(self._idle.wait(), timeout=timeout_s)
        except TimeoutError:
            log_event("hookgate.gateway.drain_timeout", inflight=self._inflight)
            return False
        return True

    async def close(self, *, drain_timeout_s: float | None = None) -> None:
        """Graceful shutdown: drain (see :meth:`drain`), run queued hooks, flush the audit
        log, close the store."""
        if self._closing:
            return
        self._closing = True
        log_event("hookgate.gateway.stopping", level=logging.INFO, inflight=self._inflight)
        await self.drain(drain_timeout_s)
        steps: list[tuple[str, Callable[[], Awaitable[object]]]] = [
            ("hook source", self.source.close),
            ("engine", self.engine.aclose),  # runs every queued non-blocking event
        ]
        if self.shared_breakers is not None:
            steps.append(("shared breakers", self.shared_breakers.close))
        steps += [
            ("breaker records", self._breaker_recorder.drain),
            ("audit log", self.audit.close),  # commits every accepted row
            ("store", self.store.close),
        ]
        if self._tracer_provider is not None:
            # Flush spans here: uvicorn re-raises SIGTERM once the app has shut down.
            steps.append(("spans", partial(asyncio.to_thread, self._tracer_provider.shutdown)))
        for step, close in steps:
            await _bounded_step(step, close)
        log_event("hookgate.gateway.stopped", level=logging.INFO, fired=self.engine.stats.fired)

    @property
    def closing(self) -> bool:
        return self._closing

    @property
    def draining(self) -> bool:
        """True from the start of a drain (SIGTERM) on: no new work is accepted."""
        return self._draining or self._closing

    def enter(self) -> None:
        """Count a request in; refused once a drain or shutdown began."""
        if self.draining:
            raise ApiError(
                "UNAVAILABLE",
                "this gateway replica is shutting down: retry on another one",
                retryable=True,
            )
        self._inflight += 1
        self._idle.clear()

    def leave(self) -> None:
        self._inflight -= 1
        if self._inflight == 0:
            self._idle.set()

    # -- helpers for the methods ---------------------------------------------------------------

    async def breakers_settled(self) -> None:
        """Wait until the breaker faults and resets made so far are shared (other replicas
        see them at their next read)."""
        if self.shared_breakers is not None:
            await self.shared_breakers.settle()

    def new_event_id(self) -> str:
        return self.engine.new_event_id()

    async def hooks_changed(self) -> None:
        """Read-your-writes: the next dispatch sees a change this gateway just made (only the
        changed hook is read again, see :mod:`hookgate.store.resolver`)."""
        await self.source.catch_up()

    def forget_hook(self, definition: HookDefinition) -> None:
        """Drop per-hook handler state of a hook that changed or went away."""
        self.engine.forget_hook(definition)

    def handler_types(self) -> list[str]:
        """The handler types this gateway accepts (host-code ones are gone on standard)."""
        types = []
        for name in available_handler_types():
            if not offered(name, self.edition):
                continue
            if name == "callable" and not self.options.callable_modules:
                continue
            types.append(name)
        return types

    def handler_configs(self) -> dict[str, Any]:
        """Each accepted handler type's config as JSON Schema (its config model): the
        panel's forms. Made once: the models do not change while the gateway runs."""
        if self._handler_configs is None:
            self._handler_configs = config_schemas(self.handler_types())
        return self._handler_configs

    def host_code_info(self, who: Principal) -> dict[str, Any]:
        """For the panel: which handler types run code on the host and, when this key may not
        define them, why."""
        reason = edition_refusal(self.edition, "host-code")
        if reason is None and not (who.master or self.options.tenant_host_code):
            reason = master_refusal("host-code", "defining")
        return {"handlerTypes": host_code_types(), "allowed": reason is None, "reason": reason}

    def check_host_code(
        self, who: Principal, handler_type: object, config: object, action: str
    ) -> None:
        """The host-code boundary for API calls, on the raw definition (before validation,
        which may import code): refused on the standard edition, and to tenant keys unless
        ``--tenant-host-code``. Admin role at least, even for a dry run."""
        if not runs_host_code(handler_type, config):
            return
        refusal = edition_refusal(self.edition, str(handler_type))
        if refusal is not None:
            raise ApiError(
                "INVALID_REQUEST",
                f"handler_type: {refusal}",
                details={"problems": [{"field": "handler_type", "message": refusal}]},
            )
        require_role(who, "admin", f"{action} a {handler_type} hook")
        if not who.master and not self.options.tenant_host_code:
            raise ApiError("UNAUTHORIZED", master_refusal(str(handler_type), action))

    def check_allowed(self, handler_type: object, config: object) -> None:
        """Gateway-only rule before validation: ``callable`` hooks run Python inside the
        gateway, so they may only name functions in modules the operator allowed. Checked on
        the string, before validation imports anything."""
        if handler_type != "callable":
            return
        target = config.get("callable") if isinstance(config, Mapping) else None
        allowed = self.options.callable_modules
        if not module_allowed(target, allowed):
            hint = (
                f"allowed modules: {', '.join(allowed)}"
                if allowed
                else "start the gateway with --allow-callable MODULE to permit them"
            )
            raise ApiError(
                "INVALID_REQUEST",
                f"config: callable {target!r} is not in an allowed module; {hint}",
                details={"problems": [{"field": "config", "message": "callable not allowed"}]},
            )

    def check_credentials(self, definition: HookDefinition) -> None:
        """A model hook may only spend credentials its author supplied: no ``api_key_env``,
        no ``base_url`` without its own ``api_key``, only providers this gateway has."""
        if not calls_models(definition.handler_type):
            return
        problems = credential_problems(definition.config, self.providers)
        if problems:
            raise ApiError(
                "INVALID_REQUEST",
                "; ".join(f"{field}: {message}" for field, message in problems),
                details={"problems": [{"field": f, "message": m} for f, m in problems]},
            )

    def info(self, who: Principal) -> dict[str, Any]:
        """This gateway's facts for a caller (the ``connect`` method adds the event
        catalogue and the method names)."""
        return {
            "edition": self.edition,
            "role": who.role,
            "tenantId": who.tenant_id,
            "isMasterScope": who.master,
            "keyName": who.key_name,
            "version": __version__,
            "handlerTypes": self.handler_types(),
            "handlerConfigs": self.handler_configs(),
            "llmProviders": self.providers.info(),
            "hostCode": self.host_code_info(who),
        }

    def open_error_detail(self, row: ExecutionRow) -> str | None:
        """The decrypted full error of an execution (admins only; None when unavailable)."""
        if row.error_detail is None or self.keyring is None:
            return None
        try:
            return open_error_detail(self.keyring, row)
        except Exception as exc:  # a rotated-away key: say so in the log, show nothing
            log_event("hookgate.error_detail_unreadable", execution_id=row.id, error=str(exc))
            return None

    # -- breakers and audit state ------------------------------------------------------------

    def _breaker_changed(self, hook_id: str, status: BreakerStatus) -> None:
        self._breaker_states[hook_id] = status.state
        self._breaker_recorder(hook_id, status)  # persisted for the panel and other replicas

    def _breaker_states_view(self) -> Mapping[str, str]:
        return self._breaker_states

    def _audit_stats(self) -> Mapping[str, float]:
        stats = self.audit.stats
        now = time.monotonic()
        committed, since = self._audit_progress
        if stats.committed != committed or stats.queued == 0:
            self._audit_progress = (stats.committed, now)
            since = now
        return {
            "pending": float(stats.queued),
            # Seconds the writer has made no progress while rows wait (0 when none wait).
            "lag_seconds": now - since if stats.queued else 0.0,
            "written": float(stats.committed),
            "dropped": 0.0,
            "failures": float(stats.failures),
        }


async def _bounded_step(step: str, close: Callable[[], Awaitable[object]]) -> None:
    started = time.monotonic()
    try:
        async with asyncio.timeout(CLOSE_STEP_TIMEOUT_S):
            await close()
    except TimeoutError:
        log_event("hookgate.gateway.close_step_timeout", level=logging.ERROR, step=step,
                  timeout_s=CLOSE_STEP_TIMEOUT_S)
        return
    took = time.monotonic() - started
    if took > 1.0:  # named, so a slow shutdown says where its time went
        log_event("hookgate.gateway.close_step_slow", level=logging.WARNING, step=step,
                  seconds=round(took, 3))
