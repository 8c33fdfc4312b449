"""Attacks on the warm process's resident (events answered in place, one long-lived process)
and its hand-over of events to forked workers (``H`` on the warm process's Unix socket)."""

from __future__ import annotations

import array
import contextlib
import json
import os
import shutil
import socket
import subprocess
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.support.shell_relay import (
    BASH_LS_EVENT,
    callable_hooks_file,
    relay_command,
    run_relay,
    start_warm,
)
from tests.support.warm_bridge import stop_all

from hookgate.integrations.claude_code import resident, shell_relay

pytestmark = pytest.mark.skipif(
    not shell_relay.available(), reason="the shell relay needs Linux and /bin/bash"
)

EVENT = BASH_LS_EVENT


@pytest.fixture
def folder(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix="hgw-", dir="/tmp"))
    monkeypatch.setenv("HOOKGATE_CLAUDE_CODE_WARM_DIR", str(path))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    yield path
    stop_all(path)
    shutil.rmtree(path, ignore_errors=True)


def _hooks(where: Path, command: str) -> Path:
    path = where / "hookgate.json"
    path.write_text(
        json.dumps(
            {
                "hooks": [
                    {
                        "name": "cmd",
                        "event": "pre_tool_use",
                        "handler_type": "command",
                        "config": {"command": command, "allowed_env_vars": ["SECRET_OF_ONE"]},
                    }
                ]
            }
        )
    )
    return path


