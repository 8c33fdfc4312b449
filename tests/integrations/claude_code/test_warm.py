"""The warm ``hookgate claude-code`` process, with real processes: the relay starts it and
reuses it, a fresh fork answers each event with the event's own environment and working
directory, failures after the hand-over fail closed without running the hooks again, and
nobody else's socket folder or process is ever used."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest
from tests.support.waiting import wait_until
from tests.support.warm_bridge import warm_pids

from hookgate.integrations.claude_code import warm_wire as wire
from hookgate.integrations.claude_code.warm_place import place

HOOKGATE = str(Path(sys.executable).parent / "hookgate")


@pytest.fixture
def folder(warm_folder: Path) -> Path:
    return warm_folder


def event(name: str = "PreToolUse", command: str = "ls", **extra: Any) -> dict[str, Any]:
    return {"session_id": "s", "cwd": "/tmp", "hook_event_name": name, "tool_name": "Bash",
            "tool_input": {"command": command}, **extra}


def hooks_file(where: Path, *hooks: dict[str, Any]) -> Path:
    path = where / "hookgate.json"
    path.write_text(json.dumps({"hooks": list(hooks)}))
    return path


def command(script: str, event: str = "pre_tool_use", **extra: Any) -> dict[str, Any]:
    return {"name": "cmd", "event": event, "handler_type": "command",
            "config": {"command": script}, **extra}


def bridge(hooks: Path, data: dict[str, Any] | None = None, *, cwd: Path | None = None,
           umask: int = -1, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([HOOKGATE, "claude-code", "--config", str(hooks)],
                          input=json.dumps(data or event()), capture_output=True, text=True,
                          timeout=60, check=False, cwd=cwd, env={**os.environ, **env},
                          umask=umask)


def context(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode == 0, result.stderr
    return str(json.loads(result.stdout)["hookSpecificOutput"]["additionalContext"])


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return Path(f"/proc/{pid}").exists() and "Z" not in Path(
        f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0]


#: A command hook that reports the process that forked its parent (the warm process).
WARM_PID = ("""echo "{\\"additional_context\\": """
            """\\"$(awk '/^PPid:/ {print $2}' /proc/$PPID/status)\\"}" """)


def test_started_once_and_reused(folder: Path, tmp_path: Path) -> None:
    hooks = hooks_file(tmp_path, command(WARM_PID))
    first, second = context(bridge(hooks)), context(bridge(hooks))
    assert first == second
    (sock, pid), = warm_pids(folder).items()
    assert str(pid) == first
    assert "claude_code.warm" in Path(f"/proc/{pid}/cmdline").read_text()
    assert sock.stat().st_mode & 0o777 == 0o600 and folder.stat().st_mode & 0o777 == 0o700


def test_the_first_event_runs_itself_while_the_warm_process_starts(
    folder: Path, tmp_path: Path
) -> None:
    hooks = hooks_file(tmp_path, command(WARM_PID))
    first = context(bridge(hooks, HOOKGATE_CLAUDE_CODE_WARM="on"))
    assert first == str(os.getpid())  # run by the relay, a child of this test
    wait_until(lambda: warm_pids(folder), "the warm process it started listens")
    (_, pid), = warm_pids(folder).items()
    assert context(bridge(hooks, HOOKGATE_CLAUDE_CODE_WARM="on")) == str(pid)


def test_two_projects_modules_of_the_same_name_never_mix(folder: Path, tmp_path: Path) -> None:
    answers = {}
    for name in ("one", "two"):
        project = tmp_path / name
        project.mkdir()
        (project / "guards.py").write_text(f"def say(event):\n"
                                           f"    return {{'additional_context': {name!r}}}\n")
        answers[name] = hooks_file(project, {
            "name": "py", "event": "pre_tool_use", "handler_type": "callable",
            "config": {"callable": "guards:say"}})
    for _ in range(2):
        for name, hooks in answers.items():
            assert context(bridge(hooks)) == name


