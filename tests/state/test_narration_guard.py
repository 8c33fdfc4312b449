"""examples/narration_guard.py: the four-hook tool-narration guard on hook state."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from examples.narration_guard import PROMISE, agent_run, build_engine

from hookgate.state import FileStateStore, MemoryStateStore, ScopeKey, use_state_store

ROOT = Path(__file__).resolve().parents[2]


class Clock:
    def __init__(self) -> None:
        self.now = 3_000_000.0

    def __call__(self) -> float:
        return self.now


def test_the_example_runs() -> None:
    done = subprocess.run([sys.executable, "-m", "examples.narration_guard"], cwd=ROOT,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "after the healthy run: no warning"
    assert lines[1].startswith("after the narrated run: Tool-narration check: in a recent turn "
                               "you said you were running something ('Running the deploy now')")


async def test_earlier_turns_with_tools_and_a_text_final_turn_is_not_a_violation() -> None:
    steps: list[tuple[str, str | None]] = [
        ("Let me run the test suite.", "exec"),
        ("Two failures; I'll run them again with -x.", "exec"),
        ("Fixed. I'll run the whole suite once more before you merge.", None),  # text only
    ]
    # The naive check (the last message promises and calls no tool) would flag this run.
    last_text, last_tool = steps[-1]
    assert PROMISE.search(last_text) and last_tool is None
    engine = build_engine()
    try:
        await agent_run(engine, "r1", steps)
        assert await agent_run(engine, "r2", [("ok", None)]) == []
    finally:
        await engine.aclose()


async def test_a_promise_with_no_tool_in_the_run_warns_the_next_prompt_once() -> None:
    engine = build_engine()
    try:
        assert await agent_run(engine, "r1", [("Executing the migration right away.", None)]) == []
        (warning,) = await agent_run(engine, "r2", [("Sorry, I had not run it.", None)])
        assert "'Executing the migration right away'" in warning
        assert await agent_run(engine, "r3", [("ok", None)]) == []  # delivered once
    finally:
        await engine.aclose()


async def test_violations_expire_with_the_ttl_and_runs_are_forgotten_at_agent_end() -> None:
    clock = Clock()
    store = MemoryStateStore(clock=clock)
    engine = build_engine()
    use_state_store(engine, store)
    try:
        await agent_run(engine, "r1", [("Let me run it.", "exec"), ("Done.", None)])
        run = ScopeKey("", "narration-guard", "run", "r1")
        assert (await store.load([run]))[run] == {}  # agent_end removed the count
        await agent_run(engine, "r2", [("Running the backup now.", None)])
        clock.now += 601
        assert await agent_run(engine, "r3", [("ok", None)]) == []
    finally:
        await engine.aclose()


async def test_a_violation_survives_a_restart_in_the_state_file(tmp_path: Path) -> None:
    path = tmp_path / "narration.json"
    engine = build_engine()
    use_state_store(engine, FileStateStore(path))
    try:
        await agent_run(engine, "r1", [("I'll run the deploy script.", None)])
    finally:
        await engine.aclose()
    restarted = build_engine()
    use_state_store(restarted, FileStateStore(path))
    try:
        (warning,) = await agent_run(restarted, "r2", [("ok", None)])
    finally:
        await restarted.aclose()
    assert "I'll run" in warning
