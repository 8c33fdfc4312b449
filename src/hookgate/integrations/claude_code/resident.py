"""The warm process's resident worker: ``relay.bash`` events answered in place, no fork each.

The warm process (:mod:`.warm`) forks it once, after importing hookgate, and keeps one
running. It alone accepts on the shell relay's loopback port and on the compiled relay's
Unix socket (each with threads waiting on it), and answers each connection
on a thread of its own (agents run hooks in parallel), by the same code a forked worker
runs (:mod:`.shell_serve`, :func:`.main.run`, the agent bridge), with the relay's process
(environment, working directory, umask read from ``/proc/<pid>``) held by the thread
(:mod:`.in_place`) and given explicitly to the command hooks' subprocesses: nothing of an
event changes the process (no ``chdir``, no ``os.environ`` replaced, no ``sys.path`` entry).

Which events it answers itself is :mod:`.in_place`'s rule: a hooks file in the definition
cache with no ``callable`` hook, every hook of the event a command without ``state``. Every
other event (a ``callable`` hook, a file just written or edited and so not cached yet,
hooks that need the engine, ``--gateway``, anything unusual about the relay's process) is
handed, before anything of it ran, to one of the warm process's forked workers over its
Unix socket (the connection itself travels, ``SCM_RIGHTS``), which answers it as every event
was answered before: its own fork, ``chdir``, environment, fresh imports of hook modules; or,
for a hooks file with ``callable`` hooks, to the worker kept for that file and project
(:mod:`.file_worker`) when it is there and free.
The hand-over is committed like the Python relay's (``S``, then ``G``): a worker that did
not take it runs nothing, and the relay is told ``R`` (nothing ran) and hands the event on.

Each event keeps its own timeouts (its hooks' and the chain's budget); a hook that hangs
holds its own thread only. A few threads wait in ``accept()`` and each answers the
connection it takes (no thread starts per event); while all are busy one more starts, up to
``MAX_IN_PLACE``.
"""

from __future__ import annotations

import array
import contextlib
import io
import json
import os
import signal
import socket
import sys
import threading
import time
from typing import TYPE_CHECKING, Final, NoReturn, Protocol

from hookgate.integrations.claude_code import file_worker, in_place, shell_relay, shell_serve
from hookgate.integrations.claude_code import warm_wire as wire
from hookgate.integrations.claude_code.in_place import EventProcess
from hookgate.integrations.claude_code.startup import BridgeArgs, parse_args
from hookgate.integrations.claude_code.warm_place import peer_uid, process_key

if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = ["MAX_IN_PLACE", "Warm", "hand_off_header", "serve_resident"]

#: Events answered in place at once; more wait for one of them to end (the relay hands an
#: event on to the Python relay, nothing run, when the warm process does not greet it
#: within 3 s).
MAX_IN_PLACE: Final = 32
#: Threads kept waiting in ``accept()``.
_WAITING: Final = 3
#: How long a forked worker may take to take a handed-over event.
_HAND_OFF_TIMEOUT_S: Final = 5.0
_TICK_S: Final = 2.0
#: A note to the warm process: an event came (its idle clock starts again).
NOTE_ACTIVE: Final = b"A"
#: At most one such note a second (or a quarter of the idle time, when that is shorter):
#: each wakes the warm process, whose idle clock counts in minutes.
_NOTE_EVERY_S: Final = 1.0


class Warm(Protocol):
    """What the resident needs of the warm process (:class:`.warm._Server`)."""

    path: str
    #: The warm process's pid (the resident ends once it is no longer its parent).
    pid: int
    key: str
    #: Seconds without an event after which the warm process ends.
    idle_s: float
    #: A hooks file of this process's own (one command hook that does nothing), cached.
    sample_file: str | None
    def watch_code(self) -> None: ...

    def stale(self) -> bool: ...

    def unlink_socket(self) -> None: ...