def test_an_edited_module_takes_effect_on_the_next_event(folder: Path, tmp_path: Path) -> None:
    module = tmp_path / "edited_guard.py"
    module.write_text("def say(event):\n    return {'additional_context': 'first'}\n")
    hooks = hooks_file(tmp_path, {"name": "py", "event": "pre_tool_use",
                                  "handler_type": "callable",
                                  "config": {"callable": "edited_guard:say"}})
    assert context(bridge(hooks)) == "first"
    module.write_text("def say(event):\n    return {'additional_context': 'second, longer'}\n")
    assert context(bridge(hooks)) == "second, longer"
    hooks.write_text(json.dumps({"hooks": [command(
        """echo '{"additional_context": "the file changed"}'""")]}))
    assert context(bridge(hooks)) == "the file changed"


def test_the_event_s_environment_and_folder_reach_the_hooks(folder: Path,
                                                            tmp_path: Path) -> None:
    (tmp_path / "env_guard.py").write_text(
        "import os\n"
        "def say(event):\n"
        "    return {'additional_context': os.environ['PROBE'] + ' ' + os.getcwd()}\n")
    shell = command("""echo "{\\"additional_context\\": \\"$PROBE $(pwd)\\"}" """)
    shell["config"]["allowed_env_vars"] = ["PROBE"]
    python = {"name": "py", "event": "pre_tool_use", "handler_type": "callable",
              "config": {"callable": "env_guard:say"}}
    for hook in (shell, python):
        hooks = hooks_file(tmp_path, hook)
        for probe in ("alpha", "beta"):
            where = tmp_path / probe
            where.mkdir(exist_ok=True)
            assert context(bridge(hooks, cwd=where, PROBE=probe)) == f"{probe} {where}"
    hooks = hooks_file(tmp_path, command("""echo "{\\"additional_context\\": \\"$(umask)\\"}" """))
    assert context(bridge(hooks, umask=0o027)) == "0027"
    assert context(bridge(hooks, umask=0o002)) == "0002"
    assert len(warm_pids(folder)) == 1  # all through one warm process


def test_a_worker_killed_mid_event_fails_closed_and_nothing_runs_twice(
    folder: Path, tmp_path: Path
) -> None:
    runs = tmp_path / "runs"
    hooks = hooks_file(tmp_path, command(f"echo ran >> {runs}; kill -9 $PPID; sleep 30"),
                       {**command(f"echo ran >> {runs}; kill -9 $PPID; sleep 30", event="stop"),
                        "name": "on-stop"})
    pre = bridge(hooks)
    assert pre.returncode == 2, pre.stderr
    assert pre.stderr.startswith("hookgate: ") and pre.stderr.count("\n") == 1
    assert "warm hookgate process failed" in pre.stderr
    assert runs.read_text() == "ran\n"  # not run again in the relay
    stop = bridge(hooks, event("Stop"))
    assert stop.returncode == 1  # exit 2 on Stop would make Claude keep going
    assert runs.read_text() == "ran\nran\n"


def test_the_warm_process_killed_mid_event_still_answers(folder: Path, tmp_path: Path) -> None:
    # The worker is a process of its own: it finishes the event it holds.
    kill_grandparent = ("kill -9 $(awk '/^PPid:/ {print $2}' /proc/$PPID/status); "
                        """echo '{"additional_context": "finished"}'""")
    hooks = hooks_file(tmp_path, command(kill_grandparent))
    assert context(bridge(hooks)) == "finished"
    hooks.write_text(json.dumps({"hooks": [command(WARM_PID)]}))
    assert context(bridge(hooks))  # answered again, by what is left or a new warm process


