"""``hookgate claude-code`` fails closed: whatever breaks inside hookgate, Claude Code gets
exit 2 and a one-line reason on the events where exit 2 stops the action (exit 1 would let
the tool run). Each case runs the real command the way Claude Code runs it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

HOOKGATE = str(Path(sys.executable).parent / "hookgate")
#: Each case through the warm process and in the event's own process (see conftest).
pytestmark = pytest.mark.usefixtures("bridge_path")


def run_bridge(data: dict[str, Any] | str | bytes, *args: str,
               cwd: Path | None = None) -> subprocess.CompletedProcess[bytes]:
    raw = data if isinstance(data, bytes) else (
        data if isinstance(data, str) else json.dumps(data)).encode()
    return subprocess.run([HOOKGATE, "claude-code", *args], input=raw, capture_output=True,
                          timeout=60, check=False, cwd=cwd)


def pre_tool_use(tmp_path: Path) -> dict[str, Any]:
    return {"session_id": "s", "cwd": str(tmp_path), "hook_event_name": "PreToolUse",
            "tool_name": "Bash", "tool_input": {"command": "rm -rf /"}}


def assert_fails_closed(result: subprocess.CompletedProcess[bytes], *words: str) -> None:
    stderr = result.stderr.decode()
    assert result.returncode == 2, (result.returncode, stderr)
    assert "Traceback" not in stderr
    assert stderr.startswith("hookgate: ") and stderr.count("\n") == 1, stderr
    for word in words:
        assert word in stderr


def callable_hooks_file(folder: Path, target: str) -> Path:
    path = folder / "hookgate.yaml"
    path.write_text(yaml.safe_dump({"hooks": [
        {"name": "guard", "event": "pre_tool_use", "handler_type": "callable",
         "config": {"callable": target}}]}))
    return path


def test_callable_module_with_a_syntax_error(tmp_path: Path) -> None:
    (tmp_path / "guard_module.py").write_text("def guard(event:\n    return None\n")
    hooks = callable_hooks_file(tmp_path, "guard_module:guard")
    assert_fails_closed(run_bridge(pre_tool_use(tmp_path), "--config", str(hooks)),
                        "SyntaxError", "guard_module")


def test_callable_module_that_crashes_on_import(tmp_path: Path) -> None:
    (tmp_path / "crashing.py").write_text("raise RuntimeError('no config here')\n")
    hooks = callable_hooks_file(tmp_path, "crashing:guard")
    assert_fails_closed(run_bridge(pre_tool_use(tmp_path), "--config", str(hooks)),
                        "no config here")


def test_hooks_file_that_is_not_utf8(tmp_path: Path) -> None:
    hooks = tmp_path / "hookgate.yaml"
    hooks.write_bytes(b"hooks:\n  - name: \xff\xfe\n")
    assert_fails_closed(run_bridge(pre_tool_use(tmp_path), "--config", str(hooks)), "UTF-8")


def test_hooks_file_found_in_the_project_and_broken(tmp_path: Path) -> None:
    (tmp_path / ".claude").mkdir()
    (tmp_path / ".claude" / "hookgate.yaml").write_text("hooks: [unclosed\n")
    assert_fails_closed(run_bridge(pre_tool_use(tmp_path), cwd=tmp_path), "invalid YAML")


def test_hooks_file_that_is_a_folder(tmp_path: Path) -> None:
    assert_fails_closed(run_bridge(pre_tool_use(tmp_path), "--config", str(tmp_path)))


@pytest.mark.parametrize("stdin", [b"not json", b"\xff\xfe", b"[1, 2]", b""],
                         ids=["not-json", "not-utf8", "not-an-object", "empty"])
def test_unreadable_input_fails_closed(stdin: bytes) -> None:
    # Which event it was cannot be told, so the action is stopped.
    assert_fails_closed(run_bridge(stdin))


def test_an_unexpected_crash_inside_hookgate(tmp_path: Path) -> None:
    # Input nested deeper than Python's recursion limit crashes the JSON parser itself
    # (RecursionError, not a decoding error): still one line and exit 2.
    hooks = callable_hooks_file(tmp_path, "os:getcwd")
    deep = '{"hook_event_name": "PreToolUse", "tool_name": "Bash", "tool_input": ' + (
        "[" * 200_000) + ("]" * 200_000) + "}"
    assert_fails_closed(run_bridge(deep, "--config", str(hooks)), "internal error")


def test_user_prompt_and_permission_events_fail_closed_too(tmp_path: Path) -> None:
    hooks = tmp_path / "hookgate.yaml"
    hooks.write_bytes(b"\xff")
    for event in ("UserPromptSubmit", "PermissionRequest"):
        assert_fails_closed(run_bridge({"hook_event_name": event, "prompt": "hi"},
                                       "--config", str(hooks)))


def test_events_that_cannot_be_stopped_report_with_exit_1(tmp_path: Path) -> None:
    # Exit 2 on Stop would make Claude keep working; exit 1 shows the error to the user.
    hooks = tmp_path / "hookgate.yaml"
    hooks.write_bytes(b"\xff")
    result = run_bridge({"hook_event_name": "Stop"}, "--config", str(hooks))
    assert result.returncode == 1
    assert result.stderr.decode().startswith("hookgate: ")
