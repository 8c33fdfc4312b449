"""The runtime event bus: observe-only events from the agent loop, PicoClaw's event kinds.

An agent publishes what happens (a turn starts, a model is called, a tool runs, a sub-agent
ends, an error) and observers watch. Nothing an observer does can block or slow the agent:
:meth:`RuntimeEventBus.publish` never waits, events go into a bounded queue (64 by default,
PicoClaw's size) and, when it is full, the *new* event is dropped and counted
(PicoClaw's drop-newest policy). One dispatcher task delivers events in order.

Two kinds of observer receive them:

* in-process observers, ``bus.subscribe(fn, kinds=[...])`` (plain or ``async`` functions,
  each call bounded by the observer timeout, 500 ms by default);
* hooks on the ``runtime_event`` event of an attached engine (``RuntimeEventBus(engine=…)``),
  which is how process hooks with an ``observe`` list get their ``hook.runtime_event``
  notifications. Their matcher tests the event ``kind``.

Kinds are PicoClaw's dotted names (``agent.tool.exec_start``); the short aliases of its
``observe`` lists (``tool_exec_start``) and ``*``/``all`` are accepted by
:func:`normalize_observe` and :meth:`RuntimeEventBus.subscribe`.
"""

from __future__ import annotations

import asyncio
import inspect
import itertools
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from hookgate.events import KIND_ALIASES
from hookgate.log import log_event
from hookgate.runtime_kinds import (
    ALL_KINDS,
    KNOWN_KINDS,
    ObserveFilter,
    canonical_kind,
    normalize_observe,
    observes,
)

if TYPE_CHECKING:
    from hookgate.engine import Engine

__all__ = [
    "ALL_KINDS",
    "KIND_ALIASES",
    "KNOWN_KINDS",
    "BusStats",
    "ObserveFilter",
    "RuntimeEvent",
    "RuntimeEventBus",
    "Subscription",
    "canonical_kind",
    "normalize_observe",
    "observes",
]

def _severity(kind: str, payload: Any) -> str:
    """PicoClaw's severity rules for agent events."""
    status = None
    is_error = False
    if isinstance(payload, Mapping):
        status = payload.get("Status", payload.get("status"))
        is_error = bool(payload.get("IsError", payload.get("is_error", False)))
    if kind in ("agent.error", "agent.subturn.orphan") or (
        kind == "agent.turn.end" and status == "error"
    ):
        return "error"
    if kind in ("agent.llm.retry", "agent.context.compress", "agent.tool.exec_skipped") or (
        (kind == "agent.turn.end" and status == "aborted")
        or (kind == "agent.tool.exec_end" and is_error)
    ):
        return "warn"
    return "info"


@dataclass(frozen=True, slots=True)
class RuntimeEvent:
    """One runtime event, in the envelope PicoClaw sends as ``hook.runtime_event`` params."""

    id: str
    kind: str
    time: str
    source: Mapping[str, Any]
    scope: Mapping[str, Any]
    correlation: Mapping[str, Any]
    severity: str
    payload: Any
    attrs: Mapping[str, Any]

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "kind": self.kind,
            "time": self.time,
            "source": dict(self.source),
            "scope": dict(self.scope),
            "correlation": dict(self.correlation),
            "severity": self.severity,
            "payload": self.payload,
            "attrs": dict(self.attrs),
        }


Observer = Callable[[RuntimeEvent], Awaitable[None] | None]


@dataclass(slots=True)
class Subscription:
    observer: Observer
    kinds: ObserveFilter
    name: str
    timeout_s: float


@dataclass(slots=True)
class BusStats:
    published: int = 0
    delivered: int = 0
    dropped: int = 0
    failed: int = 0
    timed_out: int = 0

    def to_dict(self) -> dict[str, int]:
        return {
            "published": self.published,
            "delivered": self.delivered,
            "dropped": self.dropped,
            "failed": self.failed,
            "timed_out": self.timed_out,
        }


@dataclass(slots=True)
class _Dispatch:
    loop: asyncio.AbstractEventLoop
    queue: asyncio.Queue[RuntimeEvent]
    task: asyncio.Task[None]
    subscriptions: list[Subscription] = field(default_factory=list)


