"""The compiled relay (``relay.c``): built by install beside ``relay.bash``, once per source,
atomically; a machine without a compiler keeps ``relay.bash``; what the protocol cannot carry
(a NUL byte) goes to the Python relay before anything is sent. The protocol and its failures
are ``test_shell_relay.py``'s, which runs every case with both relays."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
from tests.support.shell_relay import (
    BASH_LS_EVENT,
    HOOKGATE,
    FakeWarm,
    built_relay,
    greet_then,
    relay_command,
    run_relay,
)

from hookgate.integrations.claude_code import compiled_relay, shell_relay

pytestmark = pytest.mark.skipif(not shell_relay.available(),
                                reason="the shell relay needs Linux and /bin/bash")


def test_a_build_is_one_executable_named_by_its_source(tmp_path: Path) -> None:
    """Built into the folder under the source's digest, mode 0755, nothing else left there;
    a second build finds it and leaves it as it is (a running command keeps its file)."""
    binary = compiled_relay.build(folder=str(tmp_path))
    assert binary == compiled_relay.binary_path(str(tmp_path))
    assert os.listdir(tmp_path) == [os.path.basename(binary)]
    assert stat.S_IMODE(os.stat(binary).st_mode) == 0o755
    inode = os.stat(binary).st_ino
    assert compiled_relay.build(folder=str(tmp_path)) == binary
    assert os.stat(binary).st_ino == inode


def test_without_a_compiler_there_is_no_binary_and_install_keeps_relay_bash(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "out"
    out.mkdir()
    assert compiled_relay.build(folder=str(out), search_path=str(tmp_path / "empty")) is None
    assert os.listdir(out) == []
    monkeypatch.setattr(compiled_relay, "build", lambda: None)
    command = shell_relay.hook_command(HOOKGATE, "codex", ["--config", "/x.yaml"], 30)
    assert command.startswith(f"/bin/bash -p {shell_relay.SCRIPT} 1 ")


def test_a_compiler_that_fails_leaves_nothing_behind(tmp_path: Path) -> None:
    bin_folder = tmp_path / "bin"
    bin_folder.mkdir()
    fake_cc = bin_folder / "cc"
    # writes half a binary where -o says, then fails
    fake_cc.write_text('#!/bin/sh\nwhile [ $# -gt 0 ]; do [ "$1" = -o ] && echo half > "$2"; '
                       'shift; done; exit 1\n')
    fake_cc.chmod(0o755)
    out = tmp_path / "out"
    out.mkdir()
    assert compiled_relay.build(folder=str(out), search_path=str(bin_folder)) is None
    assert os.listdir(out) == []


def test_a_nul_byte_in_the_input_is_never_sent(warm_folder: Path, tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """The request's fields end in NUL: an input holding one would be cut into fields the
    warm process reads as something else. The relay hands it to the Python relay untouched,
    which refuses it (not JSON): a deny, and the listener got nothing of it."""
    import tests.support.shell_relay as support

    monkeypatch.setattr(support, "RELAY_BINARY", built_relay())
    hooks = tmp_path / "hookgate.json"
    hooks.write_text('{"hooks": []}')
    fake = FakeWarm(warm_folder, greet_then(b"X\x000\x00{}\x00\x00"))
    fake.write_endpoint()
    text = '{"session_id": "s", "hook_event_name": "PreToolUse", "x": "a\0b"}'
    with fake.running():
        required = run_relay(relay_command("claude-code", hooks), text,
                             HOOKGATE_SHELL_RELAY="require")
        python = run_relay(relay_command("claude-code", hooks), text,
                           HOOKGATE_CLAUDE_CODE_WARM="off")
    assert required.returncode == 2 and "a NUL byte in the input" in required.stderr
    assert python.returncode == 2 and "not Claude Code hook JSON" in python.stderr
    assert fake.received == b""


def test_the_compiled_relay_serves_the_warm_process_without_bash(
    warm_folder: Path, tmp_path: Path
) -> None:
    """The installed command is the binary and its arguments, no shell code around it, and it
    reaches the warm process by itself (``require``: a hand-over to Python would fail)."""
    import json

    from tests.support.shell_relay import start_warm

    hooks = tmp_path / "hookgate.json"
    context = """echo '{"additional_context": "from the warm process"}'"""
    hooks.write_text(json.dumps({"hooks": [{"name": "ctx", "event": "pre_tool_use",
                                            "handler_type": "command",
                                            "config": {"command": context}}]}))
    start_warm(warm_folder, hooks, BASH_LS_EVENT)
    binary = built_relay()
    command = shell_relay.relay_command(HOOKGATE, "claude-code", ["--config", str(hooks)], 30,
                                        binary=binary)
    assert command.startswith(f"{binary} 1 ") and ";" not in command
    done = run_relay(command, BASH_LS_EVENT, HOOKGATE_SHELL_RELAY="require")
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout)["hookSpecificOutput"]
    assert answer["additionalContext"] == "from the warm process"


def test_the_source_compiles_without_a_warning() -> None:
    """Whatever compiler a user has: the code leans on no extension beyond glibc's."""
    import subprocess

    cc = compiled_relay.compiler()
    assert cc is not None, "a C compiler is needed to test the compiled relay"
    done = subprocess.run([cc, "-std=gnu11", "-Wall", "-Wextra", "-Wshadow", "-Werror",
                           "-fsyntax-only", compiled_relay.SOURCE],
                          capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr


def _report_hooks(tmp_path: Path) -> Path:
    import json

    hooks = tmp_path / "hookgate.json"
    context = """echo "{\\"additional_context\\": \\"warm $PPID\\"}" """
    hooks.write_text(json.dumps({"hooks": [{"name": "ctx", "event": "pre_tool_use",
                                            "handler_type": "command",
                                            "config": {"command": context}}]}))
    return hooks


def _compiled(hooks: Path) -> str:
    return shell_relay.relay_command(HOOKGATE, "claude-code", ["--config", str(hooks)], 30,
                                     binary=built_relay())


def test_the_compiled_relay_takes_the_warm_processs_unix_socket(
    warm_folder: Path, tmp_path: Path
) -> None:
    """With the endpoint's port dead, the compiled relay still reaches the warm process, on
    the Unix socket beside the endpoint file; relay.bash (TCP only) cannot."""
    import json

    from tests.support.shell_relay import endpoint_file, free_port, start_warm

    hooks = _report_hooks(tmp_path)
    start_warm(warm_folder, hooks, BASH_LS_EVENT)
    endpoint = endpoint_file(warm_folder)
    assert Path(shell_relay.unix_path(str(endpoint))).is_socket()
    _, server, client = endpoint.read_text().split()
    endpoint.write_text(f"{free_port()} {server} {client}\n")
    binary = built_relay()
    options = ["--config", str(hooks)]
    compiled = shell_relay.relay_command(HOOKGATE, "claude-code", options, 30, binary=binary)
    done = run_relay(compiled, BASH_LS_EVENT, HOOKGATE_SHELL_RELAY="require")
    assert done.returncode == 0, done.stderr
    context = json.loads(done.stdout)["hookSpecificOutput"]["additionalContext"]
    assert context.startswith("warm ")
    bash = shell_relay.relay_command(HOOKGATE, "claude-code", options, 30)
    refused = run_relay(bash, BASH_LS_EVENT, HOOKGATE_SHELL_RELAY="require")
    assert refused.returncode == 2 and "(refused)" in refused.stderr


def test_an_impostor_on_the_unix_socket_learns_nothing(warm_folder: Path,
                                                        tmp_path: Path) -> None:
    """A listener of the user's at the socket's path that cannot greet with the server
    token: the relay sends it nothing (neither the event nor the client token)."""
    from tests.support.shell_relay import impostor

    fake = FakeWarm(warm_folder, impostor, unix=True)
    fake.write_endpoint()
    with fake.running():
        done = run_relay(_compiled(_report_hooks(tmp_path)), BASH_LS_EVENT,
                         HOOKGATE_SHELL_RELAY="require")
    assert done.returncode == 2 and "not the warm process" in done.stderr
    assert fake.connections == 1 and fake.received == b""


@pytest.mark.parametrize("how", ["another user's", "a symlink"])
def test_a_unix_socket_that_is_not_the_users_own_is_passed_by(
    how: str, warm_folder: Path, tmp_path: Path
) -> None:
    """Only the user's own socket decides where the event goes: one owned by another user,
    or a symlink (to a listener that would answer "allow"), is never connected to; the relay
    takes the port (dead here) instead."""
    fake = FakeWarm(warm_folder, greet_then(b"X\x000\x00\x00\x00"), unix=True)
    fake.write_endpoint()
    if how == "another user's":
        os.chown(fake.unix_path, 65534, 65534)
    else:
        moved = tmp_path / "elsewhere.unix"
        fake.unix_path.rename(moved)
        fake.unix_path.symlink_to(moved)
    with fake.running():
        done = run_relay(_compiled(_report_hooks(tmp_path)), BASH_LS_EVENT,
                         HOOKGATE_SHELL_RELAY="require")
    assert done.returncode == 2 and "(refused)" in done.stderr, done.stderr
    assert fake.connections == 0


def test_a_claude_code_that_drops_the_exec_form_arguments_gets_a_deny() -> None:
    """A Claude Code that does not know exec-form hooks runs ``command`` alone: the relay,
    with no arguments, answers Claude Code's deny (exit 2) and says why, never "go ahead"."""
    done = run_relay(shell_relay.relay_command(HOOKGATE, "claude-code", [], 30,
                                               binary=built_relay()).split(" ", 1)[0],
                     BASH_LS_EVENT)
    assert done.returncode == 2
    assert "does not run exec-form hooks" in done.stderr
