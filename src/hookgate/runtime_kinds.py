"""PicoClaw's runtime event kinds and the ``observe`` filter over them.

A fact both the ``process`` handler (which runtime events reach a hook process) and the
PicoClaw integration (its event bus and config format) use, so it lives below both.
Kinds are PicoClaw's dotted names (``agent.tool.exec_start``); the short aliases of its
``observe`` lists (``tool_exec_start``, :data:`hookgate.events.KIND_ALIASES`) and
``*``/``all`` are accepted by :func:`normalize_observe`.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final

from hookgate.events import KIND_ALIASES

__all__ = [
    "ALL_KINDS",
    "KNOWN_KINDS",
    "ObserveFilter",
    "canonical_kind",
    "normalize_observe",
    "observes",
]

#: Every kind PicoClaw publishes (``pkg/events/kind.go``), in its order.
KNOWN_KINDS: Final[tuple[str, ...]] = (
    "agent.turn.start",
    "agent.turn.end",
    "agent.llm.request",
    "agent.llm.delta",
    "agent.llm.response",
    "agent.llm.retry",
    "agent.context.compress",
    "agent.session.summarize",
    "agent.tool.exec_start",
    "agent.tool.exec_end",
    "agent.tool.exec_skipped",
    "agent.steering.injected",
    "agent.follow_up.queued",
    "agent.interrupt.received",
    "agent.subturn.spawn",
    "agent.subturn.end",
    "agent.subturn.result_delivered",
    "agent.subturn.orphan",
    "agent.error",
    "channel.lifecycle.started",
    "channel.lifecycle.initialized",
    "channel.lifecycle.start_failed",
    "channel.lifecycle.stopped",
    "channel.webhook.registered",
    "channel.webhook.unregistered",
    "channel.message.outbound_queued",
    "channel.message.outbound_sent",
    "channel.message.outbound_failed",
    "channel.rate_limited",
    "bus.publish.failed",
    "bus.close.started",
    "bus.close.completed",
    "bus.close.drained",
    "gateway.start",
    "gateway.ready",
    "gateway.shutdown",
    "gateway.reload.started",
    "gateway.reload.completed",
    "gateway.reload.failed",
    "mcp.server.connected",
    "mcp.server.connecting",
    "mcp.server.failed",
    "mcp.tool.discovered",
    "mcp.tool.call.start",
    "mcp.tool.call.end",
)
_KNOWN: Final = frozenset(KNOWN_KINDS)


#: The observe filter that lets every kind through.
ALL_KINDS: Final = "*"
_ALL_NAMES: Final = frozenset({"", "*", "all"})

#: ``None`` observes nothing, ``"*"`` everything, a frozenset those kinds.
ObserveFilter = frozenset[str] | str | None


def canonical_kind(name: str) -> str:
    """The dotted kind for a kind or an alias; raise ValueError naming the unknown one."""
    if name in _KNOWN:
        return name
    alias = KIND_ALIASES.get(name)
    if alias is not None:
        return alias
    raise ValueError(
        f"unknown runtime event kind {name!r}; use a dotted kind such as agent.tool.exec_start "
        f"or an alias ({', '.join(sorted(KIND_ALIASES))})"
    )


def normalize_observe(names: Iterable[str] | None) -> ObserveFilter:
    """PicoClaw's ``observe`` rule: empty observes nothing, ``""``/``*``/``all`` everything.

    Names are checked in order, so an unknown name before a ``*`` is still an error.
    """
    if not names:
        return None
    kinds: list[str] = []
    for name in names:
        if not isinstance(name, str):
            raise ValueError(f"observe entries must be strings, got {name!r}")
        if name.strip() in _ALL_NAMES:
            return ALL_KINDS
        kinds.append(canonical_kind(name.strip()))
    return frozenset(kinds)


def observes(flt: ObserveFilter, kind: str) -> bool:
    if flt is None:
        return False
    if flt == ALL_KINDS:
        return True
    return kind in flt
