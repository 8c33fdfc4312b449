"""The read-only view of an event that Python hooks receive."""

from __future__ import annotations

import functools
from collections.abc import Iterator, Mapping
from typing import Any

__all__ = ["HookEvent", "event_view"]

#: Makes an instance without calling its class's ``__init__``.
_new: Any = object.__new__


#: Fields any event may carry besides its own (tracing, Claude Code's stdin envelope).
_ENVELOPE = frozenset(
    {"trace_id", "transcript_path", "hook_event_name", "permission_mode", "stop_hook_active"}
)


@functools.cache
def _fields(event: str) -> frozenset[str]:
    """The fields ``event`` may carry (any field at all for a name not in the catalogue)."""
    from hookgate.events import KNOWN_FIELDS, UnknownEventError, get_event

    try:
        return frozenset(get_event(event).all_fields) | _ENVELOPE
    except UnknownEventError:
        return KNOWN_FIELDS


class HookEvent(Mapping[str, Any]):
    """An event as a callable hook sees it: ``event.name``, ``event["tool_input"]``,
    ``event.tool_name`` and friends. Rewrites by earlier hooks are already applied.

    It is a read-only mapping; to change the input, return ``{"updated_input": ...}``.
    """

    __slots__ = ("_payload", "name")

    def __init__(self, name: str, payload: Mapping[str, Any]) -> None:
        self.name = name
        self._payload = payload

    def __getitem__(self, key: str) -> Any:
        return self._payload[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._payload)

    def __len__(self) -> int:
        return len(self._payload)

    def __getattr__(self, key: str) -> Any:
        # Only called for names that are not slots: event fields read as attributes. A field
        # the event may carry but this one lacks reads as None; any other name is a typo
        # (``event.tool_nmae``), which must not read as None and let a check pass.
        payload = self._payload
        if key in payload:
            return payload[key]
        if key.startswith("__"):
            raise AttributeError(key)
        fields = _fields(self.name)
        if key in fields:
            return None
        known = sorted(set(fields) | set(payload))
        raise AttributeError(
            f"{self.name} event has no field {key!r}; known fields: {', '.join(known)}"
        )

    @property
    def payload(self) -> Mapping[str, Any]:
        return self._payload

    def __repr__(self) -> str:
        return f"HookEvent({self.name!r}, {dict(self._payload)!r})"


def event_view(name: str, payload: Mapping[str, Any]) -> HookEvent:
    """``HookEvent(name, payload)`` without a call to its Python ``__init__`` (about 1k
    instructions less in Python 3.11): the runners of plain functions make one per batch."""
    view: HookEvent = _new(HookEvent)
    view.name = name
    view._payload = payload
    return view
