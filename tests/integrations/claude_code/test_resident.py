"""The warm process's resident worker (``resident.py``), with real processes: ``relay.bash``
events of a hooks file without host code are answered in place, concurrently, each with its
own relay's environment, working folder and umask; a new or edited hooks file takes effect
on the next event; a hooks file with a ``callable`` hook goes to a forked worker (kept for
that file and project: test_file_worker.py).

Every hook reports the pid of the process that started it (``$PPID``): the resident's for an
event answered in place, a fresh worker's for one answered in a fork."""

from __future__ import annotations

import json
import os
import subprocess
import threading
from pathlib import Path
from typing import Any

import pytest
from tests.support.shell_relay import BASH_LS_EVENT, relay_command, run_relay, start_warm
from tests.support.waiting import wait_until
from tests.support.warm_bridge import ask

from hookgate.integrations.claude_code import shell_relay
from hookgate.integrations.claude_code import warm_wire as wire

pytestmark = pytest.mark.skipif(
    not shell_relay.available(), reason="the shell relay needs Linux and /bin/bash"
)

EVENT = BASH_LS_EVENT
#: The hook's report, as the reason of a block: mark, working folder, umask, its parent.
REPORT = 'echo "$HG_MARK|$PWD|$(umask)|$PPID" >&2; exit 2'


def write_hooks(path: Path, *hooks: dict[str, Any]) -> Path:
    path.write_text(json.dumps({"hooks": list(hooks)}))
    return path


def command_hook(script: str, name: str = "cmd", **fields: Any) -> dict[str, Any]:
    return {
        "name": name,
        "event": "pre_tool_use",
        "handler_type": "command",
        "config": {"command": script, "allowed_env_vars": ["HG_MARK", "HG_WAIT"]},
        **fields,
    }


def reported(done: subprocess.CompletedProcess[str]) -> list[str]:
    """The hook's report from Claude Code's deny."""
    assert done.returncode == 0, done.stderr
    reason = json.loads(done.stdout)["hookSpecificOutput"]["permissionDecisionReason"]
    fields = reason.strip().split("|")
    assert len(fields) == 4, reason
    return fields


def resident_pid(folder: Path) -> int:
    (sock,) = folder.glob("*.sock")
    status = ask(sock, wire.STATUS).decode()
    fields = dict(line.split(": ", 1) for line in status.splitlines() if ": " in line)
    return int(fields["resident"])


def relay(
    hooks: Path, cwd: Path, umask: str = "022", **env: str
) -> subprocess.CompletedProcess[str]:
    # require: a hand-over to the Python relay would fail the event instead
    return run_relay(
        f"umask {umask}; {relay_command('claude-code', hooks)}",
        EVENT,
        cwd=cwd,
        HOOKGATE_SHELL_RELAY="require",
        **env,
    )


@pytest.fixture
def project(tmp_path: Path) -> Path:
    path = tmp_path / "project"
    path.mkdir()
    return path


def test_two_concurrent_events_each_see_their_own_process(
    warm_folder: Path, tmp_path: Path
) -> None:
    # Each hook waits until the other has started: they finish only if both run at once.
    rendezvous = tmp_path / "rendezvous"
    rendezvous.mkdir()
    wait = (
        f'touch {rendezvous}/"$HG_MARK"; n=0; '
        f'while [ "$(ls {rendezvous} | wc -l)" -lt 2 ] && [ $n -lt 200 ]; do '
        "sleep 0.05; n=$((n+1)); done; "
        f'[ "$(ls {rendezvous} | wc -l)" -ge 2 ] || HG_MARK=alone; '
    )
    hooks = write_hooks(tmp_path / "hookgate.json", command_hook(wait + REPORT))
    start_warm(warm_folder, hooks, EVENT)
    resident = resident_pid(warm_folder)
    folders = {mark: tmp_path / mark for mark in ("one", "two")}
    for folder in folders.values():
        folder.mkdir()
    umasks = {"one": "0027", "two": "0077"}
    results: dict[str, subprocess.CompletedProcess[str]] = {}

    def one(mark: str) -> None:
        results[mark] = relay(hooks, folders[mark], umasks[mark], HG_MARK=mark)

    threads = [threading.Thread(target=one, args=(mark,)) for mark in folders]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert len(list(rendezvous.iterdir())) == 2
    for mark, done in results.items():
        assert reported(done) == [mark, str(folders[mark]), umasks[mark], str(resident)]
    # and nothing of them stayed: an event without the variable sees none
    assert reported(relay(hooks, folders["one"]))[:3] == ["", str(folders["one"]), "0022"]


