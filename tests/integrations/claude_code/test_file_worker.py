"""The per-file worker (``file_worker.py``), with real processes: a hooks file with a
``callable`` hook is answered, after its first event, by a worker kept for that file and
project (no fork per event), until one of the modules it imported changes; another project,
or a concurrent event, never shares it.

The callable reports, as the reason of its block: the event's ``HG_MARK``, its working
folder, the pid of the process that ran it, and how many events that process ran."""

from __future__ import annotations

import json
import subprocess
import threading
from pathlib import Path

import pytest
from tests.support.shell_relay import (
    BASH_LS_EVENT,
    callable_hooks_file,
    relay_command,
    run_relay,
    start_warm,
)

from hookgate.integrations.claude_code import shell_relay

pytestmark = pytest.mark.skipif(
    not shell_relay.available(), reason="the shell relay needs Linux and /bin/bash"
)

EVENT = BASH_LS_EVENT
GUARD = """\
import os, time
RUNS = 0
def check(event):
    global RUNS
    RUNS += 1
    mark = os.environ.get("HG_MARK", "")
    meet = os.environ.get("HG_MEET")
    if meet:  # wait (up to 10 s) until two events are here at once
        open(os.path.join(meet, mark), "w").close()
        end = time.monotonic() + 10
        while len(os.listdir(meet)) < 2 and time.monotonic() < end:
            time.sleep(0.02)
        if len(os.listdir(meet)) < 2:
            mark = "alone"
    return {"decision": "block", "reason": f"{VERSION}|{mark}|{os.getcwd()}|{os.getpid()}|{RUNS}"}
"""


def write_guard(folder: Path, version: str) -> None:
    (folder / "fw_guard.py").write_text(f"VERSION = {version!r}\n" + GUARD)


def write_hooks(folder: Path) -> Path:
    write_guard(folder, "v1")
    return callable_hooks_file(folder, "fw_guard:check")


def relay(hooks: Path, cwd: Path, **env: str) -> list[str]:
    done: subprocess.CompletedProcess[str] = run_relay(
        relay_command("claude-code", hooks), EVENT, cwd=cwd, HOOKGATE_SHELL_RELAY="require",
        **env,
    )
    assert done.returncode == 0, done.stderr
    reason = json.loads(done.stdout)["hookSpecificOutput"]["permissionDecisionReason"]
    fields = reason.strip().split("|")
    assert len(fields) == 5, reason
    return fields


@pytest.fixture
def hooks(warm_folder: Path, tmp_path: Path) -> Path:
    path = write_hooks(tmp_path)
    start_warm(warm_folder, path, EVENT)
    return path


def projects(tmp_path: Path, *names: str) -> list[Path]:
    folders = [tmp_path / name for name in names]
    for folder in folders:
        folder.mkdir()
    return folders


def test_later_events_of_a_callable_hooks_file_are_answered_by_one_worker(
    hooks: Path, tmp_path: Path
) -> None:
    (project,) = projects(tmp_path, "project")
    first = relay(hooks, project, HG_MARK="a")
    second = relay(hooks, project, HG_MARK="b")
    third = relay(hooks, project)
    assert first[:3] == ["v1", "a", str(project)]
    # the same process (no fork), its module's globals kept; each event's own environment
    assert second == ["v1", "b", str(project), first[3], "2"]
    assert third == ["v1", "", str(project), first[3], "3"]


def test_an_edited_module_takes_effect_on_the_next_event(hooks: Path, tmp_path: Path) -> None:
    (project,) = projects(tmp_path, "project")
    relay(hooks, project)
    kept = relay(hooks, project)
    write_guard(tmp_path, "v2")
    edited = relay(hooks, project)
    assert edited[0] == "v2" and edited[3] != kept[3] and edited[4] == "1"
    # an edit that keeps the size (and may keep the time stamp): its content tells
    again = relay(hooks, project)
    assert again[3] == edited[3]
    write_guard(tmp_path, "v3")
    assert relay(hooks, project)[0] == "v3"


def test_another_project_never_gets_the_first_ones_worker(hooks: Path, tmp_path: Path) -> None:
    one, two = projects(tmp_path, "one", "two")
    relay(hooks, one)
    worker = relay(hooks, one)[3]
    other = relay(hooks, two)
    assert other[2] == str(two) and other[3] != worker and other[4] == "1"
    assert relay(hooks, two)[3] != worker
    assert relay(hooks, one)[3] == worker  # the first project keeps its own


def test_concurrent_events_are_each_answered_with_their_own_process(
    hooks: Path, tmp_path: Path
) -> None:
    (project,) = projects(tmp_path, "project")
    relay(hooks, project)
    worker = relay(hooks, project)[3]
    results: dict[str, list[str]] = {}
    meet = tmp_path / "meet"
    meet.mkdir()

    def one(mark: str) -> None:
        results[mark] = relay(hooks, project, HG_MARK=mark, HG_MEET=str(meet))

    threads = [threading.Thread(target=one, args=(mark,)) for mark in ("x", "y")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    # both ran at once (each waited for the other), each with its own environment
    assert {mark: fields[1] for mark, fields in results.items()} == {"x": "x", "y": "y"}
    assert results["x"][3] != results["y"][3]
    assert all(fields[2] == str(project) for fields in results.values())
    assert relay(hooks, project)[3] == worker
