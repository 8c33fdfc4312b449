"""Child-process plumbing shared by the ``command`` and ``process`` handlers.

Every hook program runs in its own process group (``process_group=0``), so one
``killpg`` reaches the shell, the script and anything they started in the background.
(A new group, not a new session: ``setsid`` keeps CPython from using ``vfork`` and costs
about 0.4 ms per spawn.)
Output is read in chunks with a byte cap, so a hook printing 10 MB costs at most the cap
in memory and never blocks on a full pipe.

:func:`run_shell` runs on the event loop; :func:`run_shell_blocking` is the same run without
one, for a process that answers one event and exits (``hookgate claude-code``, where
importing asyncio would cost more than the hook). asyncio is imported only by the first.
"""

from __future__ import annotations

import contextlib
import functools
import os
import signal
import time
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any, Final

from hookgate.errors import HookgateError
from hookgate.outcome import HookError
from hookgate.sandbox import NO_SANDBOX, Sandbox

if TYPE_CHECKING:
    import asyncio
    import subprocess

    from hookgate.handlers.subprocess.spare_shell import SpareShells

__all__ = [
    "BASE_ENV_KEYS",
    "CHUNK",
    "ShellTimeout",
    "base_environment",
    "kill_group",
    "read_capped",
    "run_shell",
    "run_shell_blocking",
    "shorten",
    "spawn",
]

#: Variables every hook program gets from hookgate's own environment (when set there):
#: enough to find programs and decode text, nothing that is usually a secret.
BASE_ENV_KEYS: Final = ("PATH", "HOME", "LANG")
_DEFAULT_PATH: Final = "/usr/local/bin:/usr/bin:/bin"
CHUNK: Final = 64 * 1024


