"""The fast hooks the gateway benchmarks allow as ``callable`` hooks."""

from __future__ import annotations

from typing import Any


def allow(event: Any) -> dict[str, Any]:
    return {"decision": "allow"}


def block(event: Any) -> dict[str, Any]:
    return {"decision": "block", "reason": "bench gate"}
