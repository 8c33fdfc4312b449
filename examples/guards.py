"""Hook functions used by ``examples/hooks.yaml`` and ``examples/agent_loop.py``."""

from __future__ import annotations

from typing import Any

from hookgate import HookEvent

DANGEROUS = ("rm -rf /", "mkfs", "dd if=/dev/zero", ":(){ :|:& };:")


def block_dangerous_shell(event: HookEvent) -> dict[str, Any] | None:
    """Block shell commands that destroy the machine."""
    tool_input = event.tool_input or {}
    command = str(tool_input.get("cmd") or tool_input.get("command") or "")
    for needle in DANGEROUS:
        if needle in command:
            return {"decision": "block", "reason": f"dangerous shell command: {needle!r}"}
    return None


def keep_writes_in_workspace(event: HookEvent) -> dict[str, Any] | None:
    """Rewrite absolute paths into the workspace instead of refusing the call."""
    tool_input = dict(event.tool_input or {})
    path = str(tool_input.get("path", ""))
    if path.startswith("/"):
        tool_input["path"] = "workspace" + path
        return {"updated_input": tool_input, "reason": "absolute path moved into the workspace"}
    return None


def session_context(event: HookEvent) -> dict[str, Any]:
    """Give every session the house rules."""
    return {"additional_context": "House rules: never push to main; run the tests first."}
