"""A rule hook under the real Claude Code CLI (``claude -p`` against a scripted Anthropic API)
with ``hookgate claude-code`` as its hook: each hook call is a process of its own, and the
session history lives in ``HOOKGATE_STATE_FILE``. A Bash call after a Read in the same session
is blocked; without the Read it runs. The Read reaches hookgate although no hook matches it
(``install`` registers hookgate for every tool), and the engine records it."""

from __future__ import annotations

import json

import pytest
from tests.support.anthropic_server import ScriptedAnthropic, say, use_tool
from tests.support.claude_code_cli import ClaudeProject

NO_EXFIL = {"name": "no-exfil", "event": "pre_tool_use", "matcher": "^Bash$",
            "handler_type": "rule", "config": {"after": {"tool": "^Read$"}}}


def bash(command: str) -> dict[str, str]:
    return {"command": command, "description": "test command"}


def setup(project: ClaudeProject, named_file: bool = True) -> dict[str, str]:
    (project.dir / "notes.txt").write_text("token=not-for-the-network\n")
    project.write_hooks([NO_EXFIL])
    project.install("--event", "PreToolUse")
    return {"HOOKGATE_STATE_FILE": str(project.dir / "rule-state.json")} if named_file else {}


@pytest.mark.parametrize("named_file", [True, False], ids=["HOOKGATE_STATE_FILE", "default"])
def test_bash_after_a_read_is_blocked(project: ClaudeProject, api: ScriptedAnthropic,
                                      named_file: bool) -> None:
    """Without HOOKGATE_STATE_FILE the history goes to ~/.local/state/hookgate/hook-state.json:
    each hook call is a process of its own, and memory would forget the Read."""
    env = setup(project, named_file)
    api.script(use_tool("Read", {"file_path": str(project.dir / "notes.txt")}),
               use_tool("Bash", bash("touch MARKER")), say("done"))
    run = project.run("read the notes, then touch a file", allow=("Bash", "Read"), **env)
    assert run.returncode == 0, run.stderr
    assert not project.exists("MARKER")
    assert len(api.agent_calls) >= 3, [c.path for c in api.calls]
    result = api.agent_calls[2].tool_results()[-1]
    assert result["is_error"] is True
    assert "no-exfil" in json.dumps(result)
    kept = (project.dir / "rule-state.json" if named_file
            else project.home / ".local" / "state" / "hookgate" / "hook-state.json")
    assert kept.exists()


def test_bash_without_a_read_runs(project: ClaudeProject, api: ScriptedAnthropic) -> None:
    env = setup(project)
    api.script(use_tool("Bash", bash("touch MARKER")), say("done"))
    run = project.run("touch a file", allow=("Bash", "Read"), **env)
    assert run.returncode == 0, run.stderr
    assert project.exists("MARKER")
