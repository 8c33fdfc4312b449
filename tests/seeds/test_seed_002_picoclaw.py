"""Seed 002 (PicoClaw hooks): the Quick Start config and the Python process-hook example,
unchanged, through the real CLI; after_tool aborts and rewrites; `hookgate check` of a
missing command; variables passed from the parent environment; the 60 s approval default."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path
from typing import Any

import pytest
from tests.handlers.process_support import SCRIPT

from hookgate import Engine
from hookgate.config import ConfigError, load_hooks
from hookgate.definition import DefinitionError
from hookgate.definition_model import validate_definition

SEED = Path(__file__).resolve().parents[1] / "fixtures" / "seeds" / "002_picoclaw"
SEED_TEXT = Path("/work/shared/seeds/002_10598f98991de148.txt")
# Where the seed's Quick Start puts the script and its log (fixed paths, shared by runs).
SCRIPT_PATH = Path("/tmp/review_gate.py")
LOG_PATH = Path("/tmp/picoclaw-hook-review-gate.log")


def hookgate(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "hookgate", *args],
        capture_output=True, text=True, timeout=60, env={**os.environ, **(env or {})},
    )


def fire(config: Path, event: str, payload: dict[str, Any], **env: str) -> tuple[int, Any]:
    done = hookgate("fire", event, "--config", str(config), "--input", json.dumps(payload),
                    env=env)
    assert done.returncode in (0, 2), done.stderr
    return done.returncode, json.loads(done.stdout)


@pytest.fixture
def quickstart() -> Path:
    """The seed's script saved where the Quick Start says (/tmp/review_gate.py)."""
    with tempfile.NamedTemporaryFile("wb", dir="/tmp", delete=False) as handle:
        handle.write((SEED / "review_gate.py").read_bytes())
    os.chmod(handle.name, 0o755)
    os.replace(handle.name, SCRIPT_PATH)  # atomic: parallel runs never see half a file
    return SEED / "quickstart.json"


def logged(marker: str) -> list[dict[str, Any]]:
    """Log lines of the seed script that mention ``marker`` (the log file is shared)."""
    lines = LOG_PATH.read_text().splitlines() if LOG_PATH.exists() else []
    return [json.loads(line) for line in lines if marker in line]


def test_review_gate_fixture_is_the_seed_script() -> None:
    """Only the indentation the seed text lost is restored: every line's content is the
    seed's, in order."""
    if not SEED_TEXT.exists():
        pytest.fail(f"{SEED_TEXT} (the seed document) is missing")
    lines = SEED_TEXT.read_text().splitlines()
    start, end = lines.index("#!/usr/bin/env python3"), lines.index("raise SystemExit(main())")
    seed = [line.strip() for line in lines[start : end + 1] if line.strip()]
    ours = [line.strip() for line in (SEED / "review_gate.py").read_text().splitlines()]
    assert seed == [line for line in ours if line]


def test_quickstart_python_process_hook_sees_hello_and_before_tool(quickstart: Path) -> None:
    """The Quick Start flow: hook.hello, then hook.before_tool; the example never denies,
    so the call is allowed, and the log shows what the seed says it shows."""
    assert hookgate("check", str(quickstart)).returncode == 0
    marker = uuid.uuid4().hex
    code, outcome = fire(quickstart, "before_tool",
                         {"tool": "echo_text", "arguments": {"text": marker}})
    assert (code, outcome["decision"]) == (0, "allow")
    request, response = logged(marker)[0], None
    assert request["method"] == "hook.before_tool" and request["direction"] == "in"
    assert request["params"]["tool"] == "echo_text" and request["notification"] is False
    for line in LOG_PATH.read_text().splitlines():
        entry = json.loads(line)
        if entry.get("direction") == "out" and entry.get("id") == request["id"] and (
            entry["ts"] >= request["ts"]
        ):
            response = entry
            break
    assert response is not None and response["response"] == {"action": "continue"}
    hellos = [json.loads(line) for line in LOG_PATH.read_text().splitlines()
              if '"hook.hello"' in line]
    assert {"name": "py_review_gate", "version": 1,
            "modes": ["observe", "tool", "approve"]} in [h["params"] for h in hellos]


