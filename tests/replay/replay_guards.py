"""The live policy's callable hook for the replay tests' gateways (``--allow-callable``)."""

from __future__ import annotations

from typing import Any


def no_rm(event: Any) -> dict[str, Any] | None:
    cmd = str(event.get("tool_input", {}).get("cmd", ""))
    if cmd.startswith("rm"):
        return {"decision": "block", "reason": "rm is not allowed"}
    return None