def base_environment(
    allowed: Iterable[str] = (),
    extra: Mapping[str, str] | None = None,
    environ: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """The environment of a hook program: the base keys, the allowed keys, then ``extra``.

    ``allowed`` is an allowlist of exact names: a name missing from the parent environment
    is simply absent, and nothing else of the parent's environment passes.
    """
    parent = os.environ if environ is None else environ
    env = {key: parent[key] for key in BASE_ENV_KEYS if key in parent}
    env.setdefault("PATH", _DEFAULT_PATH)
    for key in allowed:
        if key in parent:
            env[key] = parent[key]
    if extra:
        env.update(extra)
    return env


@functools.cache
def _exit_aware_protocol() -> type[Any]:
    """The subprocess protocol, defined on first use: its base class is asyncio's, and a
    caller without an event loop (:func:`run_shell_blocking`) does not import asyncio."""
    import asyncio

    class ExitAwareProtocol(asyncio.subprocess.SubprocessStreamProtocol):
        """Reports the exit itself: ``Process.wait()`` also waits for every pipe to close,
        which a backgrounded grandchild holding stdout can delay for ever."""

        def __init__(
            self,
            limit: int,
            loop: asyncio.AbstractEventLoop,
            on_stdout: Callable[[bytes], None] | None = None,
        ) -> None:
            super().__init__(limit=limit, loop=loop)
            self.exited: asyncio.Future[int] = loop.create_future()
            self.on_stdout = on_stdout

        def pipe_data_received(self, fd: int, data: bytes | str) -> None:
            if fd == 1 and self.on_stdout is not None and isinstance(data, bytes):
                self.on_stdout(data)  # handled as it arrives: no reader task in between
            else:
                super().pipe_data_received(fd, data)

        def pipe_connection_lost(self, fd: int, exc: Exception | None) -> None:
            if fd == 1 and self.on_stdout is not None:
                self.on_stdout(b"")
            super().pipe_connection_lost(fd, exc)

        def process_exited(self) -> None:
            transport = getattr(self, "_transport", None)
            code = transport.get_returncode() if transport is not None else None
            super().process_exited()
            if not self.exited.done():
                self.exited.set_result(-1 if code is None else code)

    return ExitAwareProtocol


async def spawn(
    program: str,
    *args: str,
    on_stdout: Callable[[bytes], None] | None = None,
    **kwargs: object,
) -> tuple[asyncio.subprocess.Process, asyncio.Future[int]]:
    """Start a child with piped stdin/stdout/stderr; (process, future of its exit status).

    With ``on_stdout``, stdout data goes to that function as it arrives (``b""`` at EOF)
    instead of ``process.stdout``.
    """
    import asyncio

    loop = asyncio.get_running_loop()
    transport, protocol = await loop.subprocess_exec(
        lambda: _exit_aware_protocol()(CHUNK, loop, on_stdout),
        program,
        *args,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        **kwargs,  # type: ignore[arg-type]
    )
    return asyncio.subprocess.Process(transport, protocol, loop), protocol.exited


def kill_group(pid: int | None) -> None:
    """SIGKILL the process group led by ``pid``; a group that is already gone is fine."""
    if pid is None:
        return
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


async def read_capped(
    stream: asyncio.StreamReader | None,
    cap: int,
    *,
    on_overflow: Callable[[], None] | None = None,
) -> tuple[bytes, int]:
    """Read ``stream`` to EOF keeping at most ``cap`` bytes; return (kept, total bytes seen).

    Past the cap the rest is read and discarded (so the writer never blocks), unless
    ``on_overflow`` is given: it is called once, typically to kill the writer.
    """
    if stream is None:
        return b"", 0
    kept = bytearray()
    total = 0
    overflowed = False
    while True:
        chunk = await stream.read(CHUNK)
        if not chunk:
            return bytes(kept), total
        total += len(chunk)
        room = cap - len(kept)
        if room > 0:
            kept += chunk[:room]
        if total > cap and not overflowed:
            overflowed = True
            if on_overflow is not None:
                on_overflow()


def shorten(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters, marked when cut."""
    if len(text) <= limit:
        return text
    return text[:limit] + f"…[{len(text) - limit} more characters]"


async def run_shell(
    command: str,
    stdin: bytes,
    cwd: str | None,
    env: Mapping[str, str],
    *,
    stdout_cap: int,
    stderr_cap: int,
    sandbox: Sandbox = NO_SANDBOX,
) -> tuple[int, bytes, bytes, int]:
    """Run ``sh -c command`` in a new process group; (exit code, stdout, stderr, stdout size).

    Past ``stdout_cap`` bytes the group is killed (a runaway hook); ``stdout_cap=0`` keeps
    nothing and kills nothing (stdout only drained). Whatever happens (exit, overflow,
    timeout, cancel) the group is killed before this returns or raises, and the shell is
    reaped. Under ``sandbox`` the shell runs inside it (see
    :mod:`hookgate.sandbox`).
    """
    import asyncio

    try:
        argv = sandbox.wrap(("/bin/sh", "-c", command), cwd)
        proc, exited = await spawn(*argv, cwd=cwd, env=dict(env), process_group=0)
    except OSError as exc:
        where = f" in {cwd!r}" if cwd else ""
        raise HookError(f"cannot start the command{where}: {exc}") from None
    pid = proc.pid
    out_task = asyncio.ensure_future(
        read_capped(
            proc.stdout, stdout_cap, on_overflow=(lambda: kill_group(pid)) if stdout_cap else None
        )
    )
    err_task = asyncio.ensure_future(read_capped(proc.stderr, stderr_cap))
    feed_task = asyncio.ensure_future(_feed(proc.stdin, stdin))
    try:
        code = await exited
        # The shell is done; whatever it left in the background goes too (and our pipes
        # reach EOF even when a grandchild still held them).
        kill_group(pid)
        stdout, stdout_len = await out_task
        stderr, _ = await err_task
        await feed_task
        await proc.wait()
    except BaseException:
        kill_group(pid)
        for task in (out_task, err_task, feed_task):
            task.cancel()
        # If cancelled again meanwhile, the child watcher still reaps it.
        with contextlib.suppress(BaseException):
            await asyncio.shield(proc.wait())
        raise
    return code, stdout, stderr, stdout_len


async def _feed(pipe: asyncio.StreamWriter | None, data: bytes) -> None:
    if pipe is None:
        return
    try:
        pipe.write(data)
        await pipe.drain()
        pipe.close()
    except (BrokenPipeError, ConnectionResetError):
        pass  # the command did not read its stdin, which it may


class ShellTimeout(HookgateError, TimeoutError):
    """:func:`run_shell_blocking`: the command ran out of time (its group was killed)."""


def _start_shell(
    command: str,
    cwd: str | None,
    env: Mapping[str, str],
    sandbox: Sandbox,
    umask: int,
    spares: SpareShells | None,
) -> subprocess.Popen[bytes]:
    """``/bin/sh -c command`` with its three pipes, in a group of its own: a spare shell
    when one can run it exactly, else a fresh one."""
    import subprocess

    try:
        if spares is not None and not sandbox.active and cwd is not None:
            spare = spares.take(cwd, env, umask, command)
            if spare is not None:
                return spare
        argv = sandbox.wrap(("/bin/sh", "-c", command), cwd)
        return subprocess.Popen(
            argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            cwd=cwd, env=dict(env), process_group=0, umask=umask,
        )
    except OSError as exc:
        where = f" in {cwd!r}" if cwd else ""
        raise HookError(f"cannot start the command{where}: {exc}") from None


def run_shell_blocking(
    command: str,
    stdin: bytes,
    cwd: str | None,
    env: Mapping[str, str],
    *,
    stdout_cap: int,
    stderr_cap: int,
    timeout_s: float,
    sandbox: Sandbox = NO_SANDBOX,
    umask: int = -1,
    spares: SpareShells | None = None,
) -> tuple[int, bytes, bytes, int]:
    """:func:`run_shell` without an event loop, with its own timeout: the same process group,
    caps and kills; raise :class:`ShellTimeout` when ``timeout_s`` passes (the group is
    killed and the shell reaped first). ``umask``: the command's (default: this process's).
    ``spares``: shells started ahead (:mod:`.spare_shell`), one of which runs the command
    when it can exactly (never under a sandbox).

    The shell's exit is watched through a pidfd, so a background grandchild that keeps the
    pipes open does not hold the answer: the group is killed as soon as the shell is gone.
    """
    import select
    import subprocess

    deadline = time.monotonic() + timeout_s
    proc = _start_shell(command, cwd, env, sandbox, umask, spares)
    pid = proc.pid
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
    out_fd, err_fd, in_fd = proc.stdout.fileno(), proc.stderr.fileno(), proc.stdin.fileno()
    kept = {out_fd: bytearray(), err_fd: bytearray()}
    caps = {out_fd: stdout_cap, err_fd: stderr_cap}
    seen = {out_fd: 0, err_fd: 0}
    poller = select.poll()
    poller.register(out_fd, select.POLLIN)
    poller.register(err_fd, select.POLLIN)
    open_fds = {out_fd, err_fd}
    pending = memoryview(stdin)
    if pending:
        os.set_blocking(in_fd, False)
        poller.register(in_fd, select.POLLOUT)
    else:
        proc.stdin.close()
    exit_fd: int | None = None
    try:
        exit_fd = os.pidfd_open(pid)
        poller.register(exit_fd, select.POLLIN)
    except (AttributeError, OSError):  # no pidfd: the loop looks every 50 ms instead
        exit_fd = None
    try:
        while open_fds:
            left = deadline - time.monotonic()
            if left <= 0:
                raise ShellTimeout(f"command did not finish within {timeout_s:g} s")
            wait_ms = left * 1000 if exit_fd is not None else min(left * 1000, 50)
            for fd, _ in poller.poll(max(1, int(wait_ms + 1))):
                if fd == exit_fd:
                    # The shell is done: what it left in the background goes too, so our
                    # pipes reach EOF even when a grandchild still held them.
                    kill_group(pid)
                    poller.unregister(fd)
                elif fd == in_fd:
                    try:
                        written = os.write(in_fd, pending[:CHUNK])
                    except BlockingIOError:
                        continue
                    except (BrokenPipeError, ConnectionResetError):
                        written = len(pending)  # the command did not read its stdin, which it may
                    pending = pending[written:]
                    if not pending:
                        poller.unregister(in_fd)
                        proc.stdin.close()
                else:
                    chunk = os.read(fd, CHUNK)
                    if not chunk:
                        poller.unregister(fd)
                        open_fds.discard(fd)
                        continue
                    seen[fd] += len(chunk)
                    room = caps[fd] - len(kept[fd])
                    if room > 0:
                        kept[fd] += chunk[:room]
                    if fd == out_fd and stdout_cap and seen[fd] > stdout_cap:
                        kill_group(pid)  # a runaway hook
            if exit_fd is None and proc.poll() is not None:
                kill_group(pid)
        code = proc.wait(max(0.001, deadline - time.monotonic()))
    except subprocess.TimeoutExpired:
        raise ShellTimeout(f"command did not finish within {timeout_s:g} s") from None
    finally:
        kill_group(pid)
        for pipe in (proc.stdin, proc.stdout, proc.stderr):
            with contextlib.suppress(OSError):
                pipe.close()
        if exit_fd is not None:
            os.close(exit_fd)
        with contextlib.suppress(Exception):
            proc.wait(5)  # killed above: reaped at once
    return code, bytes(kept[out_fd]), bytes(kept[err_fd]), seen[out_fd]
