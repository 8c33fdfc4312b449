"""One OpenTelemetry span per hook execution, named ``hook.<handler_type>.<event>``.

Spans are built from the engine's execution records after the fact (start = end − duration),
so tracing never sits inside the chain. A dispatch that carries a W3C ``traceparent`` makes
its hooks' spans children of the caller's span. Without the OpenTelemetry SDK (the ``otel``
extra) nothing is configured, the listener is not installed, and tracing costs nothing; with
it, ``--trace-exporter`` chooses OTLP, the console, or a JSON-lines file.
"""

from __future__ import annotations

import importlib
from collections import OrderedDict
from collections.abc import Sequence
from typing import IO, Any, Final

from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from hookgate.audit import ExecutionRecord
from hookgate.errors import HookgateError

__all__ = ["HookTracer", "TraceSetupError", "configure_tracing", "parse_traceparent"]

_PROPAGATOR: Final = TraceContextTextMapPropagator()
_FAILED: Final = frozenset({"error", "timeout"})
_MAX_PENDING_PARENTS: Final = 10_000


class TraceSetupError(HookgateError, RuntimeError):
    """The requested exporter cannot be set up (the SDK or exporter package is missing)."""


def parse_traceparent(value: str | None) -> tuple[Context, str] | None:
    """The context and trace id (hex) of a W3C ``traceparent``; None when absent or invalid."""
    if not value:
        return None
    context = _PROPAGATOR.extract({"traceparent": value})
    span_context = trace.get_current_span(context).get_span_context()
    if not span_context.is_valid:
        return None
    return context, format(span_context.trace_id, "032x")


def configure_tracing(spec: str | None, *, service_name: str = "hookgate") -> Any | None:
    """Install an SDK tracer provider for ``spec``: ``none``/empty, ``otlp``, ``console`` or
    ``jsonl:PATH``. Returns the provider (call ``shutdown()`` to flush) or None."""
    if not spec or spec == "none":
        return None
    try:
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor, ConsoleSpanExporter
    except ImportError as exc:
        raise TraceSetupError(
            f"--trace-exporter {spec} needs the OpenTelemetry SDK: pip install 'hookgate[otel]'"
        ) from exc
    exporter: Any
    if spec == "otlp":
        try:
            otlp = importlib.import_module("opentelemetry.exporter.otlp.proto.http.trace_exporter")
        except ImportError as exc:
            raise TraceSetupError(
                "--trace-exporter otlp needs opentelemetry-exporter-otlp-proto-http: "
                "pip install 'hookgate[otel]'"
            ) from exc
        exporter = otlp.OTLPSpanExporter()  # endpoint from OTEL_EXPORTER_OTLP_ENDPOINT
    elif spec == "console":
        exporter = ConsoleSpanExporter()
    elif spec.startswith("jsonl:"):
        stream: IO[str] = open(spec[len("jsonl:") :], "a", encoding="utf-8")  # noqa: SIM115
        exporter = ConsoleSpanExporter(
            out=stream, formatter=lambda span: span.to_json(indent=None) + "\n"
        )
    else:
        raise TraceSetupError(
            f"unknown trace exporter {spec!r}; use none, otlp, console or jsonl:PATH"
        )
    provider = TracerProvider(resource=Resource.create({"service.name": service_name}))
    provider.add_span_processor(BatchSpanProcessor(exporter))
    trace.set_tracer_provider(provider)
    return provider


class HookTracer:
    """Engine listener that turns execution records into spans."""

    def __init__(self, tracer: trace.Tracer | None = None) -> None:
        self._tracer = tracer or trace.get_tracer("hookgate")
        # event id -> the caller's context, set by dispatch and taken when the records come
        self._parents: OrderedDict[str, Context] = OrderedDict()

    @staticmethod
    def active() -> bool:
        """Whether an SDK provider is installed (otherwise spans would be no-ops)."""
        provider = trace.get_tracer_provider()
        return not isinstance(provider, trace.ProxyTracerProvider | trace.NoOpTracerProvider)

    def expect(self, event_id: str, parent: Context) -> None:
        """Remember the caller's span for the hooks that will run for ``event_id``."""
        self._parents[event_id] = parent
        if len(self._parents) > _MAX_PENDING_PARENTS:
            self._parents.popitem(last=False)

    def forget(self, event_id: str) -> None:
        self._parents.pop(event_id, None)

    def observe_records(self, records: Sequence[ExecutionRecord]) -> None:
        if not records:
            return
        parent = self._parents.pop(records[0].event_id, None)
        parent_span_id = None
        if parent is not None:
            span_context = trace.get_current_span(parent).get_span_context()
            parent_span_id = format(span_context.span_id, "016x")
        for record in records:
            end_ns = int(record.created_at * 1e9)
            start_ns = end_ns - int(record.duration_ms * 1e6)
            span = self._tracer.start_span(
                f"hook.{record.handler_type}.{record.event}",
                context=parent,
                kind=trace.SpanKind.INTERNAL,
                start_time=start_ns,
            )
            failed = record.decision in _FAILED
            attributes: dict[str, Any] = {
                "status": "error" if failed else "ok",
                "duration_ms": record.duration_ms,
                "metadata.decision": record.decision,
                "hook.id": record.hook_id,
                "hook.name": record.hook_name,
                "hook.version": record.hook_version,
                "hook.event": record.event,
                "hook.handler_type": record.handler_type,
                "event.id": record.event_id,
            }
            if parent_span_id is not None:
                attributes["parent_span_id"] = parent_span_id
            if record.tenant_id:
                attributes["tenant.id"] = record.tenant_id
            if record.session_id:
                attributes["session.id"] = record.session_id
            span.set_attributes(attributes)
            if failed:
                span.set_status(trace.Status(trace.StatusCode.ERROR, record.decision))
            span.end(end_time=end_ns)
