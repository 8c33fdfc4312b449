"""Spare shells (``spare_shell.py``): a command run by a shell started ahead gives what a
fresh ``sh -c`` gives (output, exit code, environment, folder, umask, stdin, process group),
keeps the timeout and the caps, and everything a spare cannot give exactly starts a fresh
shell instead."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.support.waiting import wait_until

from hookgate.handlers.subprocess.runner import ShellTimeout, run_shell_blocking
from hookgate.handlers.subprocess.spare_shell import SpareShells
from hookgate.outcome import HookError
from hookgate.sandbox import NO_SANDBOX, Sandbox

#: What a hook can see of its process: its environment, folder, umask, stdin, its group.
REPORT = ('env | sort; echo "pwd=$(pwd) umask=$(umask)"; cat; '
          'echo "own group: $(awk \'{print ($1 == $5)}\' /proc/$$/stat)"; exit 3')
ENV = {"PATH": "/usr/bin:/bin", "HOME": "/nowhere", "QUOTED": "a b'c\"$d `x` \\ \n end"}


@pytest.fixture
def spares() -> Iterator[SpareShells]:
    shells = SpareShells()
    shells.refill()
    wait_until(lambda: len(shells._ready) == 2, "two spares are ready")
    yield shells
    shells.close()


def run(command: str, cwd: str, spares: SpareShells | None, *, env: dict[str, str] = ENV,
        timeout_s: float = 10, umask: int = 0o027,
        sandbox: Sandbox = NO_SANDBOX) -> tuple[int, bytes, bytes, int]:
    return run_shell_blocking(command, b"the event\n", cwd, env, stdout_cap=1 << 16,
                              stderr_cap=1 << 16, timeout_s=timeout_s, umask=umask,
                              spares=spares, sandbox=sandbox)


def test_a_spare_gives_what_a_fresh_shell_gives(spares: SpareShells, tmp_path: Path) -> None:
    fresh = run(REPORT, str(tmp_path), None)
    spare = run(REPORT, str(tmp_path), spares)
    assert spare == fresh
    code, out, _, _ = spare
    assert code == 3
    assert f"pwd={tmp_path} umask=0027".encode() in out and b"the event" in out
    assert b"own group: 1" in out and b"QUOTED=a b'c\"$d `x` \\ \n" in out


def test_the_spare_is_taken_and_another_started(spares: SpareShells, tmp_path: Path) -> None:
    before = {spare.proc.pid for spare in spares._ready}
    code, out, _, _ = run("echo $PPID; echo $$", str(tmp_path), spares)
    shell = int(out.split()[1])
    assert code == 0 and shell in before  # it ran in one of the spares
    assert len(spares._ready) == 1  # none started in the event's wait
    spares.refill()  # what the resident does after the answer
    wait_until(lambda: len(spares._ready) == 2, "a new spare replaces it")
    assert shell not in {spare.proc.pid for spare in spares._ready}


def test_a_timeout_kills_the_spares_group(spares: SpareShells, tmp_path: Path) -> None:
    """What the command left in the background goes with it, as with a fresh shell."""
    background = tmp_path / "background.pid"
    started = time.monotonic()
    with pytest.raises(ShellTimeout):
        run(f"sleep 30 & echo $! > {background}; sleep 5", str(tmp_path), spares,
            timeout_s=0.5)
    assert time.monotonic() - started < 5
    pid = int(background.read_text())
    wait_until(lambda: not os.path.exists(f"/proc/{pid}") or _zombie(pid),
               "the background sleep is killed")


@pytest.mark.parametrize(("why", "cwd", "env", "sandbox"), [
    ("a variable name the shell cannot export", None, {**ENV, "A.B": "1"}, NO_SANDBOX),
    ("a sandbox", None, ENV, Sandbox(program="/nonexistent/bwrap")),
])
def test_what_a_spare_cannot_give_starts_a_fresh_shell(
    why: str, cwd: str | None, env: dict[str, str], sandbox: Sandbox, spares: SpareShells,
    tmp_path: Path
) -> None:
    ready = {spare.proc.pid for spare in spares._ready}
    try:
        code, out, _, _ = run("echo $$", str(tmp_path), spares, env=env, sandbox=sandbox)
    except HookError:
        assert sandbox.active  # the made-up bubblewrap cannot start: a fresh start it was
        return
    assert code == 0 and int(out) not in ready, why


def test_a_missing_folder_is_the_same_error_as_without_spares(spares: SpareShells,
                                                             tmp_path: Path) -> None:
    gone = str(tmp_path / "gone")
    with pytest.raises(HookError) as fresh:
        run("true", gone, None)
    with pytest.raises(HookError) as spare:
        run("true", gone, spares)
    assert str(spare.value) == str(fresh.value)


def test_concurrent_commands_beyond_the_spares_each_run_once(spares: SpareShells,
                                                            tmp_path: Path) -> None:
    results: dict[int, bytes] = {}

    def one(index: int) -> None:
        results[index] = run(f"echo {index}; cat", str(tmp_path), spares)[1]

    threads = [threading.Thread(target=one, args=(index,)) for index in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert results == {index: f"{index}\nthe event\n".encode() for index in range(6)}


def test_closed_spares_end_having_run_nothing(tmp_path: Path) -> None:
    shells = SpareShells()
    shells.refill()
    wait_until(lambda: len(shells._ready) == 2, "two spares are ready")
    pids = [spare.proc.pid for spare in shells._ready]
    shells.close()
    for pid in pids:
        assert not os.path.exists(f"/proc/{pid}") or _zombie(pid)


def _zombie(pid: int) -> bool:
    with open(f"/proc/{pid}/stat") as stat:
        return stat.read().rsplit(")", 1)[1].split()[0] == "Z"