def test_quickstart_approve_tool_answer_approves(quickstart: Path) -> None:
    marker = uuid.uuid4().hex
    code, outcome = fire(quickstart, "approve_tool",
                         {"tool": "echo_text", "arguments": {"text": marker}})
    assert (code, outcome["decision"]) == (0, "allow")
    assert logged(marker)[0]["method"] == "hook.approve_tool"


def test_runtime_event_short_kind_name_reaches_an_observe_hook_that_names_it(
    quickstart: Path,
) -> None:
    """`fire runtime_event` with kind tool_exec_start reaches the seed's observe list
    (agent.tool.exec_start) as a notification with the canonical kind."""
    marker = uuid.uuid4().hex
    code, _ = fire(quickstart, "runtime_event",
                   {"kind": "tool_exec_start", "payload": {"Tool": marker, "Arguments": {}}})
    assert code == 0
    (note,) = logged(marker)
    assert note["method"] == "hook.runtime_event" and note["notification"] is True
    assert note["params"]["kind"] == "agent.tool.exec_start"
    unobserved = uuid.uuid4().hex
    fire(quickstart, "runtime_event", {"kind": "turn_end", "payload": {"Tool": unobserved}})
    assert logged(unobserved) == []


def test_check_reports_a_process_hook_whose_command_does_not_exist(tmp_path: Path) -> None:
    """The seed's Configuration section (script at /abs/path/to/review_gate.py) would fail
    open at before_tool: `hookgate check` reports it instead, naming the script."""
    done = hookgate("check", str(SEED / "configuration.json"))
    assert done.returncode == 1
    assert "hooks.processes.py_review_gate.command" in done.stderr
    assert "'/abs/path/to/review_gate.py'" in done.stderr and "does not exist" in done.stderr
    no_program = tmp_path / "picoclaw.json"
    no_program.write_text(json.dumps({"hooks": {"processes": {"gate": {
        "enabled": True, "command": ["no-such-hook-program-3f2a"], "intercept": ["before_tool"],
    }}}}))
    done = hookgate("check", str(no_program))
    assert done.returncode == 1 and "'no-such-hook-program-3f2a' is not on" in done.stderr
    native = tmp_path / "hooks.yaml"
    native.write_text(
        "hooks:\n  - name: gone\n    event: pre_tool_use\n    handler_type: process\n"
        "    config: {command: [./missing-hook]}\n"
    )
    done = hookgate("check", str(native))
    assert done.returncode == 1 and "gone.config.command" in done.stderr


def scripted_config(tmp_path: Path, answers: dict[str, Any], **entry: Any) -> Path:
    log = tmp_path / "messages.jsonl"
    config = tmp_path / "picoclaw.json"
    process = {"enabled": True, "command": [sys.executable, SCRIPT],
               "intercept": ["after_tool"],
               "env": {"HOOK_ANSWERS": json.dumps(answers), "HOOK_LOG": str(log)}, **entry}
    config.write_text(json.dumps({"hooks": {"processes": {"gate": process}}}))
    return config


@pytest.mark.parametrize(
    ("action", "abort", "reason"),
    [("abort_turn", "turn", "output leaked a secret"), ("hard_abort", "hard", None)],
)
def test_after_tool_abort_is_honoured(
    tmp_path: Path, action: str, abort: str, reason: str | None
) -> None:
    """PicoClaw's after_tool is synchronous: abort_turn / hard_abort stop the turn."""
    answer = {"action": action, **({"reason": reason} if reason else {})}
    config = scripted_config(tmp_path, {"hook.after_tool": answer})
    code, outcome = fire(config, "after_tool",
                         {"tool": "exec", "arguments": {"cmd": "env"}, "tool_response": "x"})
    assert code == 2 and outcome["abort"] == abort
    assert outcome["continue"] is (abort == "turn")
    if reason:
        assert outcome["reason"] == reason
    else:  # no reason given: the wording reads well
        assert outcome["reason"] == "hook 'gate:after_tool' stopped the agent loop (hard abort)"


def test_after_tool_modify_reaches_the_caller_as_updated_input(tmp_path: Path) -> None:
    rewritten = {"action": "modify", "result": {"tool": "exec", "arguments": {},
                                                "result": {"for_llm": "[redacted]"}}}
    config = scripted_config(tmp_path, {"hook.after_tool": rewritten})
    code, outcome = fire(config, "after_tool",
                         {"tool": "exec", "arguments": {}, "tool_response": "SECRET=1"})
    assert (code, outcome["updated_input"]) == (0, "[redacted]")


