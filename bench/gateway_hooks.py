"""The fast hook the gateway benchmark allows as a ``callable`` hook."""

from __future__ import annotations

from typing import Any


def allow(event: Any) -> dict[str, Any]:
    return {"decision": "allow"}
