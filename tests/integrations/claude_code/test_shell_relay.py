"""The shell relay (``relay.bash``), with real processes: bash hands each event to the warm
process over loopback TCP and starts no Python; the warm process takes over the relay's
environment, working folder and umask; every failure either hands the event to the Python
relay (nothing ran yet) or ends in hookgate's failure answer in the agent's own form (the
warm process may have run hooks), never in the agent's "go ahead"."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
from tests.support import shell_relay as support
from tests.support.shell_relay import (
    HOOKGATE,
    FakeWarm,
    endpoint_file,
    free_port,
    greet_then,
    impostor,
    relay_command,
    run_relay,
)
from tests.support.shell_relay import start_warm as start_warm_process
from tests.support.waiting import wait_until
from tests.support.warm_bridge import warm_pids

from hookgate.integrations.claude_code import compiled_relay, shell_relay
from hookgate.integrations.claude_code.warm_place import install_id

pytestmark = [pytest.mark.skipif(not shell_relay.available(),
                                 reason="the shell relay needs Linux and /bin/bash"),
              pytest.mark.usefixtures("relay")]

#: One tool event per agent, in its own shape, and how each reads a deny.
EVENTS: dict[str, dict[str, Any]] = {
    "claude-code": {"session_id": "s", "cwd": "/tmp", "hook_event_name": "PreToolUse",
                    "tool_name": "Bash", "tool_input": {"command": "ls"},
                    "tool_use_id": "t1"},
    "codex": {"session_id": "s", "cwd": "/tmp", "hook_event_name": "PreToolUse",
              "model": "m", "turn_id": "t", "tool_name": "Bash",
              "tool_input": {"command": "ls"}, "tool_use_id": "c1"},
    "gemini": {"session_id": "s", "cwd": "/tmp", "hook_event_name": "BeforeTool",
               "timestamp": "2026-11-27T00:00:00Z", "tool_name": "run_shell_command",
               "tool_input": {"command": "ls"}},
}


def denied(agent: str, done: Any) -> str:
    """The reason of the agent's deny in ``done`` (fails when it is not one)."""
    if agent == "claude-code":
        assert done.returncode == 2, (done.returncode, done.stdout, done.stderr)
        return str(done.stderr)
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout)
    if agent == "codex" and "decision" in answer:  # the form when the event is not known
        assert answer["decision"] == "block", answer
        return str(answer["reason"])
    if agent == "codex":
        assert answer["hookSpecificOutput"]["permissionDecision"] == "deny", answer
        return str(answer["hookSpecificOutput"]["permissionDecisionReason"])
    assert answer["decision"] == "deny", answer
    return str(answer["reason"])


def report(done: Any) -> list[str]:
    """What ``REPORT`` said (mark, working folder, umask, the warm process's pid), wherever
    the agent's form puts a hook's context (Claude Code: additionalContext; Codex and Gemini
    take none on a tool event: a note on stderr)."""
    assert done.returncode == 0, done.stderr
    found = re.search(r"(\w*)\|(/[^|]*)\|(\d{4})\|(\d+)", done.stdout + done.stderr)
    assert found, (done.stdout, done.stderr)
    return list(found.groups())


def hooks_file(where: Path, script: str) -> Path:
    path = where / "hookgate.json"
    path.write_text(json.dumps({"hooks": [{
        "name": "cmd", "event": "pre_tool_use", "handler_type": "command",
        "config": {"command": script, "allowed_env_vars": ["HG_MARK"]}}]}))
    return path


REPORT = ("""echo "{\\"additional_context\\": \\"$HG_MARK|$PWD|$(umask)|"""
          """$(awk '/^PPid:/ {print $2}' /proc/$PPID/status)\\"}" """)
BLOCK = """echo '{"decision": "block", "reason": "no ls here"}'"""


def start_warm(folder: Path, hooks: Path) -> int:
    return start_warm_process(folder, hooks, EVENTS["claude-code"])


@pytest.mark.parametrize("agent", list(EVENTS))
def test_the_warm_process_answers_as_the_relays_own_process(
    agent: str, warm_folder: Path, tmp_path: Path
) -> None:
    hooks = hooks_file(tmp_path, REPORT)
    pid = start_warm(warm_folder, hooks)
    project = tmp_path / "project"
    project.mkdir()
    # require: any hand-over to the Python relay would fail the event instead
    done = run_relay(relay_command(agent, hooks), EVENTS[agent], cwd=project,
                     HG_MARK="marked", HOOKGATE_SHELL_RELAY="require")
    assert report(done) == ["marked", str(project), "0022", str(pid)]


@pytest.mark.parametrize("agent", list(EVENTS))
def test_a_block_is_answered_in_the_agents_form(agent: str, warm_folder: Path,
                                               tmp_path: Path) -> None:
    hooks = hooks_file(tmp_path, BLOCK)
    start_warm(warm_folder, hooks)
    done = run_relay(relay_command(agent, hooks), EVENTS[agent],
                     HOOKGATE_SHELL_RELAY="require")
    if agent == "claude-code":
        answer = json.loads(done.stdout)["hookSpecificOutput"]
        assert (done.returncode, answer["permissionDecision"]) == (0, "deny")
        assert "no ls here" in answer["permissionDecisionReason"]
    else:
        assert "no ls here" in denied(agent, done)