async def test_every_interceptor_stage_honours_abort_turn(tmp_path: Path) -> None:
    """before_llm, after_llm, before_tool and after_tool: an abort_turn stops the turn when
    the caller intercepts (waits)."""
    config = scripted_config(
        tmp_path,
        {f"hook.{m}": {"action": "abort_turn"} for m in
         ("before_llm", "after_llm", "before_tool", "after_tool")},
        intercept=["before_llm", "before_tool"],
    )
    engine = Engine()
    engine.load(config)
    try:
        for stage in ("before_llm", "after_llm", "before_tool", "after_tool"):
            outcome = await engine.fire(stage, {"tool_name": "exec", "tool_input": {},
                                                "request": {"model": "m"}, "response": {}})
            assert (outcome.decision, outcome.abort) == ("block", "turn"), stage
            assert outcome.reason == f"hook 'gate:{stage}' aborted the turn", stage
        # Fired and forgotten, nobody can be stopped: the abort is recorded, not dropped.
        records: list[Any] = []
        engine.listeners.append(records.extend)
        queued = await engine.fire("post_tool_use", {"tool_name": "exec"})
        assert (queued.decision, queued.abort) == ("allow", None)
        await engine.drain()
        (record,) = records
        assert record.decision == "block" and record.metadata["abort"] == "turn"
        assert "abort reported, not enforced" in record.metadata["note"]
        # Awaited under hookgate's own name (not PicoClaw's interceptor stage) the hooks run
        # side by side; the caller still gets the abort.
        told = await engine.fire("post_tool_use", {"tool_name": "exec"}, wait=True)
        assert (told.decision, told.abort) == ("allow", "turn")
    finally:
        await engine.aclose()


def test_chosen_variables_pass_from_the_parent_environment(tmp_path: Path) -> None:
    """`allowed_env_vars` in a PicoClaw process entry passes those names (and only those)
    from hookgate's environment; no secret needs to be written into the config's env."""
    marker = uuid.uuid4().hex
    config = scripted_config(tmp_path, {}, allowed_env_vars=["HOOK_TAG"])
    fire(config, "after_tool", {"tool": "exec", "tool_response": "x"},
         HOOK_TAG=marker, OTHER_SECRET="nope")
    messages = [json.loads(line)
                for line in (tmp_path / "messages.jsonl").read_text().splitlines()]
    assert messages and all(m.get("tag") == marker for m in messages)
    assert marker not in (tmp_path / "picoclaw.json").read_text()
    (tmp_path / "plain").mkdir()
    plain = scripted_config(tmp_path / "plain", {})
    fire(plain, "after_tool", {"tool": "exec", "tool_response": "x"}, HOOK_TAG=marker)
    lines = (tmp_path / "plain" / "messages.jsonl").read_text().splitlines()
    assert lines and all("tag" not in json.loads(line) for line in lines)


def test_picoclaw_approval_default_of_60_s_is_kept(quickstart: Path, tmp_path: Path) -> None:
    """Human approval needs time: PicoClaw's 60 s default stays 60 s, a configured hour
    stays an hour, and native approve_tool hooks may wait long too."""
    approve = next(d for d in load_hooks(quickstart) if d.event == "approve_tool")
    assert (approve.timeout_ms, approve.on_timeout, approve.on_error) == (60_000, "block",
                                                                         "block")
    document = json.loads(quickstart.read_text())
    document["hooks"]["defaults"] = {"approval_timeout_ms": 3_600_000}
    hour = tmp_path / "hour.json"
    hour.write_text(json.dumps(document))
    assert next(d for d in load_hooks(hour) if d.event == "approve_tool").timeout_ms == 3_600_000
    native = {"event": "approve_tool", "handler_type": "callable", "scope": "global",
              "config": {"callable": "tests.server.hookfns:block"}}
    assert validate_definition(native).timeout_ms == 60_000
    assert validate_definition(native | {"timeout_ms": 4 * 3_600_000}).timeout_ms == 14_400_000
    with pytest.raises(DefinitionError, match="between 1 and 10000 ms"):
        validate_definition(native | {"event": "pre_tool_use", "timeout_ms": 60_000})
    with pytest.raises(ConfigError):
        document["hooks"]["defaults"] = {"approval_timeout_ms": "soon"}
        hour.write_text(json.dumps(document))
        load_hooks(hour)
