"""``hookgate demo``: a short scripted agent session run through the engine."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import click

from hookgate.engine import Engine
from hookgate.hook_event import HookEvent
from hookgate.outcome import Outcome


def register(main: click.Group) -> None:
    main.add_command(demo)


def build_demo_engine(observed: list[str]) -> Engine:
    engine = Engine()

    @engine.hook("session_start", name="inject-session-context")
    def session_context(event: HookEvent) -> dict[str, Any]:
        return {"additional_context": "Repository: demo-app. Never push to main."}

    @engine.hook("user_prompt_submit", name="inject-prompt-context")
    def prompt_context(event: HookEvent) -> dict[str, Any]:
        return {"additional_context": "The user is on the on-call rota today."}

    @engine.hook(
        "pre_tool_use", matcher="^(exec|shell|bash)$", priority=100, name="block-dangerous-shell"
    )
    def block_dangerous(event: HookEvent) -> dict[str, Any] | None:
        command = str((event.tool_input or {}).get("cmd", ""))
        for needle in ("rm -rf /", "mkfs", ":(){", "dd if=/dev/zero"):
            if needle in command:
                return {"decision": "block", "reason": f"dangerous shell command: {needle!r}"}
        return None

    @engine.hook(
        "pre_tool_use", matcher="^write_file$", priority=50, name="rewrite-paths-into-workspace"
    )
    def rewrite_path(event: HookEvent) -> dict[str, Any] | None:
        tool_input = dict(event.tool_input or {})
        path = str(tool_input.get("path", ""))
        if path.startswith("/"):
            tool_input["path"] = "workspace" + path
            return {"updated_input": tool_input, "reason": "absolute path moved into workspace"}
        return None

    @engine.hook("post_tool_use", name="observe-tool-use")
    async def observe(event: HookEvent) -> None:
        observed.append(f"{event.tool_name} -> {str(event.tool_response)[:40]!r}")

    return engine


SCRIPT: list[tuple[str, dict[str, Any]]] = [
    ("session_start", {"session_id": "demo-1", "source": "startup"}),
    ("user_prompt_submit", {"session_id": "demo-1", "prompt": "Tidy the build directory"}),
    (
        "pre_tool_use",
        {"session_id": "demo-1", "tool_name": "exec", "tool_input": {"cmd": "ls build/"}},
    ),
    (
        "post_tool_use",
        {
            "session_id": "demo-1",
            "tool_name": "exec",
            "tool_input": {"cmd": "ls build/"},
            "tool_response": "a.o b.o",
        },
    ),
    (
        "pre_tool_use",
        {
            "session_id": "demo-1",
            "tool_name": "exec",
            "tool_input": {"cmd": "rm -rf / --no-preserve-root"},
        },
    ),
    (
        "pre_tool_use",
        {
            "session_id": "demo-1",
            "tool_name": "write_file",
            "tool_input": {"path": "/etc/notes.txt", "content": "done"},
        },
    ),
    (
        "post_tool_use",
        {
            "session_id": "demo-1",
            "tool_name": "write_file",
            "tool_input": {"path": "workspace/etc/notes.txt"},
            "tool_response": "ok",
        },
    ),
    ("stop", {"session_id": "demo-1", "last_message": "Build directory tidied."}),
]


def _describe(event: str, outcome: Outcome) -> str:
    ran = [e for e in outcome.trace if e.matched]
    who = ", ".join(f"{e.name}={e.decision}" for e in ran) or "no hook matched"
    parts = [f"{outcome.decision.upper():5}  {event:<20} [{who}]"]
    if outcome.reason:
        parts.append(f"        reason: {outcome.reason}")
    if outcome.updated_input is not None:
        parts.append(f"        updated input: {json.dumps(outcome.updated_input)}")
    for context in outcome.additional_context:
        parts.append(f"        context: {context}")
    return "\n".join(parts)


async def run_demo(echo: Any = click.echo) -> list[Outcome]:
    observed: list[str] = []
    engine = build_demo_engine(observed)
    outcomes = []
    async with engine:
        for event, payload in SCRIPT:
            # Non-blocking events are awaited here only so the demo prints what they did.
            outcome = await engine.fire(event, payload, wait=True)
            outcomes.append(outcome)
            echo(_describe(event, outcome))
    echo("observed tool use: " + "; ".join(observed))
    return outcomes


@click.command()
def demo() -> None:
    """Run a scripted agent session through example hooks and show each decision."""
    asyncio.run(run_demo())