def test_an_event_answered_in_place_changes_nothing_of_the_resident(
    warm_folder: Path, tmp_path: Path, project: Path
) -> None:
    hooks = write_hooks(tmp_path / "hookgate.json", command_hook(REPORT))
    start_warm(warm_folder, hooks, EVENT)
    resident = resident_pid(warm_folder)
    before = _process_facts(resident)
    assert reported(relay(hooks, project, "0077", HG_MARK="x"))[3] == str(resident)
    assert _process_facts(resident) == before


def _process_facts(pid: int) -> tuple[str, bytes, str]:
    """Working folder, environment and umask of a process."""
    status = Path(f"/proc/{pid}/status").read_text()
    umask = next(line for line in status.splitlines() if line.startswith("Umask:"))
    return os.readlink(f"/proc/{pid}/cwd"), Path(f"/proc/{pid}/environ").read_bytes(), umask


def test_an_edited_hooks_file_takes_effect_on_the_next_event(
    warm_folder: Path, tmp_path: Path, project: Path
) -> None:
    hooks = write_hooks(tmp_path / "hookgate.json", command_hook(REPORT.replace("$HG", "A$HG")))
    start_warm(warm_folder, hooks, EVENT)
    resident = resident_pid(warm_folder)
    assert reported(relay(hooks, project, HG_MARK="x"))[::3] == ["Ax", str(resident)]
    # the same size and time stamp: only the bytes tell
    stat = hooks.stat()
    write_hooks(hooks, command_hook(REPORT.replace("$HG", "B$HG")))
    os.utime(hooks, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert hooks.stat().st_size == stat.st_size
    # the file's first event after the edit is validated in a fork; the next one in place
    first = reported(relay(hooks, project, HG_MARK="x"))
    assert first[0] == "Bx" and first[3] != str(resident)
    assert reported(relay(hooks, project, HG_MARK="x"))[::3] == ["Bx", str(resident)]


def test_a_hooks_file_gaining_a_callable_hook_goes_to_a_forked_worker(
    warm_folder: Path, tmp_path: Path, project: Path
) -> None:
    hooks = write_hooks(tmp_path / "hookgate.json", command_hook(REPORT))
    start_warm(warm_folder, hooks, EVENT)
    resident = resident_pid(warm_folder)
    assert reported(relay(hooks, project))[3] == str(resident)
    module = tmp_path / "resident_guard.py"
    module.write_text("def allow(event):\n    return None\n")
    write_hooks(
        hooks,
        {
            "name": "py",
            "event": "pre_tool_use",
            "handler_type": "callable",
            "config": {"callable": "resident_guard:allow"},
        },
        command_hook(REPORT),
    )
    parents = {reported(relay(hooks, project))[3] for _ in range(3)}
    assert str(resident) not in parents
    # the first fork stays, the worker of this file and project (test_file_worker.py)
    assert len(parents) == 1
    # and an edit of its module takes effect on the next event
    module.write_text(
        "def allow(event):\n    return {'decision': 'block', 'reason': 'edited|/|0|0'}\n"
    )
    assert reported(relay(hooks, project))[0] == "edited"


def test_a_hook_that_hangs_holds_no_other_event(
    warm_folder: Path, tmp_path: Path, project: Path
) -> None:
    started, release = tmp_path / "started", tmp_path / "release"
    hangs = write_hooks(
        tmp_path / "hangs.json",
        command_hook(
            f'if [ -n "$HG_WAIT" ]; then touch {started}; n=0; '
            f"while [ ! -e {release} ] && [ $n -lt 180 ]; do sleep 0.05; n=$((n+1)); done; fi; "
            + REPORT,
            timeout_ms=10000,
        ),
    )
    quick = write_hooks(tmp_path / "quick.json", command_hook(REPORT))
    start_warm(warm_folder, quick, EVENT)
    resident = resident_pid(warm_folder)
    relay(hangs, project)  # cached, so that the hanging event runs in place
    event = tmp_path / "event.json"
    event.write_text(json.dumps(EVENT))
    with event.open("rb") as stdin:
        hanging = subprocess.Popen(
            ["/bin/sh", "-c", relay_command("claude-code", hangs)],
            stdin=stdin,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=project,
            env={
                **os.environ,
                "HG_MARK": "slow",
                "HG_WAIT": "1",
                "HOOKGATE_SHELL_RELAY": "require",
            },
        )
    try:
        wait_until(started.exists, "the hanging hook runs", 30)
        for mark in ("a", "b", "c"):
            assert reported(relay(quick, project, HG_MARK=mark))[::3] == [mark, str(resident)]
        assert hanging.poll() is None  # still held meanwhile
        release.touch()
        out, err = hanging.communicate(timeout=30)
    finally:
        hanging.kill()
    done = subprocess.CompletedProcess(hanging.args, hanging.returncode, out, err)
    assert reported(done)[::3] == ["slow", str(resident)]


def test_more_events_at_once_than_waiting_threads_all_run_at_once(
    warm_folder: Path, tmp_path: Path, project: Path
) -> None:
    # Each hook waits until all have started: they finish only if all run at once, so the
    # resident must start threads beyond the ones waiting in accept().
    count = 6
    rendezvous = tmp_path / "rendezvous"
    rendezvous.mkdir()
    wait = (
        f'touch {rendezvous}/"$HG_MARK"; n=0; '
        f'while [ "$(ls {rendezvous} | wc -l)" -lt {count} ] && [ $n -lt 300 ]; do '
        "sleep 0.05; n=$((n+1)); done; "
        f'[ "$(ls {rendezvous} | wc -l)" -ge {count} ] || HG_MARK=alone; '
    )
    hooks = write_hooks(tmp_path / "hookgate.json", command_hook(wait + REPORT))
    start_warm(warm_folder, hooks, EVENT)
    resident = resident_pid(warm_folder)
    results: dict[str, subprocess.CompletedProcess[str]] = {}

    def one(mark: str) -> None:
        results[mark] = relay(hooks, project, HG_MARK=mark)

    threads = [threading.Thread(target=one, args=(str(index),)) for index in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(90)
    assert len(list(rendezvous.iterdir())) == count
    for mark, done in results.items():
        assert reported(done)[::3] == [mark, str(resident)]


def test_a_changed_hookgate_is_never_answered_by_the_resident(
    warm_folder: Path, tmp_path: Path, project: Path
) -> None:
    """The resident learns of a change to hookgate's code from its inotify watch (one read
    per event), and the first event after it is refused (nothing ran): the relay hands it on,
    here ``require`` makes that hookgate's failure. Events before it are answered in place."""
    from tests.support.warm_bridge import warm_pids

    hooks = write_hooks(tmp_path / "hookgate.json", command_hook(REPORT))
    start_warm(warm_folder, hooks, EVENT)
    resident = resident_pid(warm_folder)
    assert reported(relay(hooks, project))[3] == str(resident)
    assert reported(relay(hooks, project))[3] == str(resident)  # the watch stays quiet
    module = Path(wire.__file__)
    before = module.stat()
    try:
        os.utime(module, ns=(before.st_atime_ns, before.st_mtime_ns + 1_000_000_000))
        done = relay(hooks, project)
        assert done.returncode == 2, done.stdout
        assert "did not reach the warm process (refused the event)" in done.stderr
        wait_until(lambda: not warm_pids(warm_folder), "the old warm process ends")
    finally:
        os.utime(module, ns=(before.st_atime_ns, before.st_mtime_ns))