class _Resident:
    def __init__(
        self,
        warm: Warm,
        listeners: list[socket.socket],
        endpoint: shell_relay.Endpoint,
        note: Callable[[bytes], None],
        end: Callable[[], None],
    ) -> None:
        self.warm = warm
        self.listeners = listeners
        self.endpoint = endpoint
        self.note = note
        self.end = end
        self.ending = False
        self.lock = threading.Lock()
        #: Threads alive, and those waiting in ``accept()`` on each listener (by its fd).
        self.threads = 0
        self.idle = {listener.fileno(): 0 for listener in listeners}
        #: The keys of the per-file workers an event was just given to (one at a time).
        self.busy_files: set[str] = set()
        self.noted = 0.0
        self.note_every_s = min(_NOTE_EVERY_S, warm.idle_s / 4)
        #: Each TCP listener's address: its connections' own end (not asked each time).
        self.local_address: dict[int, tuple[str, int]] = {
            listener.fileno(): listener.getsockname()
            for listener in listeners
            if listener.family == socket.AF_INET
        }
        # hookgate's code checked through an inotify watch (one read per event, not a stat
        # of each module); once it changed, every event after is refused
        warm.watch_code()

    def loop(self, parent: int) -> None:
        """Start the waiting threads, then watch for the end (SIGTERM, or the warm process
        gone); ``accept()`` is woken for it by shutting the listener down."""
        for listener in self.listeners:
            listener.settimeout(None)  # a blocking accept(): the kernel wakes one waiter
            for _ in range(_WAITING):
                self.start_thread(listener)
        while not self.ending and os.getppid() == parent:
            time.sleep(_TICK_S)
        self.ending = True
        for listener in self.listeners:
            with contextlib.suppress(OSError):
                listener.shutdown(socket.SHUT_RDWR)

    def start_thread(self, listener: socket.socket) -> None:
        with self.lock:
            self.threads += 1
        try:
            threading.Thread(
                target=self.wait_and_answer, args=(listener,), name="hookgate-event"
            ).start()
        except RuntimeError:  # no more threads: the others still answer
            with self.lock:
                self.threads -= 1

    def wait_and_answer(self, listener: socket.socket) -> None:
        """Take a connection on ``listener`` and answer it in this thread (no thread is
        started per event); while every thread waiting on it is busy, one more starts (up
        to ``MAX_IN_PLACE`` in all), and a thread beyond ``_WAITING`` idle ones ends."""
        fd = listener.fileno()
        local = self.local_address.get(fd)
        try:
            while not self.ending:
                with self.lock:
                    self.idle[fd] += 1
                try:
                    conn: socket.socket | None
                    conn, peer = listener.accept()
                except OSError:
                    conn = None
                with self.lock:
                    self.idle[fd] -= 1
                    grow = (conn is not None and not self.idle[fd]
                            and self.threads < MAX_IN_PLACE)
                if conn is None:
                    if not self.ending:
                        time.sleep(0.05)  # (a failed accept, such as too many open files)
                    continue
                if grow:
                    self.start_thread(listener)
                now = time.monotonic()
                if now - self.noted >= self.note_every_s:
                    self.noted = now
                    self.note(NOTE_ACTIVE)
                self.answer(conn, local, peer if local else None)
                with self.lock:
                    if self.idle[fd] >= _WAITING:
                        return
        finally:
            with self.lock:
                self.threads -= 1

    def answer(
        self,
        conn: socket.socket,
        local: tuple[str, int] | None,
        peer: tuple[str, int] | None,
    ) -> None:
        """One relay's event, in place or handed to a forked worker; never raises.
        ``local``, ``peer``: a TCP connection's two ends (``None`` on the Unix socket)."""
        with conn:
            try:
                found = shell_serve.read_request(conn, self.endpoint, local, peer)
            except Exception:
                return
            if found is None:
                return
            request, data = found
            self.in_place(conn, request, data)

    def in_place(self, conn: socket.socket, request: shell_relay.ShellRequest, data: bytes) -> None:
        try:
            if self.warm.stale():
                # hookgate's code changed: the warm process ends, and the next event finds
                # a new one (this one: nothing ran, the relay hands it on)
                self.warm.unlink_socket()
                self.end()
                conn.sendall(shell_serve.REFUSED)
                return
            found = _event_process(self.warm.key, request)
        except Exception:
            found = None
        if found is None:
            self.hand_off(conn, data)
            return
        args, event = found
        out, err = io.StringIO(), io.StringIO()
        try:
            with in_place.running(event):
                code = shell_serve.run_event(
                    request.agent, args, request.stdin, out, err, event.environ
                )
        except in_place.NeedsFork:
            self.to_fork(conn, data, request.agent, args, event)
            return
        except BaseException as exc:  # run_event answers every failure itself; this is a bug
            code = 2
            err.write(f"hookgate: internal error in the warm process: {exc!r}\n")
        with contextlib.suppress(OSError):
            conn.sendall(shell_serve.answer_bytes(code, out, err))
        in_place.refill_spare_shells()

    def to_fork(
        self,
        conn: socket.socket,
        data: bytes,
        agent: str,
        args: BridgeArgs,
        event: EventProcess,
    ) -> None:
        """An event that cannot run in place: to the worker kept for its hooks file and
        project (:mod:`.file_worker`) when there is one and it is free, else to a fresh
        fork."""
        try:
            key = file_worker.file_key(agent, args, event.environ, event.cwd)
        except Exception:
            key = None
        if key is not None:
            with self.lock:
                free = key not in self.busy_files
                self.busy_files.add(key)
            if free:
                try:
                    path = file_worker.socket_path(self.warm.path, key)
                    if self.give(path, conn, data, until_done=True):
                        return
                finally:
                    with self.lock:
                        self.busy_files.discard(key)
        self.hand_off(conn, data)

    def hand_off(self, conn: socket.socket, data: bytes) -> None:
        """Give the event to a forked worker (nothing of it ran here); ``R`` to the relay
        when none takes it."""
        if not self.give(self.warm.path, conn, data):
            with contextlib.suppress(OSError):
                conn.sendall(shell_serve.REFUSED)

    def give(
        self, path: str, conn: socket.socket, data: bytes, *, until_done: bool = False
    ) -> bool:
        """Hand the event to the worker listening at ``path``: ``False`` when it did not
        take it (nothing ran, the relay told nothing); ``True`` once it was taken (or the
        commit failed after it was, and the relay was told ``R``: the worker runs nothing
        without it). ``until_done``: back once the worker answered the event (a file's
        worker takes one event at a time: another meanwhile goes to a fresh fork)."""
        try:
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as unix:
                unix.settimeout(_HAND_OFF_TIMEOUT_S)
                unix.connect(path)
                if peer_uid(unix) != os.getuid():
                    return False  # not our worker
                fds = array.array("i", [conn.fileno()])
                unix.sendmsg(
                    [hand_off_header(len(data))],
                    [(socket.SOL_SOCKET, socket.SCM_RIGHTS, fds.tobytes())],
                )
                unix.sendall(data)
                if unix.recv(1) != wire.STARTED:
                    return False
                try:
                    unix.sendall(wire.COMMIT)
                except OSError:
                    with contextlib.suppress(OSError):
                        conn.sendall(shell_serve.REFUSED)
                    return True
                if until_done:
                    unix.settimeout(None)  # the event's own timeouts hold
                    with contextlib.suppress(OSError):
                        unix.recv(1)  # its end: DONE, or the worker gone
        except Exception:
            return False
        return True


