"""What the adapter tests share: an engine whose hooks the test sets, and a record of calls."""

from __future__ import annotations

import importlib.util
import socket
from collections.abc import Callable
from typing import Any

import pytest
from tests.conftest import IN_CI, require_service

from hookgate import Engine, HookEvent


def require_package(module: str, extra: str) -> None:
    """Call at module level, before importing the framework: fails under CI=true (where
    scripts/bootstrap installs every extra), skips the module elsewhere."""
    available = importlib.util.find_spec(module) is not None
    why = f"pip install -e '.[{extra}]' (scripts/bootstrap installs it)"
    if not available and not IN_CI:
        pytest.skip(f"{module} not installed: {why}", allow_module_level=True)
    require_service(module, available, why)


class Seen:
    """Every event the engine fired, in order, with its payload (a copy)."""

    def __init__(self) -> None:
        self.events: list[tuple[str, dict[str, Any]]] = []

    def names(self) -> list[str]:
        return [name for name, _ in self.events]

    def payloads(self, name: str) -> list[dict[str, Any]]:
        return [payload for event, payload in self.events if event == name]


EVENTS = (
    "session_start",
    "user_prompt_submit",
    "before_llm",
    "after_llm",
    "pre_tool_use",
    "post_tool_use",
    "post_tool_use_failure",
    "stop",
    "subagent_start",
    "subagent_stop",
)


#: The hooks of each adapter's prompt-and-model test: the prompt becomes "list files", the
#: system prompt "be very careful" with "today is Sunday" added, and the model's text is
#: upper-cased on its way back.
PROMPT_AND_MODEL_REWRITES: dict[str, Callable[[HookEvent], Any]] = {
    "user_prompt_submit": lambda e: {"updated_input": "list files"},
    "before_llm": lambda e: {
        "updated_input": {**e.request, "system": "be very careful"},
        "additional_context": "today is Sunday",
    },
    "after_llm": lambda e: (
        {"updated_input": e.response["text"].upper()} if e.response["text"] else None
    ),
}


def engine_with(
    answers: dict[str, Callable[[HookEvent], Any]] | None = None,
) -> tuple[Engine, Seen]:
    """An engine with one recording hook per event; ``answers[event]`` decides its answer."""
    engine = Engine()
    seen = Seen()
    answers = answers or {}

    def make(name: str) -> Callable[[HookEvent], Any]:
        answer = answers.get(name)

        def hook(event: HookEvent) -> Any:
            seen.events.append((name, dict(event.payload)))
            return answer(event) if answer is not None else None

        hook.__qualname__ = f"record_{name}"
        return hook

    for name in EVENTS:
        engine.hook(name)(make(name))
    return engine, seen


def closed_port() -> int:
    """A loopback port nothing listens on (a gateway that is down)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def add_context_hook(engine: Engine) -> list[HookEvent]:
    """The engine's only hook: ``pre_tool_use`` for ``shell``, adding ``policy: read-only
    host``; returns the events it saw. The tests add it after the agent was built: adapters
    skip events that have no hook, so this checks that the skip is decided at each event."""
    seen: list[HookEvent] = []

    @engine.hook("pre_tool_use", matcher="^shell$")
    def read_only(event: HookEvent) -> dict[str, Any]:
        seen.append(event)
        return {"additional_context": "policy: read-only host"}

    return seen
