"""Rule hooks from a hooks file through the CLI: every ``hookgate fire`` and every
``hookgate claude-code`` call is a process of its own, so counters and the session history
live in the file named by ``HOOKGATE_STATE_FILE``."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

from tests.server.gateway_process import HOOKGATE, REPO

HOOKS = """\
hooks:
  - name: two-fetches
    event: pre_tool_use
    matcher: ^WebFetch$
    handler_type: rule
    config:
      limit: {count: 2, per: session, window_s: 3600}
  - name: no-exfil
    event: pre_tool_use
    matcher: ^(WebFetch|Bash)$
    handler_type: rule
    config:
      after: {tool: ^Read$, per: session}
"""


def environment(tmp_path: Path) -> dict[str, str]:
    return {**os.environ, "HOOKGATE_STATE_FILE": str(tmp_path / "rules-state.json"),
            "XDG_CACHE_HOME": str(tmp_path / "cache")}  # the definition cache, kept apart


def fire(tmp_path: Path, tool: str, session: str) -> dict[str, Any]:
    done = subprocess.run(
        [*HOOKGATE, "fire", "pre_tool_use", "-c", str(tmp_path / "hooks.yaml"), "--compact",
         "-i", json.dumps({"tool_name": tool, "session_id": session})],
        capture_output=True, text=True, timeout=60, cwd=REPO, env=environment(tmp_path),
        check=False)
    assert done.stdout, done.stderr
    return json.loads(done.stdout)  # type: ignore[no-any-return]


def claude_code(tmp_path: Path, tool: str, session: str) -> subprocess.CompletedProcess[str]:
    stdin = {"hook_event_name": "PreToolUse", "session_id": session, "tool_name": tool,
             "tool_input": {"url": "https://example.com"}, "cwd": str(tmp_path),
             "transcript_path": str(tmp_path / "t.jsonl"), "tool_use_id": "toolu_1"}
    return subprocess.run(
        [*HOOKGATE, "claude-code", "-c", str(tmp_path / "hooks.yaml")],
        input=json.dumps(stdin), capture_output=True, text=True, timeout=60, cwd=REPO,
        env=environment(tmp_path), check=False)


def denied(run: subprocess.CompletedProcess[str]) -> str | None:
    """Claude Code's deny reason, or None when the call may go ahead."""
    if run.returncode == 2:
        return run.stderr
    answer = json.loads(run.stdout or "{}")
    output = answer.get("hookSpecificOutput") or {}
    if output.get("permissionDecision") == "deny":
        return str(output.get("permissionDecisionReason"))
    return None


def test_hookgate_fire_keeps_a_limit_between_processes(tmp_path: Path) -> None:
    (tmp_path / "hooks.yaml").write_text(HOOKS)
    decisions = [fire(tmp_path, "WebFetch", "s1")["decision"] for _ in range(3)]
    assert decisions == ["allow", "allow", "block"]
    assert fire(tmp_path, "WebFetch", "s2")["decision"] == "allow"
    assert fire(tmp_path, "Read", "s2")["decision"] == "allow"
    blocked = fire(tmp_path, "Bash", "s2")
    assert blocked["decision"] == "block" and "no-exfil" in blocked["reason"]


def test_hookgate_claude_code_blocks_after_a_read_in_an_earlier_process(tmp_path: Path) -> None:
    (tmp_path / "hooks.yaml").write_text(HOOKS)
    assert denied(claude_code(tmp_path, "WebFetch", "cc-1")) is None
    assert denied(claude_code(tmp_path, "Read", "cc-1")) is None
    reason = denied(claude_code(tmp_path, "WebFetch", "cc-1"))
    assert reason is not None and "no-exfil" in reason
    assert denied(claude_code(tmp_path, "WebFetch", "cc-2")) is None


def test_concurrent_processes_never_overshoot_a_limit(tmp_path: Path) -> None:
    """Claude Code runs the hooks of parallel tool calls at once: processes on one state file
    take slots under the file's lock, so exactly the limit is admitted."""
    (tmp_path / "hooks.yaml").write_text(HOOKS.replace("count: 2", "count: 3"))
    event = json.dumps({"tool_name": "WebFetch", "session_id": "parallel"})
    command = [*HOOKGATE, "fire", "pre_tool_use", "-c", str(tmp_path / "hooks.yaml"),
               "--compact", "-i", event]
    running = [subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True, cwd=REPO, env=environment(tmp_path))
               for _ in range(8)]
    decisions = []
    for process in running:
        out, err = process.communicate(timeout=120)
        assert out, err
        decisions.append(json.loads(out)["decision"])
    assert sorted(decisions) == ["allow"] * 3 + ["block"] * 5