def hand_off_header(length: int) -> bytes:
    return wire.MAGIC + wire.HAND_OFF + length.to_bytes(4, "big")


def _event_process(
    key: str, request: shell_relay.ShellRequest
) -> tuple[BridgeArgs, in_place.EventProcess] | None:
    """The event's options and the relay's process, when the event may be answered in
    place; ``None`` (a forked worker answers it, as always) otherwise."""
    if request.agent not in shell_relay.AGENTS:
        return None
    args = parse_args(request.options)
    if args is None or args.gateway:
        return None
    proc = f"/proc/{request.pid}"
    found = shell_serve.process_of(proc)
    if found is None:
        return None
    environ, umask = found
    if process_key(environ) != key or environ.get("HOOKGATE_GATEWAY_URL"):
        return None
    cwd = os.readlink(f"{proc}/cwd")
    if not os.path.isabs(cwd) or cwd.endswith(" (deleted)"):
        return None
    # Paths the event names relative to the relay's working directory are made whole here:
    # this process's own is "/".
    agent = request.agent.upper().replace("-", "_")
    config = args.config or environ.get(f"HOOKGATE_{agent}_CONFIG")
    if config:
        config = os.path.join(cwd, config)
    elif request.agent != "claude-code":
        return None  # no policy: the fork reports it
    elif not all(
        os.path.isabs(environ.get(name) or "/")
        for name in ("CLAUDE_PROJECT_DIR", "CLAUDE_CONFIG_DIR", "HOME")
    ):
        return None
    try:
        data = json.loads(request.stdin)
    except ValueError:
        return None
    if not isinstance(data, dict) or not os.path.isabs(str(data.get("cwd") or "")):
        return None  # the hooks would see this process's working directory
    return BridgeArgs(config=config), in_place.EventProcess(environ, cwd, umask)