def _children(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(stat[1]) == pid:
                found.append(int(entry.name))
    return found


@pytest.mark.parametrize("how", ["SIGKILL", "SIGTERM"])
def test_every_worker_ends_with_the_warm_process(folder: Path, tmp_path: Path,
                                                 how: str) -> None:
    """The warm process killed at once after it starts (as a test's cleanup or a logout
    does, while it may still be forking its workers): none of its workers, waiting ones,
    the resident or one being forked, stays behind (a worker that asked for its parent after
    the parent died would have waited for ever)."""
    import signal

    hooks = hooks_file(tmp_path, command(WARM_PID))
    pid = int(context(bridge(hooks)))
    workers = _children(pid)
    assert workers
    os.kill(pid, getattr(signal, how))
    workers += [child for worker in workers for child in _children(worker)]
    wait_until(lambda: not any(alive(worker) for worker in workers),
               "every worker of the killed warm process ends", 15)


def test_a_stale_socket_file_is_replaced(folder: Path, tmp_path: Path) -> None:
    where = place(os.environ)
    assert where is not None
    dead = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    dead.bind(where.socket)
    dead.close()  # the file stays, nobody listens
    hooks = hooks_file(tmp_path, command(WARM_PID))
    pid = context(bridge(hooks))
    assert warm_pids(folder) == {Path(where.socket): int(pid)}


@pytest.mark.parametrize("problem", ["group-writable", "foreign-owned", "symlink"])
def test_an_unsafe_folder_is_never_used(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                        problem: str) -> None:
    unsafe = tmp_path / "sockets"
    unsafe.mkdir(mode=0o700)
    if problem == "group-writable":
        unsafe.chmod(0o770)
    elif problem == "foreign-owned":
        if os.getuid() == 0:
            os.chown(unsafe, 65534, 65534)
        else:
            unsafe = Path("/")  # a folder of root's
    else:
        real, unsafe = unsafe, tmp_path / "link"
        unsafe.symlink_to(real)
    monkeypatch.setenv("HOOKGATE_CLAUDE_CODE_WARM_DIR", str(unsafe))
    hooks = hooks_file(tmp_path, command("""echo '{"additional_context": "ran"}'"""))
    monkeypatch.setenv("HOOKGATE_CLAUDE_CODE_WARM", "require")
    refused = bridge(hooks)
    assert refused.returncode == 2 and "no warm hookgate process" in refused.stderr
    monkeypatch.setenv("HOOKGATE_CLAUDE_CODE_WARM", "on")
    assert context(bridge(hooks)) == "ran"  # run in its own process instead
    assert not list(Path(unsafe).glob("cc-*"))


@pytest.mark.skipif(os.getuid() != 0, reason="switching to another user needs root")
def test_another_user_gets_no_answer(folder: Path, tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    hooks = hooks_file(tmp_path, command(f"echo ran >> {runs}"))
    bridge(hooks)
    (sock, _), = warm_pids(folder).items()
    folder.chmod(0o711)
    sock.chmod(0o666)  # only the peer check stands in the way now
    tmp_path.chmod(0o755)
    read_end, write_end = os.pipe()
    child = os.fork()
    if child == 0:  # pragma: no cover (runs in the child)
        outcome = "no outcome"
        try:
            os.setgid(65534)
            os.setuid(65534)
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
                conn.settimeout(20)
                conn.connect(str(sock))
                request = wire.pack(wire.EVENT, [b"x"] * 10)
                conn.sendmsg([request], [(socket.SOL_SOCKET, socket.SCM_RIGHTS,
                                          (1).to_bytes(4, sys.byteorder) * 2)])
                outcome = f"answered {conn.recv(16)!r}"
        except BaseException as exc:
            outcome = repr(exc)
        finally:
            os.write(write_end, outcome.encode())
            os._exit(0)
    os.close(write_end)
    os.waitpid(child, 0)
    with os.fdopen(read_end) as pipe:
        outcome = pipe.read()
    # The connection is closed without a word (before or after the request was written).
    assert outcome in ("answered b''", "BrokenPipeError(32, 'Broken pipe')",
                       "ConnectionResetError(104, 'Connection reset by peer')"), outcome
    assert runs.read_text() == "ran\n"


def test_two_installs_or_pythonpaths_get_two_processes(folder: Path, tmp_path: Path) -> None:
    hooks = hooks_file(tmp_path, command(WARM_PID))
    one = context(bridge(hooks))
    two = context(bridge(hooks, PYTHONPATH=str(tmp_path)))
    assert one != two and len(warm_pids(folder)) == 2


def test_idle_exit(folder: Path, tmp_path: Path) -> None:
    hooks = hooks_file(tmp_path, command(WARM_PID))
    pid = int(context(bridge(hooks, HOOKGATE_CLAUDE_CODE_WARM_IDLE="0.5")))
    wait_until(lambda: not alive(pid), "the idle warm process exits")
    wait_until(lambda: not list(folder.glob("*.sock")), "its socket file is removed")
    assert int(context(bridge(hooks))) != pid  # and the next event starts a new one


def test_a_changed_hookgate_is_never_answered_by_the_old_process(folder: Path,
                                                                 tmp_path: Path) -> None:
    hooks = hooks_file(tmp_path, command(WARM_PID))
    old = int(context(bridge(hooks)))
    module = Path(wire.__file__)
    before = module.stat()
    try:
        os.utime(module, ns=(before.st_atime_ns, before.st_mtime_ns + 1_000_000_000))
        # The old process refuses (and exits): the event runs in the relay.
        assert context(bridge(hooks, HOOKGATE_CLAUDE_CODE_WARM="on")) == str(os.getpid())
        wait_until(lambda: not alive(old), "the old warm process exits")
        second = int(context(bridge(hooks)))
        assert second not in (old, os.getpid())  # a new one answers
        os.utime(module, ns=(before.st_atime_ns, before.st_mtime_ns + 2_000_000_000))
        newer = int(context(bridge(hooks)))  # require: refused, so it asks a new one
        assert newer not in (old, second, os.getpid())
    finally:
        os.utime(module, ns=(before.st_atime_ns, before.st_mtime_ns))


def test_concurrent_events_are_served_concurrently(folder: Path, tmp_path: Path) -> None:
    # Each hook waits until the other one has started: served one after the other, both
    # would time out (and block).
    script = ("touch {me}; i=0; while [ ! -e {other} ] && [ $i -lt 150 ]; do sleep 0.05; "
              "i=$((i+1)); done; [ -e {other} ] && echo '{{\"additional_context\": \"met\"}}'")
    a, b = tmp_path / "a", tmp_path / "b"
    (tmp_path / "pa").mkdir()
    (tmp_path / "pb").mkdir()
    hooks_a = hooks_file(tmp_path / "pa", command(script.format(me=a, other=b),
                                                  timeout_ms=10_000))
    hooks_b = hooks_file(tmp_path / "pb", command(script.format(me=b, other=a),
                                                  timeout_ms=10_000))
    bridge(hooks_file(tmp_path, command("exit 0")))  # the warm process is up
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(2) as pool:
        results = list(pool.map(bridge, (hooks_a, hooks_b)))
    for result in results:
        out = context(result)
        assert out == "met"


def test_timeouts_hold_in_the_warm_process(folder: Path, tmp_path: Path) -> None:
    hooks = hooks_file(tmp_path, command("sleep 30", timeout_ms=300))
    result = bridge(hooks)
    assert result.returncode == 0, result.stderr
    answer = json.loads(result.stdout)["hookSpecificOutput"]
    assert answer["permissionDecision"] == "deny" and "300" in answer[
        "permissionDecisionReason"]


def test_status_and_stop(folder: Path, tmp_path: Path) -> None:
    bridge(hooks_file(tmp_path, command("exit 0")))
    (sock, pid), = warm_pids(folder).items()
    status = subprocess.run([HOOKGATE, "claude-code", "warm", "status"], capture_output=True,
                            text=True, timeout=60, check=True).stdout
    assert f"pid: {pid}" in status and str(sock) in status
    stopped = subprocess.run([HOOKGATE, "claude-code", "warm", "stop"], capture_output=True,
                             text=True, timeout=60, check=True).stdout
    assert str(pid) in stopped
    wait_until(lambda: not alive(pid), "the stopped warm process exits")


def test_off_never_starts_one(folder: Path, tmp_path: Path,
                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOOKGATE_CLAUDE_CODE_WARM", "off")
    hooks = hooks_file(tmp_path, command("""echo '{"additional_context": "here"}'"""))
    assert context(bridge(hooks)) == "here"
    assert not list(folder.iterdir())


def fake_warm_process(path: str, reply: bytes) -> threading.Thread:
    """A listener at the warm process's socket that answers the first request with
    ``reply`` (after reading the request and the commit that may follow a ``S``)."""
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(1)

    def serve() -> None:
        with listener, listener.accept()[0] as conn:
            conn.settimeout(30)
            head, ancillary, _, _ = conn.recvmsg(9, socket.CMSG_SPACE(8))
            for _, _, data in ancillary:  # close the relay's stdout and stderr copies
                for index in range(0, len(data) - len(data) % 4, 4):
                    os.close(int.from_bytes(data[index:index + 4], sys.byteorder))
            left = int.from_bytes(head[5:9], "big")
            while left > 0:
                left -= len(conn.recv(min(left, 65536)))
            conn.sendall(reply[:1])
            if reply[:1] == wire.STARTED:
                conn.recv(1)  # the commit
                conn.sendall(reply[1:])

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    return thread


@pytest.mark.parametrize(("reply", "event_name", "code"), [
    (b"S?", "PreToolUse", 2), (b"S", "PreToolUse", 2), (b"S?", "Stop", 1)],
    ids=["garbage", "closed", "garbage-on-stop"])
def test_a_broken_answer_after_the_hand_over_fails_closed(
    folder: Path, tmp_path: Path, reply: bytes, event_name: str, code: int
) -> None:
    runs = tmp_path / "runs"
    hooks = hooks_file(tmp_path, command(f"echo ran >> {runs}"),
                       {**command(f"echo ran >> {runs}", event="stop"), "name": "on-stop"})
    where = place(os.environ)
    assert where is not None
    thread = fake_warm_process(where.socket, reply)
    result = bridge(hooks, event(event_name), HOOKGATE_CLAUDE_CODE_WARM="on")
    thread.join(30)
    assert result.returncode == code, result.stderr
    assert result.stderr.startswith("hookgate: the warm hookgate process failed")
    assert result.stderr.count("\n") == 1
    assert not runs.exists()  # the relay did not run the hooks itself


def test_a_refusal_before_the_hand_over_runs_the_event_in_the_relay(
    folder: Path, tmp_path: Path
) -> None:
    hooks = hooks_file(tmp_path, command(WARM_PID))
    where = place(os.environ)
    assert where is not None
    thread = fake_warm_process(where.socket, wire.REFUSED)
    assert context(bridge(hooks, HOOKGATE_CLAUDE_CODE_WARM="on")) == str(os.getpid())
    thread.join(30)


def test_a_warm_process_that_cannot_start_is_not_started_on_every_event(
    folder: Path, tmp_path: Path
) -> None:
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "yaml.py").write_text("raise ImportError('no yaml in this test')\n")
    hooks = hooks_file(tmp_path, command("""echo '{"additional_context": "ran"}'"""))
    env = {"PYTHONPATH": str(broken)}  # the warm process's imports fail, the relay's do not
    assert context(bridge(hooks, HOOKGATE_CLAUDE_CODE_WARM="on", **env)) == "ran"
    wait_until(lambda: list(folder.glob("*.failed")), "the failed start is noted")
    marker, = folder.glob("*.failed")
    assert "no yaml in this test" in marker.read_text()
    refused = bridge(hooks, **env)  # require: none is started, so it fails at once
    assert refused.returncode == 2 and "failed to start" in refused.stderr
    assert context(bridge(hooks, HOOKGATE_CLAUDE_CODE_WARM="on", **env)) == "ran"
    assert not warm_pids(folder)