def test_the_first_event_runs_in_python_and_starts_the_warm_process(
    warm_folder: Path, tmp_path: Path
) -> None:
    hooks = hooks_file(tmp_path, REPORT)
    command = relay_command("claude-code", hooks)
    first = run_relay(command, EVENTS["claude-code"], HOOKGATE_CLAUDE_CODE_WARM="on",
                      HG_MARK="first")
    assert report(first)[0] == "first"
    wait_until(lambda: endpoint_file(warm_folder).exists(), "the endpoint is written", 60)
    (_, pid), = warm_pids(warm_folder).items()
    assert endpoint_file(warm_folder).stat().st_mode & 0o777 == 0o600
    second = run_relay(command, EVENTS["claude-code"], HOOKGATE_SHELL_RELAY="require",
                       HG_MARK="second")
    assert report(second)[::3] == ["second", str(pid)]


def test_the_endpoint_goes_with_the_warm_process(warm_folder: Path, tmp_path: Path) -> None:
    pid = start_warm(warm_folder, hooks_file(tmp_path, REPORT))
    os.kill(pid, 15)
    wait_until(lambda: not endpoint_file(warm_folder).exists(), "the endpoint is removed")


# --- failures: never the agent's "go ahead" -------------------------------------------------

def _ran(tmp_path: Path) -> tuple[Path, Path]:
    """A hooks file whose hook leaves a mark (so a test sees whether hooks ran), and the mark."""
    mark = tmp_path / "ran"
    return hooks_file(tmp_path, f"echo ran >> {mark}; {REPORT}"), mark


@pytest.mark.parametrize("agent", list(EVENTS))
def test_no_listener_hands_the_event_to_python(agent: str, warm_folder: Path,
                                               tmp_path: Path) -> None:
    hooks, mark = _ran(tmp_path)
    endpoint_file(warm_folder).write_text(f"{free_port()} {'a' * 32} {'b' * 32}\n")
    endpoint_file(warm_folder).chmod(0o600)
    required = run_relay(relay_command(agent, hooks), EVENTS[agent],
                         HOOKGATE_SHELL_RELAY="require")
    assert "did not reach the warm process (refused)" in denied(agent, required)
    assert not mark.exists()  # the failure answer runs no hook
    done = run_relay(relay_command(agent, hooks), EVENTS[agent],
                     HOOKGATE_CLAUDE_CODE_WARM="on", HG_MARK="python")
    assert report(done)[0] == "python"
    assert mark.read_text() == "ran\n"


@pytest.mark.parametrize("agent", list(EVENTS))
def test_a_listener_without_the_server_token_learns_nothing(
    agent: str, warm_folder: Path, tmp_path: Path
) -> None:
    """An impostor on the endpoint's port (the warm process gone): it cannot greet with the
    server token, so the relay sends it nothing, and the event is answered by Python."""
    hooks, mark = _ran(tmp_path)
    fake = FakeWarm(warm_folder, impostor)
    fake.write_endpoint()
    with fake.running():
        required = run_relay(relay_command(agent, hooks), EVENTS[agent],
                             HOOKGATE_SHELL_RELAY="require")
        done = run_relay(relay_command(agent, hooks), EVENTS[agent],
                         HOOKGATE_CLAUDE_CODE_WARM="on", HG_MARK="python")
    assert "not the warm process" in denied(agent, required)
    assert report(done)[0] == "python"
    assert fake.connections == 2 and fake.received == b""
    assert mark.read_text() == "ran\n"


@pytest.mark.parametrize("agent", list(EVENTS))
@pytest.mark.parametrize(("answer", "why"), [
    (b"Z\0", "answered something else"),
    (b"garbage without a single NUL", "closed the connection"),
    (b"", "closed the connection"),
    (b"X\0", "cut short"),
    (b"X\0 300\0{}\0\0", "answered something else"),
    (b"X\0" + b"0\0{}", "cut short"),
])
def test_a_broken_answer_is_hookgates_failure_in_the_agents_form(
    agent: str, answer: bytes, why: str, warm_folder: Path, tmp_path: Path
) -> None:
    hooks, mark = _ran(tmp_path)
    fake = FakeWarm(warm_folder, greet_then(answer))
    fake.write_endpoint()
    with fake.running():
        done = run_relay(relay_command(agent, hooks), EVENTS[agent])
    reason = denied(agent, done)
    assert "the warm hookgate process failed" in reason and why in reason
    assert not mark.exists()  # taken means maybe run: never run again
    request = shell_relay.parse_request(bytes(fake.received))
    assert request is not None and request.client_token == fake.endpoint.client_token.encode()