def serve_resident(
    warm: Warm,
    listeners: list[socket.socket],
    endpoint: shell_relay.Endpoint,
    note: Callable[[bytes], None],
    end: Callable[[], None],
) -> NoReturn:
    """The resident's life, in the process the warm process forked for it: answer events
    until told to stop (SIGTERM) or the warm process is gone, then wait for the events under
    way and exit."""
    import tempfile

    code = 0
    try:
        parent = warm.pid
        tempfile.gettempdir()  # fixed now, from this process's environment, not an event's
        in_place.install_environ()
        in_place.keep_spare_shells()
        resident = _Resident(warm, listeners, endpoint, note, end)
        _warm_up(resident)

        def stop(signum: int, frame: object) -> None:
            resident.ending = True  # the watching loop sees it within a tick

        signal.signal(signal.SIGTERM, stop)
        resident.loop(parent)
        deadline = time.monotonic() + 600  # the hooks' own timeouts end them well before
        for thread in threading.enumerate():
            if thread is not threading.current_thread():
                thread.join(max(0.0, deadline - time.monotonic()))
    except BaseException:
        code = 1
    finally:
        with contextlib.suppress(BaseException):
            sys.stderr.flush()
        os._exit(code)


def _warm_up(resident: _Resident) -> None:
    """Run a made-up event on the warm process's sample hooks file through the in-place
    path once, for each agent, so that lazy imports and first-call costs are paid before a
    relay waits for them."""
    sample_file = resident.warm.sample_file
    if sample_file is None:
        return
    umask = os.umask(0o022)
    os.umask(umask)
    event = in_place.EventProcess(dict(os.environ), "/", umask)
    for agent, name, tool in (
        ("claude-code", "PreToolUse", "Bash"),
        ("codex", "PreToolUse", "Bash"),
        ("gemini", "BeforeTool", "run_shell_command"),
    ):
        sample = json.dumps(
            {
                "session_id": "warm-up",
                "cwd": "/",
                "hook_event_name": name,
                "tool_name": tool,
                "tool_input": {"command": "true"},
            }
        )
        with contextlib.suppress(BaseException), in_place.running(event):
            shell_serve.run_event(
                agent,
                BridgeArgs(config=sample_file),
                sample.encode(),
                io.StringIO(),
                io.StringIO(),
                event.environ,
            )
