"""The tool-narration guard: catch an agent that says it is running a tool but calls none.

Four hooks share one state namespace:

* ``post_tool_use``: count the tool calls of the run (run state, keyed by the run id).
* ``llm_output``: when the run's model text promises an action ("running it now", "let me
  run") and the *run* has called no tool at all, record a violation in the session.
* ``before_prompt_build``: if the session has violations, inject a warning into the next
  prompt (``prepend_context``): the model changes its behaviour through its prompt, not
  through a note in the chat.
* ``agent_end``: forget the run's count.

Counting per run, not per message, is what avoids the false positive of a naive check: in a
multi-turn run the early model calls use tools and the last one is a plain text summary;
"did the last assistant message call a tool?" says no and flags a healthy run.

Violations expire with the state TTL (10 minutes), so a stale one never haunts a later
session. Run from the repository root: ``python -m examples.narration_guard``.
"""

from __future__ import annotations

import asyncio
import re
from typing import Any

from hookgate import Engine, HookEvent

STATE = {"namespace": "narration-guard", "ttl_s": 600}
PROMISE = re.compile(
    r"\b(?:running|executing|launching|kicking off|starting)\b[^.!?\n]{0,40}\b(?:now|right away)\b"
    r"|\b(?:i'll|i will|let me|i'm going to|i am going to)\s+(?:now\s+)?"
    r"(?:run|execute|launch|call|start|kick off|fetch|check|search|open)\b",
    re.IGNORECASE,
)
WARNING = ("Tool-narration check: in a recent turn you said you were running something "
           "({said!r}) but called no tool in that run. Never describe an action as happening "
           "unless you call the tool in the same turn; if you did not run it, say so.")


def record_tool_call(event: HookEvent) -> None:
    run = event.state.run
    if run is not None:
        run["tool_calls"] = run.get("tool_calls", 0) + 1


def _output_text(event: HookEvent) -> str:
    """The model's text, from OpenClaw's fields or a response object."""
    for field in ("assistant_texts", "last_assistant", "response"):
        value = event.get(field)
        if isinstance(value, str):
            return value
        if isinstance(value, list):
            return "\n".join(v if isinstance(v, str) else str(v.get("text", ""))
                             for v in value if isinstance(v, str | dict))
        if isinstance(value, dict):
            content = value.get("content") or value.get("text")
            if isinstance(content, str):
                return content
    return ""


def check_output(event: HookEvent) -> None:
    run, session = event.state.run, event.state.session
    if run is None or session is None:
        return
    promise = PROMISE.search(_output_text(event))
    if promise is None or run.get("tool_calls", 0) > 0:
        return
    violations = list(session.get("violations", []))
    violations.append({"run": run.key.scope_id, "said": promise.group(0)})
    session["violations"] = violations[-5:]


def inject_warning(event: HookEvent) -> dict[str, Any] | None:
    session = event.state.session
    if session is None:
        return None
    violations = session.pop("violations", None)  # delivered once, then cleared
    if not violations:
        return None
    return {"additional_context": WARNING.format(said=violations[-1]["said"])}


def forget_run(event: HookEvent) -> None:
    run = event.state.run
    if run is not None:
        run.pop("tool_calls", None)


def build_engine() -> Engine:
    engine = Engine()
    for event, function in (("post_tool_use", record_tool_call), ("llm_output", check_output),
                            ("before_prompt_build", inject_warning), ("agent_end", forget_run)):
        engine.add({"event": event, "handler_type": "callable",
                    "name": f"narration guard: {function.__name__}",
                    "config": {"callable": function, "state": STATE}})
    return engine


async def agent_run(engine: Engine, run_id: str, steps: list[tuple[str, str | None]]) -> list[str]:
    """One run of a toy agent: each step is (model text, tool that step calls or None).

    The tools run as the model asks for them; ``llm_output`` reports the run's texts once
    they are all in; ``agent_end`` closes the run. Returns the context injected into this
    run's prompt. Non-blocking events are awaited (``wait=True``) so each hook's state change
    is written before the next event reads it.
    """
    ids = {"session_id": "demo", "run_id": run_id}
    built = await engine.fire("before_prompt_build", prompt="next task", wait=True, **ids)
    texts = []
    for number, (text, tool) in enumerate(steps):
        texts.append(text)
        if tool is not None:
            await engine.fire("post_tool_use", tool_name=tool, tool_use_id=f"{run_id}-{number}",
                              tool_input={}, tool_response="ok", wait=True, **ids)
    await engine.fire("llm_output", assistant_texts=texts, last_assistant=texts[-1], wait=True,
                      **ids)
    await engine.fire("agent_end", success=True, wait=True, **ids)
    return list(built.additional_context)


async def main() -> None:
    engine = build_engine()
    try:
        # Tools in the early steps, a text-only summary last: a healthy run.
        await agent_run(engine, "r1", [("Let me run the tests.", "exec"),
                                       ("All 12 tests pass. I'll run the linter too.", "exec"),
                                       ("Done: tests and linter are clean.", None)])
        injected = await agent_run(engine, "r2", [("Running the deploy now.", None)])
        print("after the healthy run:", injected or "no warning")
        injected = await agent_run(engine, "r3", [("Deploy finished.", None)])
        print("after the narrated run:", injected[0] if injected else "no warning")
    finally:
        await engine.aclose()


if __name__ == "__main__":
    asyncio.run(main())