@pytest.mark.parametrize("agent", list(EVENTS))
def test_a_warm_process_that_never_answers_is_denied_before_the_agents_timeout(
    agent: str, warm_folder: Path, tmp_path: Path
) -> None:
    hooks, mark = _ran(tmp_path)
    fake = FakeWarm(warm_folder, greet_then(None))
    fake.write_endpoint()
    started = time.monotonic()
    with fake.running():
        # the agent's timeout 6 s: the relay gives the warm process 1 s
        done = run_relay(relay_command(agent, hooks, limit_s=6), EVENTS[agent])
    assert "no answer within 1s" in denied(agent, done)
    assert time.monotonic() - started < 6
    assert not mark.exists()


@pytest.mark.parametrize("agent", list(EVENTS))
def test_a_refused_event_is_run_by_python(agent: str, warm_folder: Path,
                                          tmp_path: Path) -> None:
    hooks, mark = _ran(tmp_path)
    fake = FakeWarm(warm_folder, greet_then(b"R\0"))
    fake.write_endpoint()
    with fake.running():
        done = run_relay(relay_command(agent, hooks), EVENTS[agent],
                         HOOKGATE_CLAUDE_CODE_WARM="on", HG_MARK="python")
    assert report(done)[0] == "python"
    assert mark.read_text() == "ran\n"


def test_a_large_input_passes_whole(warm_folder: Path, tmp_path: Path) -> None:
    hooks = hooks_file(tmp_path, "printf '{\"additional_context\": \"%s\"}' \"$(wc -c)\"")
    start_warm(warm_folder, hooks)
    event = {**EVENTS["claude-code"], "tool_input": {"command": "x" * 300_000}}
    done = run_relay(relay_command("claude-code", hooks), event,
                     HOOKGATE_SHELL_RELAY="require")
    assert done.returncode == 0, done.stderr
    size = json.loads(done.stdout)["hookSpecificOutput"]["additionalContext"]
    assert int(size) > 300_000



@pytest.mark.parametrize("agent", list(EVENTS))
def test_a_hookgate_that_cannot_be_run_is_a_deny(agent: str, warm_folder: Path,
                                                 tmp_path: Path) -> None:
    """The fallback's executable is gone (hookgate uninstalled, its venv moved): bash's exit
    127 would be "go ahead" for Claude Code and Codex; the relay denies in the agent's form."""
    hooks, mark = _ran(tmp_path)
    gone = str(tmp_path / "gone" / "hookgate")
    command = shell_relay.relay_command(gone, agent, ["--config", str(hooks)], 30,
                                        binary=support.RELAY_BINARY)
    done = run_relay(command, EVENTS[agent], HOOKGATE_CLAUDE_CODE_WARM="off")
    assert f"cannot run {gone}" in denied(agent, done)
    assert not mark.exists()


@pytest.mark.parametrize("agent", list(EVENTS))
def test_a_command_installed_for_another_form_is_a_deny(agent: str, warm_folder: Path,
                                                        tmp_path: Path) -> None:
    hooks, _ = _ran(tmp_path)
    ident = install_id()
    command = relay_command(agent, hooks).replace(f" 1 {ident} ", f" 0 {ident} ")
    assert f" 0 {ident} " in command
    assert "install it again" in denied(agent, run_relay(command, EVENTS[agent]))


def _installed_command(agent: str, hooks: Path, where: Path) -> str:
    """``hookgate <agent> install`` into files under ``where``; the command it wrote."""
    if agent == "claude-code":
        settings = where / "settings.json"
        args = ["--settings", str(settings), "--event", "PreToolUse"]
    elif agent == "codex":
        settings = where / "hooks.json"
        args = ["--codex-home", str(where), "--event", "PreToolUse"]
    else:
        settings = where / "gemini.json"
        args = ["--settings", str(settings), "--event", "BeforeTool"]
    done = subprocess.run([HOOKGATE, agent, "install", "--config", str(hooks), *args],
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    event = "BeforeTool" if agent == "gemini" else "PreToolUse"
    hook = json.loads(settings.read_text())["hooks"][event][0]["hooks"][0]
    if agent == "claude-code":
        # Claude Code's exec form: it starts the binary with these arguments, no shell
        return shlex.join([hook["command"], *hook["args"]])
    assert "args" not in hook  # Codex and Gemini run a command line with bash -c
    return str(hook["command"])


@pytest.mark.parametrize("agent", list(EVENTS))
def test_install_writes_the_shell_relay_and_starts_the_warm_process(
    agent: str, warm_folder: Path, tmp_path: Path
) -> None:
    """The first event after install (a new session's) finds the warm process install
    started, and the installed command reaches it without Python (``require``: a hand-over
    to the Python relay would fail the event)."""
    hooks = hooks_file(tmp_path, REPORT)
    command = _installed_command(agent, hooks, tmp_path)
    # install builds the compiled relay beside relay.bash: the command is the binary alone
    assert command.startswith(f"{compiled_relay.binary_path()} 1 ")
    wait_until(lambda: endpoint_file(warm_folder).exists(), "install's warm process", 60)
    (_, pid), = warm_pids(warm_folder).items()
    done = run_relay(command, EVENTS[agent], HG_MARK="first", HOOKGATE_SHELL_RELAY="require")
    assert report(done)[::3] == ["first", str(pid)]
