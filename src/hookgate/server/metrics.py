"""Prometheus metrics for ``/metrics``: executions, latencies, breakers, queue drops, audit lag.

Counters and histograms are fed from the engine's execution records (one listener call per
event) and from the dispatch method; gauges that mirror state elsewhere (breakers, the
background queue, the audit writer) are read when Prometheus scrapes, so they cost nothing
between scrapes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Final

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from hookgate.audit import ExecutionRecord

__all__ = ["CONTENT_TYPE", "GatewayMetrics"]

CONTENT_TYPE: Final = "text/plain; version=0.0.4; charset=utf-8"
_LATENCY_BUCKETS: Final = (
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
)
_BREAKER_VALUE: Final = {"closed": 0.0, "half_open": 1.0, "open": 2.0}


class _StateCollector(Collector):
    """Reads the gauges at scrape time from callables the gateway provides."""

    def __init__(
        self,
        breakers: Callable[[], Mapping[str, str]],
        engine_stats: Callable[[], Mapping[str, int]],
        audit_stats: Callable[[], Mapping[str, float]],
    ) -> None:
        self._breakers = breakers
        self._engine_stats = engine_stats
        self._audit_stats = audit_stats

    def collect(self) -> Iterable[Metric]:
        states = GaugeMetricFamily(
            "hookgate_breaker_state",
            "Circuit breaker of a hook: 0 closed, 1 half-open, 2 open (hooks that ever faulted).",
            labels=["hook_id"],
        )
        counts = dict.fromkeys(_BREAKER_VALUE, 0)
        for hook_id, state in self._breakers().items():
            states.add_metric([hook_id], _BREAKER_VALUE.get(state, 0.0))
            counts[state] = counts.get(state, 0) + 1
        yield states
        open_total = GaugeMetricFamily(
            "hookgate_breakers", "Hooks per circuit-breaker state.", labels=["state"]
        )
        for state, count in counts.items():
            open_total.add_metric([state], float(count))
        yield open_total
        stats = self._engine_stats()
        dropped = CounterMetricFamily(
            "hookgate_background_dropped",
            "Non-blocking events dropped because the background queue was full.",
        )
        dropped.add_metric([], float(stats.get("background_dropped", 0)))
        yield dropped
        stuck = GaugeMetricFamily(
            "hookgate_hook_threads_stuck",
            "Worker threads still running a plain hook function that overran its timeout.",
        )
        stuck.add_metric([], float(stats.get("hook_threads_stuck", 0)))
        yield stuck
        shadow_stuck = GaugeMetricFamily(
            "hookgate_shadow_hook_threads_stuck",
            "Shadow hooks' worker threads still running past their timeout (a pool of their "
            "own: they count against no enforce hook's cap).",
        )
        shadow_stuck.add_metric([], float(stats.get("shadow_hook_threads_stuck", 0)))
        yield shadow_stuck
        abandoned = CounterMetricFamily(
            "hookgate_hook_threads_abandoned",
            "Plain hook calls given up at their deadline (the caller got the timeout).",
        )
        abandoned.add_metric([], float(stats.get("hook_threads_abandoned", 0)))
        yield abandoned
        failed = CounterMetricFamily(
            "hookgate_background_failed", "Background chains that raised (isolated)."
        )
        failed.add_metric([], float(stats.get("background_failed", 0)))
        yield failed
        audit = self._audit_stats()
        pending = GaugeMetricFamily(
            "hookgate_audit_pending_rows", "Execution rows accepted but not yet committed."
        )
        pending.add_metric([], float(audit.get("pending", 0.0)))
        yield pending
        lag = GaugeMetricFamily(
            "hookgate_audit_lag_seconds",
            "Age of the oldest execution row not yet committed (0 when none is waiting).",
        )
        lag.add_metric([], float(audit.get("lag_seconds", 0.0)))
        yield lag
        written = CounterMetricFamily(
            "hookgate_audit_rows_written", "Execution rows committed to the store."
        )
        written.add_metric([], float(audit.get("written", 0.0)))
        yield written
        audit_dropped = CounterMetricFamily(
            "hookgate_audit_rows_dropped", "Execution rows the audit writer could not keep."
        )
        audit_dropped.add_metric([], float(audit.get("dropped", 0.0)))
        yield audit_dropped


class GatewayMetrics:
    """The gateway's metrics, on a registry of their own (not the process-global one)."""

    def __init__(
        self,
        *,
        breakers: Callable[[], Mapping[str, str]] = dict,
        engine_stats: Callable[[], Mapping[str, int]] = dict,
        audit_stats: Callable[[], Mapping[str, float]] = dict,
    ) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        self.executions = Counter(
            "hookgate_hook_executions",
            "Hook executions by event, handler type and decision.",
            ["event", "handler_type", "decision"],
            registry=self.registry,
        )
        self.hook_latency = Histogram(
            "hookgate_hook_duration_seconds",
            "Time one hook took, by event and handler type.",
            ["event", "handler_type"],
            buckets=_LATENCY_BUCKETS,
            registry=self.registry,
        )
        self.dispatches = Counter(
            "hookgate_dispatches",
            "Events dispatched through the gateway, by event and outcome decision.",
            ["event", "decision"],
            registry=self.registry,
        )
        self.dispatch_latency = Histogram(
            "hookgate_dispatch_duration_seconds",
            "Time from a dispatch request to its outcome inside the gateway, by event.",
            ["event"],
            buckets=_LATENCY_BUCKETS,
            registry=self.registry,
        )
        self.requests = Counter(
            "hookgate_requests",
            "API requests by method, transport and result (ok or the error code).",
            ["method", "transport", "result"],
            registry=self.registry,
        )
        self.connections = Counter(
            "hookgate_ws_connections", "WebSocket connections accepted.", registry=self.registry
        )
        self.registry.register(_StateCollector(breakers, engine_stats, audit_stats))
        self._execution_children: dict[tuple[str, str, str], tuple[Any, Any]] = {}
        self._dispatch_children: dict[tuple[str, str], tuple[Any, Any]] = {}
        self._request_children: dict[tuple[str, str, str], Any] = {}

    def observe_records(self, records: Sequence[ExecutionRecord]) -> None:
        """Engine listener: count and time each execution."""
        children = self._execution_children
        for record in records:
            key = (record.event, record.handler_type, record.decision)
            pair = children.get(key)
            if pair is None:
                # labels() takes a lock and builds a tuple each call: resolve each label set once.
                pair = children[key] = (
                    self.executions.labels(*key),
                    self.hook_latency.labels(record.event, record.handler_type),
                )
            pair[0].inc()
            pair[1].observe(record.duration_ms / 1000.0)

    def observe_dispatch(self, event: str, decision: str, seconds: float) -> None:
        key = (event, decision)
        pair = self._dispatch_children.get(key)
        if pair is None:
            pair = self._dispatch_children[key] = (
                self.dispatches.labels(event, decision),
                self.dispatch_latency.labels(event),
            )
        pair[0].inc()
        pair[1].observe(seconds)

    def count_request(self, method: str, transport: str, result: str) -> None:
        key = (method, transport, result)
        child = self._request_children.get(key)
        if child is None:
            child = self._request_children[key] = self.requests.labels(*key)
        child.inc()

    def render(self) -> bytes:
        return generate_latest(self.registry)
