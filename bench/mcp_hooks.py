"""The callable hook of the mcp-proxy benchmark: looks at the call and lets it through."""

from __future__ import annotations

from typing import Any

from hookgate.hook_event import HookEvent


def check_add(event: HookEvent) -> dict[str, Any] | None:
    if (event.tool_input or {}).get("a") == 666:
        return {"decision": "block", "reason": "not this number"}
    return None
