"""``hookgate check``, ``fire``, ``demo`` and ``events``, run as real subprocesses."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def hookgate(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "hookgate", *args],
        input=stdin,
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=60,
    )


@pytest.fixture()
def hooks_file(tmp_path: Path) -> Path:
    path = tmp_path / "hooks.yaml"
    path.write_text(
        """
hooks:
  - name: no-rm
    event: pre_tool_use
    handler_type: callable
    matcher: "^exec$"
    priority: 10
    config: {callable: "tests.fixtures.sample_hooks:block_rm"}
  - name: force-dry-run
    event: pre_tool_use
    handler_type: callable
    config: {callable: "tests.fixtures.sample_hooks:add_flag"}
  - name: session-context
    event: session_start
    handler_type: callable
    config: {callable: "tests.fixtures.sample_hooks:async_context"}
"""
    )
    return path


def test_check_accepts_a_valid_file(hooks_file: Path) -> None:
    result = hookgate("check", str(hooks_file))
    assert result.returncode == 0, result.stderr
    assert "3 hook(s) OK" in result.stdout


def test_check_reports_one_line_per_problem(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"hooks": [
        {"name": "a", "event": "pre_tool_use", "handler_type": "callable", "matcher": "(",
         "timeout_ms": 60000, "config": {"callable": "tests.fixtures.sample_hooks:block_rm"}},
        {"event": "no_such_event", "handler_type": "callable",
         "config": {"callable": "tests.fixtures.sample_hooks:block_rm"}},
        {"event": "pre_tool_use", "handler_type": "prompt", "config": {}},
    ]}))
    result = hookgate("check", str(bad))
    assert result.returncode != 0
    lines = result.stderr.strip().splitlines()
    assert any("hooks[0] (a).matcher" in line for line in lines)
    assert any("hooks[0] (a).timeout_ms" in line for line in lines)
    assert any("hooks[1].event: unknown event 'no_such_event'" in line for line in lines)
    assert any("hooks[2].matcher" in line and "prompt hook" in line for line in lines)
    assert all(line.startswith(str(bad)) for line in lines)


def test_check_reports_broken_yaml(tmp_path: Path) -> None:
    bad = tmp_path / "broken.yaml"
    bad.write_text("hooks: [\n  - {event: x\n")
    result = hookgate("check", str(bad))
    assert result.returncode == 1 and "invalid YAML" in result.stderr


def test_fire_blocks_with_exit_2(hooks_file: Path) -> None:
    result = hookgate("fire", "PreToolUse", "--config", str(hooks_file), "--input",
                      json.dumps({"tool_name": "exec", "tool_input": {"cmd": "rm -rf /"}}))
    assert result.returncode == 2, result.stderr
    outcome = json.loads(result.stdout)
    assert outcome["decision"] == "block" and outcome["reason"] == "rm -rf is not allowed"
    assert set(outcome) == {"decision", "reason", "updated_input", "additional_context",
                            "result", "abort", "continue", "retry", "trace", "dispatch_id"}


def test_fire_allows_with_exit_0_and_shows_the_rewrite(hooks_file: Path) -> None:
    payload = json.dumps({"tool_name": "exec", "tool_input": {"cmd": "ls"}})
    result = hookgate("fire", "before_tool", "-c", str(hooks_file), "-i", "-", "--compact",
                      stdin=payload)
    assert result.returncode == 0, result.stderr
    outcome = json.loads(result.stdout)
    assert outcome["updated_input"] == {"cmd": "ls", "dry_run": True}
    assert outcome["additional_context"] == ["dry-run forced"]


def test_fire_runs_non_blocking_events_to_completion(hooks_file: Path) -> None:
    result = hookgate("fire", "session_start", "-c", str(hooks_file), "-i",
                      '{"session_id": "abc"}')
    assert result.returncode == 0
    assert json.loads(result.stdout)["additional_context"] == ["session abc"]


def test_fire_rejects_unknown_events_and_bad_input(hooks_file: Path) -> None:
    unknown = hookgate("fire", "pre_tool", "-c", str(hooks_file))
    assert unknown.returncode == 1 and "unknown event 'pre_tool'" in unknown.stderr
    bad = hookgate("fire", "pre_tool_use", "-c", str(hooks_file), "-i", "[1]")
    assert bad.returncode == 1 and "JSON object" in bad.stderr


def test_demo_shows_each_decision() -> None:
    result = hookgate("demo")
    assert result.returncode == 0, result.stderr
    assert "BLOCK  pre_tool_use" in result.stdout
    assert "dangerous shell command" in result.stdout
    assert "workspace/etc/notes.txt" in result.stdout
    assert "Repository: demo-app" in result.stdout
    assert "observed tool use: exec" in result.stdout


def test_events_lists_the_catalogue_as_json() -> None:
    result = hookgate("events", "--json")
    rows = {row["name"]: row for row in json.loads(result.stdout)}
    assert rows["pre_tool_use"]["blocking"] is True
    assert "PreToolUse" in rows["pre_tool_use"]["aliases"]
    assert rows["post_tool_use"]["blocking"] is False
