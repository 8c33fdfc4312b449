"""Timestamps on the wire: ISO 8601 in UTC with a ``Z``."""

from __future__ import annotations

from datetime import UTC, datetime

__all__ = ["iso"]


def iso(ts: float | None) -> str | None:
    """A Unix time as ``2026-01-02T03:04:05.678Z`` (``None`` stays ``None``)."""
    if ts is None:
        return None
    return datetime.fromtimestamp(ts, UTC).isoformat().replace("+00:00", "Z")
