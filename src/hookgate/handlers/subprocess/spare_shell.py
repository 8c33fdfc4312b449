"""Shells started before the command they will run: a command hook without a shell's start
in its wait.

A command hook is ``/bin/sh -c COMMAND``; starting that shell (a fork, an exec, the dynamic
loader) is about a third of what a small hook costs, and the warm process's resident pays
it inside every event it answers. :class:`SpareShells` keeps a few shells already started,
each blocked reading its script from a pipe (``/bin/sh /dev/fd/N``), with its own process
group and its stdin, stdout and stderr pipes, as :func:`~.runner.run_shell_blocking` makes
them. An event takes one and writes it the script: the working folder, the umask and the
hook's environment (``cd``, ``umask``, ``export``: the shell started with an empty one),
then the command. New spares are started once the event is answered
(:meth:`SpareShells.refill`).

The command runs in the same kind of process with the same environment, folder, umask,
group, pipes, caps and timeout as a fresh ``sh -c``; ``$0`` is the script's name. The
script closes its pipe's read end in the shell when its number is below 10; above, dash
cannot name it in a redirection, and the command's processes also hold it (empty by then:
the shell has read the script, and its writer is closed). When a
spare cannot give exactly that (no spare ready, a folder that is not there, a variable name
the shell cannot export, a sandbox), :meth:`SpareShells.take` returns ``None`` and the
caller starts the shell as always. A spare whose owner is gone reads the end of its script
and exits, having run nothing.
"""

from __future__ import annotations

import contextlib
import os
import re
import shlex
import signal
import subprocess
import threading
from collections.abc import Mapping
from typing import Final

__all__ = ["SpareShells"]

#: Names a shell can export (others, such as ``A.B``, reach a program only through
#: ``exec``'s environment: those events start their shell as always).
_NAME: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


class _Spare:
    __slots__ = ("proc", "script", "script_fd")

    def __init__(self, proc: subprocess.Popen[bytes], script: int, script_fd: int) -> None:
        self.proc = proc
        #: The write end of the script's pipe.
        self.script = script
        #: The read end's number in the shell.
        self.script_fd = script_fd


class SpareShells:
    """Up to ``count`` shells kept ready; thread-safe."""

    def __init__(self, count: int = 2) -> None:
        self._count = count
        self._ready: list[_Spare] = []
        self._lock = threading.Lock()
        self._refilling = False
        self._closed = False

    def take(self, cwd: str, env: Mapping[str, str], umask: int,
             command: str) -> subprocess.Popen[bytes] | None:
        """A started shell running ``command`` in ``cwd`` with ``env`` and ``umask``, its
        stdin, stdout and stderr pipes open; ``None`` when a fresh shell must be started."""
        if (umask < 0 or not os.path.isabs(cwd) or not os.path.isdir(cwd)
                or not all(_NAME.match(name) for name in env)):
            return None
        with self._lock:
            spare = self._ready.pop() if self._ready else None
        if spare is None:
            return None
        lines = [f"cd -- {shlex.quote(cwd)} || exit 126", "unset OLDPWD", f"umask {umask:04o}"]
        if spare.script_fd <= 9:  # dash takes no larger number in a redirection
            lines.insert(0, f"exec {spare.script_fd}<&-")
        lines += [f"export {name}={shlex.quote(value)}" for name, value in env.items()]
        script = ("\n".join(lines) + "\n" + command + "\n").encode("utf-8", "surrogateescape")
        try:
            view = memoryview(script)
            while view:
                view = view[os.write(spare.script, view):]
        except OSError:
            # the shell is gone before its script ended: nothing of the command ran whole;
            # its group goes, and the caller reports the failure (it does not run it again)
            with contextlib.suppress(OSError):
                os.killpg(spare.proc.pid, signal.SIGKILL)
            raise
        finally:
            os.close(spare.script)
        return spare.proc

    def refill(self) -> None:
        """Start the missing spares on a thread of their own: called once an event is
        answered, so that starting them never competes with an event's hook."""
        with self._lock:
            if self._refilling or self._closed or len(self._ready) >= self._count:
                return
            self._refilling = True
        threading.Thread(target=self._fill, name="hookgate-spare-shells", daemon=True).start()

    def _fill(self) -> None:
        spare: _Spare | None = None
        try:
            while True:
                with self._lock:
                    if spare is not None and not self._closed:
                        self._ready.append(spare)
                        spare = None
                    if self._closed or len(self._ready) >= self._count:
                        # decided and cleared under one lock: a refill asked meanwhile
                        # either saw this thread still filling or starts the next one
                        self._refilling = False
                        break
                spare = _start()
                if spare is None:
                    with self._lock:
                        self._refilling = False
                    return
        except BaseException:
            with self._lock:
                self._refilling = False
            raise
        if spare is not None:
            _discard(spare)  # closed while it started

    def close(self) -> None:
        """End the spares (each reads the end of an empty script and exits)."""
        with self._lock:
            self._closed = True
            spares, self._ready = self._ready, []
        for spare in spares:
            _discard(spare)


def _start() -> _Spare | None:
    read, write = os.pipe()
    try:
        proc = subprocess.Popen(
            ["/bin/sh", f"/dev/fd/{read}"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, cwd="/", env={}, process_group=0, pass_fds=(read,),
        )
    except OSError:
        os.close(write)
        return None
    finally:
        os.close(read)
    return _Spare(proc, write, read)


def _discard(spare: _Spare) -> None:
    with contextlib.suppress(OSError):
        os.close(spare.script)  # an empty script: the shell exits, having run nothing
    for pipe in (spare.proc.stdin, spare.proc.stdout, spare.proc.stderr):
        if pipe is not None:
            with contextlib.suppress(OSError):
                pipe.close()
    with contextlib.suppress(Exception):
        spare.proc.wait(5)
