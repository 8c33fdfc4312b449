"""The read-only view of an event that Python hooks receive."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

__all__ = ["HookEvent"]


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
        # Only called for names that are not slots: event fields read as attributes.
        if key.startswith("__"):
            raise AttributeError(key)
        return self._payload.get(key)

    @property
    def payload(self) -> Mapping[str, Any]:
        return self._payload

    def __repr__(self) -> str:
        return f"HookEvent({self.name!r}, {dict(self._payload)!r})"
