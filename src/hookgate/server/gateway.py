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
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final, Protocol

from hookgate import __version__
from hookgate.audit import AuditSink
from hookgate.definition import HookDefinition
from hookgate.engine import Engine
from hookgate.handlers import Services, available_handler_types
from hookgate.log import log_event
from hookgate.safeguards import BreakerStatus
from hookgate.server.auth import Authenticator, Principal
from hookgate.server.errors import ApiError
from hookgate.server.hook_cache import StoreHookSource
from hookgate.server.metrics import GatewayMetrics
from hookgate.server.tracing import HookTracer
from hookgate.settings import Settings
from hookgate.store import BreakerSnapshot, Caller, ExecutionRow, Store, StoreError

__all__ = ["ClosableAudit", "Gateway", "GatewayOptions", "open_audit"]

DEFAULT_MAX_FRAME_BYTES: Final = 1 << 20


class ClosableAudit(AuditSink, Protocol):
    """An audit sink the gateway can flush and close on shutdown."""

    async def aclose(self) -> None: ...


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
    extra: dict[str, Any] = field(default_factory=dict)


class Gateway:
    def __init__(
        self,
        store: Store,
        *,
        options: GatewayOptions | None = None,
        settings: Settings | None = None,
        audit: ClosableAudit | None = None,
        services: Services | None = None,
        keyring: Any = None,
        tracing: bool | None = None,
        tracer_provider: Any = None,
    ) -> None:
        self.options = options or GatewayOptions()
        self.settings = settings or Settings.from_env()
        self.settings.edition = self.options.edition  # type: ignore[assignment]
        self.store = store
        self.keyring = keyring
        self.source = StoreHookSource(store)
        self.audit = audit
        self.engine = Engine(
            settings=self.settings, source=self.source, audit=audit, services=services
        )
        self.auth = Authenticator(store)
        self._breaker_states: dict[str, str] = {}
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
        self.engine.breakers.on_change = self._breaker_changed
        self._event_prefix = uuid.uuid4().hex[:12]
        self._event_counter = 0
        self._closing = False
        self._inflight = 0
        self._idle = asyncio.Event()
        self._idle.set()
        self._background: set[asyncio.Task[Any]] = set()
        self.started_at = time.time()

    @property
    def edition(self) -> str:
        return self.options.edition

    # -- lifecycle ------------------------------------------------------------------------------

    async def start(self) -> None:
        await self.source.reload()
        self.source.start_polling()
        log_event(
            "hookgate.gateway.started",
            level=logging.INFO,
            edition=self.edition,
            hooks=len(self.source.hook_ids()),
            backend=getattr(self.store, "backend", "?"),
        )

    async def close(self, *, drain_timeout_s: float = 30.0) -> None:
        """Graceful shutdown: wait for in-flight requests, drain hooks, flush the audit log."""
        if self._closing:
            return
        self._closing = True
        try:
            await asyncio.wait_for(self._idle.wait(), timeout=drain_timeout_s)
        except TimeoutError:
            log_event("hookgate.gateway.drain_timeout", inflight=self._inflight)
        await self.source.stop_polling()
        await self.engine.aclose()  # runs every queued non-blocking event
        if self._background:
            await asyncio.gather(*self._background, return_exceptions=True)
        if self.audit is not None:
            await self.audit.aclose()  # flushes every accepted row
        await self.store.close()
        if self._tracer_provider is not None:
            # Flush spans here: uvicorn re-raises SIGTERM once the app has shut down.
            await asyncio.to_thread(self._tracer_provider.shutdown)
        log_event("hookgate.gateway.stopped", level=logging.INFO, fired=self.engine.stats.fired)

    @property
    def closing(self) -> bool:
        return self._closing

    def enter(self) -> None:
        """Count a request in; refused once shutdown began."""
        if self._closing:
            raise ApiError("UNAVAILABLE", "the gateway is shutting down", retryable=True)
        self._inflight += 1
        self._idle.clear()

    def leave(self) -> None:
        self._inflight -= 1
        if self._inflight == 0:
            self._idle.set()

    # -- helpers for the methods ---------------------------------------------------------------

    def new_event_id(self) -> str:
        self._event_counter += 1
        return f"{self._event_prefix}-{self._event_counter}"

    async def hooks_changed(self) -> None:
        await self.source.reload()

    def forget_hook(self, definition: HookDefinition) -> None:
        """Drop per-hook handler state of a hook that changed or went away."""
        handler = self.engine._handlers.get(definition.handler_type)
        if handler is not None:
            handler.forget(definition.id)

    def handler_types(self) -> list[str]:
        types = []
        for name in available_handler_types():
            if name == "command" and self.edition == "standard":
                continue
            if name == "callable" and not self.options.callable_modules:
                continue
            types.append(name)
        return types

    def check_allowed(self, definition: HookDefinition) -> None:
        """Gateway-only rules on top of validation: ``callable`` hooks run Python inside the
        gateway, so they may only name functions in modules the operator allowed."""
        if definition.handler_type != "callable":
            return
        target = definition.config.get("callable")
        module = target.partition(":")[0] if isinstance(target, str) else ""
        allowed = self.options.callable_modules
        if not module or not any(
            module == prefix or module.startswith(prefix + ".") for prefix in allowed
        ):
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

    def info(self, who: Principal) -> dict[str, Any]:
        from hookgate.server.methods import EVENTS_INFO, METHODS

        return {
            "edition": self.edition,
            "role": who.role,
            "tenant_id": who.tenant_id,
            "is_master_scope": who.master,
            "key_name": who.key_name,
            "version": __version__,
            "handler_types": self.handler_types(),
            "events": EVENTS_INFO,
            "methods": sorted(METHODS),
        }

    def open_error_detail(self, row: ExecutionRow) -> str | None:
        """The decrypted full error of an execution (admins only; None when unavailable)."""
        if row.error_detail is None:
            return None
        opener = getattr(self.store, "open_error_detail", None)
        if opener is None:
            return None
        try:
            text = opener(row)
        except Exception as exc:
            log_event("hookgate.error_detail_unreadable", execution_id=row.id, error=str(exc))
            return None
        return text if isinstance(text, str) else None

    # -- breakers and audit state ------------------------------------------------------------

    def _breaker_changed(self, hook_id: str, status: BreakerStatus) -> None:
        self._breaker_states[hook_id] = status.state
        snapshot = BreakerSnapshot(
            state=status.state,
            recent_faults=len(status.faults),
            last_fault=status.last_fault,
            changed_at=time.time(),
        )
        try:
            task = asyncio.get_running_loop().create_task(self._save_breaker(hook_id, snapshot))
        except RuntimeError:
            return
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    async def _save_breaker(self, hook_id: str, snapshot: BreakerSnapshot) -> None:
        try:
            await self.store.save_breaker_state(Caller.system(), hook_id, snapshot)
        except StoreError as exc:
            log_event("hookgate.breaker_save_failed", hook_id=hook_id, error=str(exc))

    def _breaker_states_view(self) -> Mapping[str, str]:
        return self._breaker_states

    def _audit_stats(self) -> Mapping[str, float]:
        stats = getattr(self.audit, "stats", None)
        if callable(stats):
            value = stats()
            if isinstance(value, Mapping):
                return value
        return {}


def open_audit(store: Store, mode: str = "async") -> ClosableAudit:
    """The audit writer for ``store`` in ``mode`` (``async`` or ``sync``)."""
    from hookgate.server.audit_bridge import StoreAudit

    return StoreAudit(store, sync=mode == "sync")
