"""The ``command`` handler with real shell commands: exit codes, JSON answers, environment,
cwd, output caps, process-group kills and the edition gate."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from tests.support.waiting import wait_until

from hookgate import Engine
from hookgate.definition import DefinitionError
from hookgate.definition_model import validate_definition
from hookgate.events import get_event
from hookgate.handlers import Invocation, Services
from hookgate.handlers.command import STDERR_CAP, STDOUT_CAP, CommandHandler
from hookgate.outcome import Outcome
from hookgate.settings import Settings


def command_hook(command: str, **fields: Any) -> dict[str, Any]:
    config = {"command": command, **fields.pop("config", {})}
    return {"event": "pre_tool_use", "handler_type": "command", "name": "cmd",
            "config": config, **fields}


async def fire(hook: dict[str, Any], event: str = "pre_tool_use", **payload: Any) -> Outcome:
    payload = payload or {"tool_name": "exec", "tool_input": {"cmd": "ls"}}
    async with Engine([{**hook, "event": hook.get("event", event)}]) as engine:
        return await engine.fire(event, payload, wait=True)


def pid_alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0]
    except FileNotFoundError:
        return False
    return state != "Z"


# -- exit codes -------------------------------------------------------------------------


async def test_exit_0_with_plain_text_allows_and_keeps_stdout() -> None:
    outcome = await fire(command_hook("echo all good"))
    assert outcome.decision == "allow"
    details = outcome.trace[0].details
    assert details["exit_code"] == 0
    assert details["stdout"] == "all good\n"
    assert details["stdout_len"] == len("all good\n")


async def test_exit_2_blocks_with_stderr_as_reason() -> None:
    outcome = await fire(command_hook("echo 'rm is not allowed here' >&2; exit 2"))
    assert outcome.decision == "block"
    assert outcome.reason == "rm is not allowed here"
    assert outcome.trace[0].details["exit_code"] == 2


async def test_exit_2_without_stderr_still_blocks() -> None:
    outcome = await fire(command_hook("exit 2"))
    assert outcome.decision == "block"
    assert "exit 2" in (outcome.reason or "")


async def test_other_exit_is_an_error_that_fails_closed() -> None:
    outcome = await fire(command_hook("echo 'cannot reach policy server' >&2; exit 1"))
    assert outcome.decision == "block"
    entry = outcome.trace[0]
    assert entry.decision == "error"
    assert "exited with status 1" in (entry.error or "")
    assert "cannot reach policy server" in (entry.error or "")
    assert entry.details["stderr"].startswith("cannot reach policy server")


async def test_other_exit_follows_on_error_allow() -> None:
    outcome = await fire(command_hook("exit 3", on_error="allow"))
    assert outcome.decision == "allow"
    assert outcome.trace[0].decision == "error"


async def test_killed_by_signal_is_an_error() -> None:
    outcome = await fire(command_hook("kill -9 $$"))
    assert outcome.decision == "block"
    assert "killed by signal 9" in (outcome.trace[0].error or "")


# -- JSON answers -------------------------------------------------------------------------


async def test_json_decision_block_with_reason() -> None:
    outcome = await fire(command_hook("""echo '{"decision": "block", "reason": "policy 7"}'"""))
    assert outcome.decision == "block"
    assert outcome.reason == "policy 7"


async def test_json_continue_false_blocks() -> None:
    outcome = await fire(command_hook("""echo '{"continue": false, "reason": "halt"}'"""))
    assert outcome.decision == "block"
    assert outcome.continue_ is False


@pytest.mark.parametrize(
    ("answer", "expected_input"),
    [
        ({"updatedInput": {"cmd": "ls -la"}}, {"cmd": "ls -la"}),
        ({"updated_input": {"cmd": "pwd"}}, {"cmd": "pwd"}),
    ],
)
async def test_json_updated_input_rewrites(answer: dict[str, Any], expected_input: Any) -> None:
    outcome = await fire(command_hook(f"echo '{json.dumps(answer)}'"))
    assert outcome.decision == "allow"
    assert outcome.updated_input == expected_input


async def test_json_context_both_spellings_are_kept_in_order() -> None:
    hooks = [
        command_hook("""echo '{"additionalContext": "first"}'""", name="a", priority=2),
        command_hook("""echo '{"additional_context": ["second", "third"]}'""", name="b"),
    ]
    async with Engine(hooks) as engine:
        outcome = await engine.fire("pre_tool_use", tool_name="exec", tool_input={})
    assert outcome.additional_context == ["first", "second", "third"]


async def test_unknown_json_keys_are_recorded_not_dropped() -> None:
    outcome = await fire(command_hook("""echo '{"status": "ok", "decision": "allow"}'"""))
    assert outcome.decision == "allow"
    assert outcome.trace[0].details["ignored_keys"] == ["status"]


async def test_broken_json_is_malformed_and_blocks_despite_on_error_allow() -> None:
    outcome = await fire(command_hook("""echo '{"decision": "block", }'""", on_error="allow"))
    assert outcome.decision == "block"
    assert "malformed answer" in (outcome.trace[0].error or "")


async def test_unknown_decision_is_malformed() -> None:
    outcome = await fire(command_hook("""echo '{"decision": "deny"}'""", on_error="allow"))
    assert outcome.decision == "block"
    assert "decision must be one of" in (outcome.trace[0].error or "")


async def test_json_that_is_not_an_object_reads_as_text() -> None:
    outcome = await fire(command_hook("echo '[1, 2, 3]'"))
    assert outcome.decision == "allow"


# -- stdin, environment, cwd --------------------------------------------------------------


async def test_stdin_carries_the_event(tmp_path: Path) -> None:
    seen = tmp_path / "stdin.json"
    outcome = await fire(
        command_hook(f"cat > {seen}"),
        tool_name="write_file",
        tool_input={"path": "a.txt"},
        session_id="s-1",
    )
    assert outcome.decision == "allow"
    document = json.loads(seen.read_text())
    assert document["hook_event"] == "pre_tool_use"
    assert document["tool_name"] == "write_file"
    assert document["tool_input"] == {"path": "a.txt"}
    assert document["session_id"] == "s-1"


async def test_environment_is_an_allowlist(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("HOOKGATE_TEST_SECRET", "s3cr3t-value")
    monkeypatch.setenv("HOOKGATE_TEST_ALLOWED", "visible")
    dump = tmp_path / "env.txt"
    outcome = await fire(
        command_hook(f"env > {dump}", config={"allowed_env_vars": ["HOOKGATE_TEST_ALLOWED"]})
    )
    assert outcome.decision == "allow"
    env = dict(line.split("=", 1) for line in dump.read_text().splitlines() if "=" in line)
    assert env["HOOKGATE_TEST_ALLOWED"] == "visible"
    assert "HOOKGATE_TEST_SECRET" not in env
    assert "s3cr3t-value" not in dump.read_text()
    assert env["HOOKGATE_EVENT"] == "pre_tool_use"
    assert "PATH" in env


async def test_empty_allowlist_passes_no_parent_secret(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "do-not-leak")
    dump = tmp_path / "env.txt"
    await fire(command_hook(f"env > {dump}", config={"allowed_env_vars": []}))
    names = {line.split("=", 1)[0] for line in dump.read_text().splitlines()}
    assert "AWS_SECRET_ACCESS_KEY" not in names
    assert names <= {"PATH", "HOME", "LANG", "HOOKGATE_EVENT", "HOOKGATE_HOOK_ID", "PWD",
                     "SHLVL", "_", "OLDPWD"}


@pytest.fixture
def real_tmp(tmp_path: Path) -> Path:
    return tmp_path.resolve()


async def test_cwd_is_used(real_tmp: Path) -> None:
    outcome = await fire(command_hook("pwd -P", config={"cwd": str(real_tmp)}))
    assert outcome.trace[0].details["stdout"].strip() == str(real_tmp)


async def test_missing_cwd_is_a_clear_error(tmp_path: Path) -> None:
    outcome = await fire(command_hook("true", config={"cwd": str(tmp_path / "nope")}))
    assert outcome.decision == "block"
    assert "nope" in (outcome.trace[0].error or "")


# -- output caps and process groups -------------------------------------------------------


async def test_ten_megabytes_of_stdout_neither_hangs_nor_is_kept() -> None:
    outcome = await fire(command_hook("head -c 10000000 /dev/zero | tr '\\0' x", timeout_ms=8000))
    assert outcome.decision == "block"
    entry = outcome.trace[0]
    assert entry.decision == "error"  # stopped at the cap, not at the timeout
    assert f"more than {STDOUT_CAP} bytes" in (entry.error or "")
    assert entry.details["stdout_len"] > STDOUT_CAP
    assert len(entry.details["stdout"]) < 10_000


async def test_large_stderr_is_capped() -> None:
    outcome = await fire(command_hook("head -c 3000000 /dev/zero | tr '\\0' e >&2; exit 2"))
    assert outcome.decision == "block"
    assert outcome.reason is not None
    assert len(outcome.reason) <= STDERR_CAP


async def test_timeout_kills_the_whole_process_group(tmp_path: Path) -> None:
    """The command would outlive the test's own timeout: only the hook's timeout ends it."""
    pids = tmp_path / "pids"
    command = f"sleep 600 & echo $! >> {pids}; echo $$ >> {pids}; sleep 600"
    outcome = await fire(command_hook(command, timeout_ms=400))
    assert outcome.decision == "block"
    assert outcome.trace[0].decision == "timeout"
    recorded = [int(p) for p in pids.read_text().split()]
    assert len(recorded) == 2
    for pid in recorded:
        wait_until(lambda pid=pid: not pid_alive(pid), f"process {pid} exits after the timeout")


async def test_background_children_do_not_outlive_the_command(tmp_path: Path) -> None:
    """The background child holds stdout open for longer than the test may run: the hook
    answers when the command exits, not when the pipe closes."""
    pid_file = tmp_path / "pid"
    outcome = await fire(command_hook(f"sleep 600 & echo $! > {pid_file}; echo done"))
    assert outcome.decision == "allow"
    pid = int(pid_file.read_text())
    wait_until(lambda: not pid_alive(pid), f"process {pid} exits")


async def test_cancelling_the_call_kills_the_group(tmp_path: Path) -> None:
    import asyncio

    pid_file = tmp_path / "pid"
    handler = CommandHandler(Services())
    definition = validate_definition(command_hook(f"echo $$ > {pid_file}; exec sleep 30"),
                                     default_scope="global")
    call = Invocation(definition, get_event("pre_tool_use"), {"tool_name": "x"}, 5.0, Services())
    task = asyncio.ensure_future(handler.run(call))
    for _ in range(200):
        if pid_file.exists() and pid_file.read_text().strip():
            break
        await asyncio.sleep(0.01)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert not pid_alive(int(pid_file.read_text()))


# -- edition gate and validation ----------------------------------------------------------


def test_standard_edition_refuses_command_hooks_at_definition() -> None:
    with pytest.raises(DefinitionError, match="standard edition"):
        Engine([command_hook("true")], settings=Settings(edition="standard"))


async def test_standard_edition_refuses_command_hooks_at_run_time(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    settings = Settings(edition="lite")
    async with Engine([command_hook(f"touch {marker}")], settings=settings) as engine:
        settings.edition = "standard"  # the server switched edition after the hook was defined
        outcome = await engine.fire("pre_tool_use", tool_name="exec", tool_input={})
    assert outcome.decision == "block"
    assert "standard edition" in (outcome.trace[0].error or "")
    assert not marker.exists()


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ({}, "config.command"),
        ({"command": "  "}, "config.command"),
        ({"command": "true", "allowed_env_vars": ["OK", "not-a-name"]}, "allowed_env_vars"),
        ({"command": "true", "allowed_env_vars": "PATH"}, "allowed_env_vars"),
        ({"command": "true", "format": "bash"}, "format must be one of"),
        ({"command": "true", "shell": "zsh"}, "unknown command config key"),
    ],
)
def test_bad_config_is_refused(config: dict[str, Any], message: str) -> None:
    with pytest.raises(DefinitionError, match=message):
        validate_definition(
            {"event": "pre_tool_use", "handler_type": "command", "config": config},
            default_scope="global",
        )


def test_env_keys_documented_minimal_set() -> None:
    from hookgate.handlers.subprocess.runner import BASE_ENV_KEYS, base_environment

    env = base_environment([], environ={"PATH": "/bin", "HOME": "/h", "LANG": "C", "X": "1"})
    assert env == {"PATH": "/bin", "HOME": "/h", "LANG": "C"}
    assert BASE_ENV_KEYS == ("PATH", "HOME", "LANG")
    assert "PATH" in base_environment([], environ={})
    assert os.environ  # the real environment is untouched
