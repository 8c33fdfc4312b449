"""The live policy's callable hook for the replay tests' gateways (``--allow-callable``)."""

from __future__ import annotations

from typing import Any


def no_rm(event: Any) -> dict[str, Any] | None:
    cmd = str(event.get("tool_input", {}).get("cmd", ""))
    if cmd.startswith("rm"):
        return {"decision": "block", "reason": "rm is not allowed"}
    return None


def no_rm_or_push(event: Any) -> dict[str, Any] | None:
    cmd = str(event.get("tool_input", {}).get("cmd", ""))
    if cmd.startswith(("rm", "git push")):
        return {"decision": "block", "reason": "rm and git push are not allowed"}
    return None


def quote_input(event: Any) -> dict[str, Any]:
    """Blocks quoting the whole input (a secret in it must not leave the replay readable)."""
    return {"decision": "block", "reason": f"refused: {event.get('tool_input')}"}
