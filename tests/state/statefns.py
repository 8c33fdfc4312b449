"""Callable hooks with state, used by the state tests (and allowed on their test gateways)."""

from __future__ import annotations

from typing import Any


def remember(event: Any) -> dict[str, Any] | None:
    """Keeps ``tool_input.remember`` in the session; tells what it holds on every call."""
    session = event.state.session
    note = (event.tool_input or {}).get("remember")
    if note is not None:
        session["note"] = note
    held = session.get("note")
    return {"additional_context": f"note={held}"} if held is not None else None


def count_run(event: Any) -> dict[str, Any]:
    run = event.state.run
    run["calls"] = run.get("calls", 0) + 1
    return {"additional_context": f"calls={run['calls']}"}


def too_big(event: Any) -> None:
    event.state.session["blob"] = "x" * 20000
