"""examples/capture_in_before.py: capture the command in pre_tool_use, use it at persist."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from examples.capture_in_before import build_engine

from hookgate.state import FileStateStore, ScopeKey, use_state_store

ROOT = Path(__file__).resolve().parents[2]


def test_the_example_runs_and_rewrites_by_command() -> None:
    done = subprocess.run([sys.executable, "-m", "examples.capture_in_before"], cwd=ROOT,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    blocks = done.stdout.split("--- ")[1:]
    assert blocks[0] == "ls\nREADME.md\nsrc\n"
    assert blocks[1].startswith("pip install requests\n[5 lines of installer output reduced]\n")
    assert blocks[2] == "env\nHOME=[masked]\nDB_PASSWORD=[masked]\nPATH=[masked]\n"


async def test_ids_do_not_cross_and_entries_are_removed_once_read(tmp_path: Path) -> None:
    path = tmp_path / "state.json"
    engine = build_engine()
    use_state_store(engine, FileStateStore(path))
    try:
        await engine.fire("pre_tool_use", session_id="s", tool_name="Bash", tool_use_id="a",
                          tool_input={"command": "printenv"})
        await engine.fire("pre_tool_use", session_id="s", tool_name="Bash", tool_use_id="b",
                          tool_input={"command": "ls"})
    finally:
        await engine.aclose()

    # A restart between the call and its result: the capture was persisted to the file.
    restarted = build_engine()
    store = FileStateStore(path)
    use_state_store(restarted, store)
    try:
        b = await restarted.fire("tool_result_persist", session_id="s", tool_name="Bash",
                                 tool_use_id="b", message=[{"type": "text", "text": "X=1"}])
        a = await restarted.fire("tool_result_persist", session_id="s", tool_name="Bash",
                                 tool_use_id="a", message=[{"type": "text", "text": "X=1"}])
        unknown = await restarted.fire("tool_result_persist", session_id="s", tool_name="Bash",
                                       tool_use_id="zz", message="X=1")
    finally:
        await restarted.aclose()
    assert b.updated_input is None  # `ls` output is left alone
    assert a.updated_input == [{"type": "text", "text": "X=[masked]"}]
    assert unknown.updated_input is None
    key = ScopeKey("", "command-capture", "session", "s")
    assert (await store.load([key]))[key] == {}