class RuntimeEventBus:
    """Bounded, drop-newest, in-order delivery of runtime events to observers.

    :param engine: hooks on its ``runtime_event`` event (process hooks with ``observe``,
        callable observers) receive every event.
    :param queue_size: events waiting for delivery; a full queue drops the new event.
    :param observer_timeout_s: the bound on each in-process observer call.
    """

    def __init__(
        self,
        *,
        engine: Engine | None = None,
        queue_size: int = 64,
        observer_timeout_s: float = 0.5,
        component: str = "agent",
    ) -> None:
        if queue_size < 1:
            raise ValueError("queue_size must be at least 1")
        self.engine = engine
        self.queue_size = queue_size
        self.observer_timeout_s = observer_timeout_s
        self.component = component
        self.stats = BusStats()
        self._subscriptions: list[Subscription] = []
        self._ids = itertools.count(1)
        self._dispatch: _Dispatch | None = None
        self._closed = False

    # -- observers ------------------------------------------------------------------------

    def subscribe(
        self,
        observer: Observer,
        *,
        kinds: Iterable[str] | None = ("*",),
        name: str | None = None,
        timeout_s: float | None = None,
    ) -> Subscription:
        """Call ``observer(event)`` for every published event whose kind is in ``kinds``."""
        subscription = Subscription(
            observer=observer,
            kinds=normalize_observe(kinds),
            name=name or str(getattr(observer, "__qualname__", None) or repr(observer)),
            timeout_s=self.observer_timeout_s if timeout_s is None else timeout_s,
        )
        self._subscriptions = [*self._subscriptions, subscription]
        return subscription

    def unsubscribe(self, subscription: Subscription) -> None:
        self._subscriptions = [s for s in self._subscriptions if s is not subscription]

    # -- publishing -----------------------------------------------------------------------

    def make_event(
        self,
        kind: str,
        payload: Any = None,
        *,
        scope: Mapping[str, Any] | None = None,
        source: Mapping[str, Any] | None = None,
        correlation: Mapping[str, Any] | None = None,
        severity: str | None = None,
        attrs: Mapping[str, Any] | None = None,
    ) -> RuntimeEvent:
        kind = canonical_kind(kind)
        return RuntimeEvent(
            id=f"evt-{next(self._ids)}",
            kind=kind,
            time=datetime.now(UTC).isoformat(),
            source=source or {"component": kind.partition(".")[0] or self.component},
            scope=scope or {},
            correlation=correlation or {},
            severity=severity or _severity(kind, payload),
            payload={} if payload is None else payload,
            attrs=attrs or {},
        )

    def publish(self, kind: str, payload: Any = None, **envelope: Any) -> bool:
        """Queue an event without waiting; ``False`` when it was dropped (queue full).

        Call it from the event loop the bus runs on (the first publish binds the bus to the
        running loop) or, from another thread, once the bus is bound: the event is then
        handed over thread-safely and counted as dropped there if the queue is full.
        """
        if self._closed:
            raise RuntimeError("the runtime event bus is closed")
        event = self.make_event(kind, payload, **envelope)
        self.stats.published += 1
        dispatch = self._dispatch
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if dispatch is None or dispatch.loop.is_closed():
            if running is None:
                raise RuntimeError(
                    "publish the first runtime event from inside the event loop that will "
                    "deliver it (or await bus.start() there)"
                )
            dispatch = self._start(running)
        if running is dispatch.loop:
            return self._offer(dispatch, event)
        dispatch.loop.call_soon_threadsafe(self._offer, dispatch, event)
        return True

    async def start(self) -> None:
        """Bind the bus to the running loop now (so other threads may publish)."""
        dispatch = self._dispatch
        if dispatch is None or dispatch.loop.is_closed():
            self._start(asyncio.get_running_loop())

    def _start(self, loop: asyncio.AbstractEventLoop) -> _Dispatch:
        queue: asyncio.Queue[RuntimeEvent] = asyncio.Queue(maxsize=self.queue_size)
        task = loop.create_task(self._deliver_forever(queue), name="hookgate-runtime-events")
        self._dispatch = _Dispatch(loop=loop, queue=queue, task=task)
        return self._dispatch

    def _offer(self, dispatch: _Dispatch, event: RuntimeEvent) -> bool:
        try:
            dispatch.queue.put_nowait(event)
        except asyncio.QueueFull:
            self.stats.dropped += 1
            log_event(
                "hookgate.runtime_event.dropped",
                kind=event.kind,
                dropped_total=self.stats.dropped,
                queue_size=self.queue_size,
            )
            return False
        return True

    # -- delivery -------------------------------------------------------------------------

    async def _deliver_forever(self, queue: asyncio.Queue[RuntimeEvent]) -> None:
        while True:
            event = await queue.get()
            try:
                await self._deliver(event)
            finally:
                queue.task_done()

    async def _deliver(self, event: RuntimeEvent) -> None:
        for subscription in self._subscriptions:
            if observes(subscription.kinds, event.kind):
                await self._call_observer(subscription, event)
        engine = self.engine
        if engine is not None and engine.source.has_event("runtime_event"):
            try:
                outcome = await engine.fire("runtime_event", event.to_dict(), wait=True)
            except Exception as exc:  # isolated: observers never reach the publisher
                self.stats.failed += 1
                log_event("hookgate.runtime_event.engine_failed", kind=event.kind, error=str(exc))
                return
            for entry in outcome.trace:
                if entry.decision == "timeout":
                    self.stats.timed_out += 1
                elif entry.decision == "error":
                    self.stats.failed += 1
                elif entry.matched:
                    self.stats.delivered += 1

    async def _call_observer(self, subscription: Subscription, event: RuntimeEvent) -> None:
        try:
            answer = subscription.observer(event)
            if inspect.isawaitable(answer):
                async with asyncio.timeout(subscription.timeout_s):
                    await answer
        except TimeoutError:
            self.stats.timed_out += 1
            log_event(
                "hookgate.runtime_event.observer_timeout",
                observer=subscription.name,
                kind=event.kind,
                timeout_s=subscription.timeout_s,
            )
        except Exception as exc:
            self.stats.failed += 1
            log_event(
                "hookgate.runtime_event.observer_failed",
                observer=subscription.name,
                kind=event.kind,
                error=str(exc),
            )
        else:
            self.stats.delivered += 1

    async def drain(self) -> None:
        """Wait until every queued event has been delivered."""
        dispatch = self._dispatch
        if dispatch is None:
            return
        if dispatch.loop is asyncio.get_running_loop():
            await dispatch.queue.join()
        else:
            done = asyncio.run_coroutine_threadsafe(dispatch.queue.join(), dispatch.loop)
            await asyncio.wrap_future(done)

    async def aclose(self) -> None:
        """Deliver what is queued, then stop the dispatcher."""
        if self._closed:
            return
        dispatch = self._dispatch
        if dispatch is not None and dispatch.loop is asyncio.get_running_loop():
            await dispatch.queue.join()
            dispatch.task.cancel()
            await asyncio.gather(dispatch.task, return_exceptions=True)
        self._closed = True

    async def __aenter__(self) -> RuntimeEventBus:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()
