"""What a coding agent's hook prints (:class:`BridgeReply`), and the one question every
agent's contract asks of an outcome (:func:`block_reason`). Apart from
:mod:`.agent_bridge` so that each agent's contract can use them without a circle back."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from hookgate.outcome import Outcome

__all__ = ["BridgeReply", "block_reason"]


@dataclass(slots=True)
class BridgeReply:
    """What the hook prints: a JSON object on stdout (or nothing), a note on stderr."""

    stdout: dict[str, Any] | None = None
    stderr: str = ""


def block_reason(outcome: Outcome) -> str | None:
    """Why the outcome blocks, or why a hook asked to block a non-blocking event (a
    ``post_tool_use`` hook withholding an output: the chain records it without deciding)."""
    if outcome.blocked:
        return outcome.reason or "blocked by hookgate"
    for entry in outcome.trace:
        if entry.decision == "block":
            return str(entry.details.get("reason") or f"blocked by hook {entry.name!r}")
    return None