def test_a_hand_off_without_the_client_token_runs_nothing(folder: Path, tmp_path: Path) -> None:
    """a process of the same user sends the warm process's Unix socket a hand-over (as the
    resident does) of a connection of its own, with a hooks file of its own and a made-up
    client token: no worker runs it, nothing is said on the connection."""
    start_warm(folder, _hooks(tmp_path, "true"), EVENT)
    mark = tmp_path / "pwned"
    evil = tmp_path / "evil"
    evil.mkdir()
    evil_hooks = _hooks(evil, f"touch {mark}")
    request = b"\0".join(
        [
            b"f" * 32,
            str(os.getpid()).encode(),
            b"claude-code",
            b"2",
            b"--config",
            str(evil_hooks).encode(),
            json.dumps(EVENT).encode(),
            b"",
        ]
    )
    ours, theirs = socket.socketpair()
    (sock,) = folder.glob("*.sock")
    with ours, theirs, socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as unix:
        unix.settimeout(20)
        unix.connect(str(sock))
        unix.sendmsg(
            [resident.hand_off_header(len(request))],
            [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", [theirs.fileno()]).tobytes())],
        )
        unix.sendall(request)
        assert unix.recv(1) == b""  # closed without taking it
        theirs.close()
        ours.settimeout(20)
        assert ours.recv(64) == b""
    assert not mark.exists()


def test_an_event_never_sees_another_events_environment(folder: Path, tmp_path: Path) -> None:
    """two sessions' events answered by the same resident at once: a secret in one relay's
    environment (allowed to its hooks) never reaches the other's hooks, whatever the order."""
    hooks = _hooks(tmp_path, 'echo "seen:${SECRET_OF_ONE:-none}" >&2; exit 2')
    start_warm(folder, hooks, EVENT)
    run_relay(relay_command("claude-code", hooks), EVENT)  # cached: in place from here
    answers: dict[str, list[str]] = {"one": [], "other": []}

    def events(name: str, env: dict[str, str]) -> None:
        for _ in range(6):
            done = run_relay(
                relay_command("claude-code", hooks), EVENT, HOOKGATE_SHELL_RELAY="require", **env
            )
            answers[name].append(
                json.loads(done.stdout)["hookSpecificOutput"]["permissionDecisionReason"]
            )

    threads = [
        threading.Thread(target=events, args=("one", {"SECRET_OF_ONE": "s3cret"})),
        threading.Thread(target=events, args=("other", {})),
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    assert answers["one"] == ["seen:s3cret"] * 6
    assert answers["other"] == ["seen:none"] * 6


_SPY = """\
import os
def check(event):
    with open(os.environ["HG_SEEN"], "a") as log:
        log.write(f"{os.getpid()} {os.getcwd()}\\n")
    return None
"""


def _callable_hooks(where: Path) -> Path:
    (where / "fw_spy.py").write_text(_SPY)
    return callable_hooks_file(where, "fw_spy:check")


def _seen(log: Path) -> list[tuple[str, str]]:
    return [
        (pid, cwd) for pid, cwd in (line.split(" ", 1) for line in log.read_text().splitlines())
    ]


def test_another_projects_event_never_reaches_a_per_file_worker(
    folder: Path, tmp_path: Path
) -> None:
    """the same hooks file used from two projects: the worker kept for the first (its
    modules imported there) never runs the second's event, neither through the resident
    nor when a process of the same user hands the event straight to the worker's socket
    (with the valid client token): it refuses, runs nothing, and exits."""
    hooks = _callable_hooks(tmp_path)
    log = tmp_path / "seen"
    log.touch()
    one, two = tmp_path / "one", tmp_path / "two"
    one.mkdir()
    two.mkdir()
    start_warm(folder, hooks, EVENT)
    command = relay_command("claude-code", hooks)
    for _ in range(2):
        run_relay(command, EVENT, cwd=one, HOOKGATE_SHELL_RELAY="require", HG_SEEN=str(log))
    (worker_pid, _), (kept, _) = _seen(log)[-2:]
    assert worker_pid == kept  # the worker of project one
    (worker_socket,) = folder.glob("*.file-*")

    run_relay(command, EVENT, cwd=two, HOOKGATE_SHELL_RELAY="require", HG_SEEN=str(log))
    assert _seen(log)[-1] != (kept, str(two)) and _seen(log)[-1][1] == str(two)
    assert all(pid != kept for pid, cwd in _seen(log) if cwd == str(two))

    # straight to the worker's socket: an event of a process in project two
    port, _, client = (folder / Path(shell_relay.endpoint_path(str(folder))).name).read_text(
    ).split()
    assert port
    before = log.read_text()
    with subprocess.Popen(["sleep", "30"], cwd=two) as stranger:
        try:
            request = b"\0".join(
                [
                    client.encode(),
                    str(stranger.pid).encode(),
                    b"claude-code",
                    b"2",
                    b"--config",
                    str(hooks).encode(),
                    json.dumps(EVENT).encode(),
                    b"",
                ]
            )
            ours, theirs = socket.socketpair()
            with ours, theirs, socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as unix:
                unix.settimeout(20)
                unix.connect(str(worker_socket))
                unix.sendmsg(
                    [resident.hand_off_header(len(request))],
                    [(socket.SOL_SOCKET, socket.SCM_RIGHTS,
                      array.array("i", [theirs.fileno()]).tobytes())],
                )
                unix.sendall(request)
                assert unix.recv(1) == b"R"  # refused: not its project
                theirs.close()
                ours.settimeout(20)
                assert ours.recv(64) == b""  # nothing said to the relay's connection
        finally:
            stranger.kill()
    assert log.read_text() == before
    assert not worker_socket.exists()  # it left: the next event of project one forks anew


def test_an_environment_value_is_data_in_a_spare_shells_script(folder: Path,
                                                               tmp_path: Path) -> None:
    """the resident runs command hooks in shells started ahead, writing each its
    environment as ``export NAME=value`` lines: a value an agent's environment carries with
    quotes, ``$(…)``, backticks and new lines (to run code when the script is read) reaches
    the hook as the same bytes, and runs nothing."""
    mark = tmp_path / "pwned"
    hooks = _hooks(tmp_path, 'printf "%s|%s" "$0" "$SECRET_OF_ONE" >&2; exit 2')
    start_warm(folder, hooks, EVENT)
    command = relay_command("claude-code", hooks)
    run_relay(command, EVENT)  # cached: in place from here
    value = f"'; touch {mark}; echo '\n$(touch {mark})`touch {mark}`\\\"; touch {mark}"
    shells = set()
    for _ in range(4):  # the first spare may still be starting: later events take one
        done = run_relay(command, EVENT, HOOKGATE_SHELL_RELAY="require", SECRET_OF_ONE=value)
        reason = json.loads(done.stdout)["hookSpecificOutput"]["permissionDecisionReason"]
        shell, _, seen = reason.partition("|")
        shells.add(shell.startswith("/dev/fd/"))
        assert seen in (value, value.replace("\n", " "))  # (a reason is one line)
    assert True in shells  # a spare ran it
    assert not mark.exists()


def _unix_request(folder: Path, pid: int, hooks: Path) -> bytes:
    """What a same-user process holding the client token sends on the compiled relay's Unix
    socket, naming ``pid`` as the relay's process; the answer (``b""``: closed unanswered)."""
    from tests.support.shell_relay import endpoint_file

    endpoint = endpoint_file(folder)
    _, server, client = endpoint.read_text().split()
    request = b"\0".join([client.encode(), str(pid).encode(), b"claude-code", b"2",
                          b"--config", str(hooks).encode(), json.dumps(EVENT).encode(), b""])
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as unix:
        unix.settimeout(30)
        unix.connect(shell_relay.unix_path(str(endpoint)))
        assert unix.recv(64) == server.encode() + b"\n"
        unix.sendall(request)
        chunks = []
        while chunk := unix.recv(65536):
            chunks.append(chunk)
    return b"".join(chunks)


def test_a_request_on_the_unix_socket_naming_another_process_runs_nothing(
    folder: Path, tmp_path: Path
) -> None:
    """The kernel names who connected to the Unix socket: a request that names another
    process (whose environment and folder the hooks would take over) is closed unanswered,
    and no hook runs. The same request naming its own process is answered."""
    mark = tmp_path / "ran"
    hooks = _hooks(tmp_path, f"echo ran >> {mark}")
    start_warm(folder, hooks, EVENT)
    mark.unlink()
    other = subprocess.Popen(["sleep", "60"], env={"SECRET_OF_ONE": "theirs"})
    try:
        assert _unix_request(folder, other.pid, hooks) == b""
        assert not mark.exists()
        assert _unix_request(folder, os.getpid(), hooks).startswith(b"X\0")
        assert mark.read_text() == "ran\n"
    finally:
        other.kill()
        other.wait()


def test_another_user_gets_not_a_word_on_the_unix_socket(folder: Path, tmp_path: Path) -> None:
    """The compiled relay's socket is 0600 in the private warm folder; even with both opened
    to everyone by mistake, the warm process asks the kernel who connected and says nothing
    to another user (not even the server token)."""
    from tests.support.shell_relay import endpoint_file

    start_warm(folder, _hooks(tmp_path, "true"), EVENT)
    path = shell_relay.unix_path(str(endpoint_file(folder)))
    assert os.stat(path).st_mode & 0o777 == 0o600

    def as_nobody() -> bytes:
        read, write = os.pipe()
        child = os.fork()
        if child == 0:  # pragma: no cover - the child reports through the pipe
            code = 1
            try:
                os.setgid(65534)
                os.setuid(65534)
                with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as unix:
                    unix.settimeout(20)
                    try:
                        unix.connect(path)
                    except PermissionError:
                        os.write(write, b"denied")
                    else:
                        heard = b""  # the warm process greets its user's peer unasked
                        with contextlib.suppress(ConnectionError):
                            heard = unix.recv(64)
                        os.write(write, b"said:" + heard)
                code = 0
            finally:
                os._exit(code)
        os.close(write)
        with os.fdopen(read, "rb") as pipe:
            said = pipe.read()
        assert os.waitpid(child, 0)[1] == 0
        return said

    assert as_nobody() == b"denied"
    os.chmod(folder, 0o711)
    os.chmod(path, 0o666)
    assert as_nobody() == b"said:"
