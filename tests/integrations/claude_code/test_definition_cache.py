"""The definition cache of ``hookgate claude-code``: a hit skips the parser and the validation,
and nothing about it can make a bad hooks file pass (each attack: the real command, a real
file, a real cache folder)."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from hookgate.integrations.claude_code import definition_cache
from hookgate.integrations.claude_code.definition_cache import (
    InvalidHooksFile,
    cache_folder,
    load_definitions,
    read_entry,
)

HOOKGATE = str(Path(sys.executable).parent / "hookgate")
BLOCK_RM = {"name": "no-rm", "event": "pre_tool_use", "handler_type": "command",
            "matcher": "^Bash$",
            "config": {"command": "grep -q 'rm -rf' && { echo 'no rm' >&2; exit 2; }; exit 0"}}


def write_hooks(path: Path, *hooks: dict[str, object]) -> Path:
    path.write_text(json.dumps({"hooks": list(hooks)}))
    return path


def bridge(hooks: Path, command: str = "rm -rf /", event: str = "PreToolUse",
           **env: str) -> subprocess.CompletedProcess[str]:
    data = {"session_id": "s", "cwd": str(hooks.parent), "hook_event_name": event,
            "tool_name": "Bash", "tool_input": {"command": command}}
    return subprocess.run([HOOKGATE, "claude-code", "--config", str(hooks)],
                          input=json.dumps(data), capture_output=True, text=True, timeout=60,
                          check=False, env={**os.environ, **env})


def decision(result: subprocess.CompletedProcess[str]) -> str | None:
    assert result.returncode == 0, result.stderr
    if not result.stdout.strip():
        return None
    return str(json.loads(result.stdout)["hookSpecificOutput"].get("permissionDecision"))


def entries() -> list[Path]:
    folder = cache_folder(os.environ)
    assert folder is not None
    return sorted(Path(folder).glob("*.marshal")) if Path(folder).is_dir() else []


def test_a_hit_gives_the_same_definitions_without_validating(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    hooks = write_hooks(tmp_path / "hookgate.json", BLOCK_RM,
                        {**BLOCK_RM, "name": "asks", "approval": {"required": True},
                         "priority": 5, "timeout_ms": 1234, "on_error": "allow"})
    first = load_definitions(str(hooks), edition="lite", environ=os.environ)
    assert len(entries()) == 1

    def no_validation(*args: object) -> None:
        raise AssertionError("validated on a hit")

    monkeypatch.setattr(definition_cache, "_validate", no_validation)
    again = load_definitions(str(hooks), edition="lite", environ=os.environ)
    assert again == first  # every field, the approval policy and the ids included


@pytest.mark.usefixtures("bridge_path")
def test_the_cache_files_are_private(tmp_path: Path) -> None:
    hooks = write_hooks(tmp_path / "hookgate.json", BLOCK_RM)
    assert decision(bridge(hooks)) == "deny"
    # the hooks file's entry, and any other (the warm process caches its own warm-up file
    # in the same folder, at its own pace)
    folder = Path(cache_folder(os.environ) or "")
    assert (folder / definition_cache._entry_name(str(hooks.resolve()))) in entries()
    for entry in entries():
        assert stat.S_IMODE(entry.stat().st_mode) == 0o600
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700


@pytest.mark.usefixtures("bridge_path")
def test_a_changed_file_is_validated_again_even_with_the_same_size_and_time(
    tmp_path: Path,
) -> None:
    hooks = write_hooks(tmp_path / "hookgate.json", BLOCK_RM)
    assert decision(bridge(hooks)) == "deny"
    before = hooks.stat()
    text = hooks.read_text()
    broken = text.replace('"pre_tool_use"', '"pre_tool_usX"')  # same length, unknown event
    assert len(broken) == len(text)
    hooks.write_text(broken)
    os.utime(hooks, ns=(before.st_atime_ns, before.st_mtime_ns))
    result = bridge(hooks)
    assert result.returncode == 2 and "is invalid" in result.stderr


@pytest.mark.usefixtures("bridge_path")
def test_a_file_that_becomes_invalid_fails_closed_on_every_run(tmp_path: Path) -> None:
    hooks = write_hooks(tmp_path / "hookgate.json", BLOCK_RM)
    assert decision(bridge(hooks)) == "deny"
    hooks.write_text("{not json")
    for _ in range(2):  # never cached: the second run fails as the first
        result = bridge(hooks, command="ls")
        assert result.returncode == 2 and "invalid JSON" in result.stderr


@pytest.mark.usefixtures("bridge_path")
def test_a_corrupt_entry_is_ignored_and_replaced(tmp_path: Path) -> None:
    hooks = write_hooks(tmp_path / "hookgate.json", BLOCK_RM)
    assert decision(bridge(hooks)) == "deny"
    [entry] = entries()
    good = entry.read_bytes()
    for garbage in (b"", good[: len(good) // 2], b"\x00" * 64, good[:-1] + b"\xff"):
        entry.write_bytes(garbage)
        assert decision(bridge(hooks)) == "deny"
        assert decision(bridge(hooks, command="ls")) is None
        # replaced by a good one (the hooks' ids are new: random per validation)
        assert read_entry(str(hooks), edition="lite", environ=os.environ) is not None


@pytest.mark.usefixtures("bridge_path")
def test_an_entry_others_could_write_is_not_trusted(tmp_path: Path) -> None:
    # An entry that says "no hooks" for this file, made writable by others: ignored.
    hooks = write_hooks(tmp_path / "hookgate.json", BLOCK_RM)
    assert decision(bridge(hooks)) == "deny"
    [entry] = entries()
    planted = tmp_path / "planted.json"
    write_hooks(planted)
    load_definitions(str(planted), edition="lite", environ=os.environ)
    forged = next(e for e in entries() if e != entry)
    entry.write_bytes(forged.read_bytes())  # an entry for another file: ignored by its key
    assert decision(bridge(hooks)) == "deny"
    entry.chmod(0o666)
    assert read_entry(str(hooks), edition="lite", environ=os.environ) is None
    assert decision(bridge(hooks)) == "deny"


@pytest.mark.usefixtures("bridge_path")
def test_the_edition_is_part_of_the_key(tmp_path: Path) -> None:
    hooks = write_hooks(tmp_path / "hookgate.json", BLOCK_RM)
    assert decision(bridge(hooks)) == "deny"
    # The standard edition refuses command hooks when they are defined: not from the cache.
    result = bridge(hooks, HOOKGATE_EDITION="standard")
    assert result.returncode == 2 and "is invalid" in result.stderr


@pytest.mark.usefixtures("bridge_path")
def test_a_callable_module_that_breaks_after_caching_fails_closed(tmp_path: Path) -> None:
    (tmp_path / "guards_cache.py").write_text("def check(event):\n    return None\n")
    hooks = write_hooks(tmp_path / "hookgate.json",
                        {"name": "py", "event": "pre_tool_use", "handler_type": "callable",
                         "on_error": "allow",
                         "config": {"callable": "guards_cache:check"}})
    assert decision(bridge(hooks, command="ls")) is None
    (tmp_path / "guards_cache.py").write_text("def check(event:\n")
    for event in ("PreToolUse", "UserPromptSubmit"):
        result = bridge(hooks, command="ls", event=event)
        assert result.returncode == 2, result
        assert "is invalid" in result.stderr and "SyntaxError" in result.stderr


@pytest.mark.usefixtures("bridge_path")
def test_cache_off(tmp_path: Path) -> None:
    hooks = write_hooks(tmp_path / "hookgate.json", BLOCK_RM)
    assert decision(bridge(hooks, HOOKGATE_CLAUDE_CODE_CACHE="off")) == "deny"
    assert entries() == []


def test_other_formats_and_handlers_are_not_cached(tmp_path: Path) -> None:
    hooks = write_hooks(tmp_path / "hookgate.json",
                        {"name": "web", "event": "pre_tool_use", "handler_type": "http",
                         "config": {"url": "http://127.0.0.1:9/hook"}})
    load_definitions(str(hooks), edition="lite", environ=os.environ)
    assert entries() == []
    settings = tmp_path / "settings.json"  # Claude Code settings used as a hooks file
    settings.write_text(json.dumps({"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [
        {"type": "command", "command": "exit 0"}]}]}}))
    assert len(load_definitions(str(settings), edition="lite", environ=os.environ)) == 1
    assert entries() == []


def test_invalid_files_raise_with_the_validation_problem(tmp_path: Path) -> None:
    hooks = write_hooks(tmp_path / "hookgate.json", {**BLOCK_RM, "timeout_ms": -1})
    with pytest.raises(InvalidHooksFile) as raised:
        load_definitions(str(hooks), edition="lite", environ=os.environ)
    assert "timeout_ms" in raised.value.problems[0]
    assert entries() == []


def test_literal_matchers() -> None:
    from hookgate.integrations.claude_code.definition_cache import literal_names
    from hookgate.matching import compile_matcher

    for pattern in ("^Bash$", "^(?:Edit|Write)$", "^(Edit|Write|mcp__x__y)$"):
        names = literal_names(pattern)
        assert names is not None
        matcher = compile_matcher(pattern)
        assert matcher is not None
        for subject in ("Bash", "Edit", "Write", "mcp__x__y", "bash", "Bash\n", "xBash",
                        "EditWrite", "", "Edit|Write"):
            assert (subject in names) == matcher.matches(subject), (pattern, subject)
    for pattern in ("Bash", "^Bash", "^A|B$", "^B.sh$", "^(A$", "*", "", None, "^Bash$|^X$"):
        assert literal_names(pattern) is None


@pytest.mark.usefixtures("bridge_path")
def test_answers_from_the_cache_entry_equal_the_engine_s(tmp_path: Path) -> None:
    # Each event run with the cache filled (events and tools no hook applies to are answered
    # from the entry alone) and with the cache off (the engine decides): the same answers.
    hooks = write_hooks(
        tmp_path / "hookgate.json", BLOCK_RM,
        {**BLOCK_RM, "name": "edits", "matcher": "^(?:Edit|Write)$",
         "config": {"command": "echo 'no edits' >&2; exit 2"}},
        {**BLOCK_RM, "name": "off", "matcher": "^Read$", "enabled": False,
         "config": {"command": "exit 2"}},
        {"name": "prompt", "event": "user_prompt_submit", "handler_type": "command",
         "config": {"command": "grep -q secret && exit 2; exit 0"}})
    huge = "x" * (9 * 1024 * 1024)
    inputs: list[dict[str, object]] = [
        {"hook_event_name": "PreToolUse", "tool_name": "Read", "tool_input": {"f": "rm -rf"}},
        {"hook_event_name": "PreToolUse", "tool_name": "Bash", "tool_input": {"command": "rm -rf"}},
        {"hook_event_name": "PreToolUse", "tool_name": "Write", "tool_input": {}},
        {"hook_event_name": "PreToolUse", "tool_name": "Glob", "tool_input": {"p": huge}},
        {"hook_event_name": "PreToolUse", "tool_name": "Glob", "tool_input": {}, "depth": 9},
        {"hook_event_name": "PreToolUse", "tool_name": "Glob", "agent_id": "a1",
         "tool_input": {}},
        {"hook_event_name": "PostToolUse", "tool_name": "Bash", "tool_response": "ok"},
        {"hook_event_name": "UserPromptSubmit", "prompt": "a secret"},
        {"hook_event_name": "Stop", "last_assistant_message": "done"},
        {"hook_event_name": "NoSuchEvent"},
    ]
    assert decision(bridge(hooks, command="ls")) is None  # fills the cache
    for data in inputs:
        full = {"session_id": "s", "cwd": str(tmp_path), **data}
        answers = []
        for env in ({}, {"HOOKGATE_CLAUDE_CODE_CACHE": "off"}):
            done = subprocess.run([HOOKGATE, "claude-code", "--config", str(hooks)],
                                  input=json.dumps(full), capture_output=True, text=True,
                                  timeout=60, check=False, env={**os.environ, **env})
            answers.append((done.returncode, done.stdout, done.stderr))
        assert answers[0] == answers[1], data.get("tool_name") or data["hook_event_name"]
        if data.get("tool_name") == "Glob" and "agent_id" not in data:
            # over the input limits, too deep: blocked before any matcher, in both
            blocked = json.loads(answers[0][1])["hookSpecificOutput"]
            assert blocked["permissionDecision"] == "deny", data
