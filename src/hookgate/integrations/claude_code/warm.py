"""The warm ``hookgate claude-code`` process: hookgate's core imported once; events answered
in place by its resident, or one per fork.

:mod:`.relay` starts it (detached, stdio on /dev/null, holding the lock file that keeps a
second one from starting) the first time an event finds none, and hands it every event.
It imports what answering an event needs (:mod:`.main`'s path: the definition cache, the
blocking driver, the chain, the command and callable handlers, and the hooks-file
validation), then listens on its Unix socket (the Python relay, :mod:`.relay`) and on a
loopback port (the shell relay, ``relay.bash``, which every ``install`` writes).

**In place, without a fork** (:mod:`.resident`): one long-lived forked worker, the resident,
takes every ``relay.bash`` event and answers it on a thread of its own when the hooks file
holds no host code of the user's: a hooks file in the definition cache (keyed on its exact
bytes) without ``callable`` hooks, every hook of the event a command without ``state``
(:mod:`.in_place`). The relay's environment, working directory and umask are the event's,
given to its command hooks explicitly; nothing of the process changes per event.

**In a fork** (the worker), every other event: a hooks file with ``callable`` hooks (their
modules are imported by the worker, never into a process that serves other projects; the
worker that answered such a file's event stays for that file and project's later events,
:mod:`.file_worker`), one not cached yet (new or just edited: its validation imports
``callable`` targets), hooks that need the engine, ``--gateway``, and every event of the
Python relay. The resident hands such an event over before anything of it ran. The worker
takes the relay's stdout and stderr, working directory, umask and environment
(``os.environ`` is replaced by the relay's, so command hooks and ``callable`` functions see
what they see without the warm process), and runs :func:`.main.run` exactly as a process of
its own would, then reports the exit code. So:

* hook modules are imported by the worker, never by the warm process: an edited module
  takes effect on the next event, and no two projects (or hooks files) share a
  ``sys.modules`` (the events of one file and project answered by its kept worker do);
* the hooks file is read by the worker as always (the definition cache keys on its bytes);
* events run concurrently, each with its own timeouts.

The warm process refuses events (the relay then runs them itself) once one of hookgate's
own module files changed since it started, and exits: an upgrade or an edit of hookgate never
answers with old code. It exits after ``HOOKGATE_CLAUDE_CODE_WARM_IDLE`` seconds without an
event (default 3600), when its socket file is gone or replaced, and on SIGTERM.
"""

from __future__ import annotations

import contextlib
import gc
import io
import json
import os
import signal
import socket
import sys
import threading
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Final

from hookgate.integrations.claude_code import file_worker, resident, shell_relay, shell_serve
from hookgate.integrations.claude_code import warm_wire as wire
from hookgate.integrations.claude_code.code_watch import CodeWatch
from hookgate.integrations.claude_code.startup import BridgeArgs, parse_args
from hookgate.integrations.claude_code.warm_place import failed_marker, peer_uid, process_key

if TYPE_CHECKING:
    from collections.abc import Callable

    from hookgate.definition import HookDefinition

__all__ = ["DEFAULT_IDLE_S", "idle_seconds", "serve"]

#: An hour: a new session within it finds the warm process (and its first event costs what
#: any event does); idle, it holds about 50 MB (PSS, with its three waiting workers).
DEFAULT_IDLE_S: Final = 3600.0
#: How often the idle warm process wakes to reap workers and check its socket file.
_TICK_S: Final = 2.0
#: How long a relay may take to send its request.
_REQUEST_TIMEOUT_S: Final = 5.0
#: What every event needs, imported once here instead of in every event's process.
_PRELOAD: Final = (
    "hookgate.integrations.claude_code.main",
    "hookgate.integrations.claude_code.local_run",
    "hookgate.integrations.claude_code.definition_cache",
    "hookgate.integrations.claude_code.contract",
    "hookgate.settings",
    "hookgate.handlers.callable",
    "hookgate.handlers.command",
    "hookgate.handlers.subprocess.runner",
    "hookgate.sandbox",
    # the validation of a new or edited hooks file
    "hookgate.config",
    "hookgate.config.formats",
    "hookgate.definition_model",
    "yaml",
    "subprocess",
    "select",
    "threading",
    "io",
    # Codex and Gemini through a gateway (the shell relay's --gateway): the agent bridge
    # asks it with hookgate's async client
    "hookgate.integrations.agent_bridge",
    "hookgate.client",
    "asyncio",
)


def idle_seconds(environ: Mapping[str, str]) -> float:
    try:
        value = float(environ.get("HOOKGATE_CLAUDE_CODE_WARM_IDLE", DEFAULT_IDLE_S))
    except ValueError:
        return DEFAULT_IDLE_S
    return value if value > 0 else DEFAULT_IDLE_S


def _preload() -> None:
    import importlib

    for name in _PRELOAD:
        importlib.import_module(name)


#: A made-up event for :func:`_pretouch`.
_SAMPLE: Final = json.dumps({
    "session_id": "warm-up", "cwd": "/", "hook_event_name": "PreToolUse", "tool_name": "Bash",
    "tool_input": {"command": "true"}, "tool_use_id": "warm-up"})


def _sample_hook() -> HookDefinition | None:
    from hookgate.definition_model import validate_definition

    try:
        return validate_definition({
            "name": "warm-up", "event": "pre_tool_use", "handler_type": "command",
            "matcher": "^Bash$", "config": {"command": "true"}}, default_scope="global")
    except Exception:
        return None


def _pretouch(sample: HookDefinition | None) -> None:
    """What an event runs, run on a made-up event (no hook runs, no file, no output) by a
    worker while it waits: the memory it touches is copied (fork's copy-on-write) before an
    event is there to wait for it. It halves the worker's time on an event that runs a hook."""
    from hookgate.handlers.command import command_input
    from hookgate.integrations.claude_code import contract
    from hookgate.outcome import Outcome
    from hookgate.registry import HookRegistry
    from hookgate.settings import Settings

    with contextlib.suppress(Exception):  # only ever an optimization
        data, name, _ = contract.parse_claude_code_input(_SAMPLE)
        assert data is not None and name is not None
        spec, payload = contract.hookgate_input(data)
        for hook in HookRegistry([sample] if sample else []).resolve(spec.name, None, None):
            command_input(hook.definition, spec, payload)
        contract.claude_answer(name, Outcome(decision="block", reason="warm-up")).stdout_text()
        Settings.from_env({})


def _sample_file(socket_path: str) -> str | None:
    """A hooks file with one command hook that does nothing, for :func:`_pretouch_shell`."""
    path = socket_path.removesuffix(".sock") + ".warm-up.json"
    sample = {"hooks": [{"name": "warm-up", "event": "pre_tool_use", "matcher": "^Bash$",
                         "handler_type": "command", "config": {"command": ":"}}]}
    try:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        with os.fdopen(fd, "w") as file:
            json.dump(sample, file)
    except OSError:
        return None
    return path


def _code_stamps() -> dict[str, tuple[int, int] | None]:
    """hookgate's loaded module files and their time stamps and sizes."""
    stamps: dict[str, tuple[int, int] | None] = {}
    for name, module in list(sys.modules.items()):
        path = getattr(module, "__file__", None)
        if (name == "hookgate" or name.startswith("hookgate.")) and path:
            stamps[path] = _stamp(path)
    return stamps


def _stamp(path: str) -> tuple[int, int] | None:
    try:
        info = os.stat(path)
    except OSError:
        return None
    return (info.st_mtime_ns, info.st_size)


class _Server:
    """The warm process: keeps ``_SPARES`` forked workers waiting in ``accept()`` (so an
    event never waits for a fork) and replaces each one that takes a connection."""

    def __init__(self, path: str, lock_fd: int, environ: Mapping[str, str]) -> None:
        self.path = path
        #: This process: its workers end once their parent is no longer it (read before
        #: the fork: a worker that asked after its parent died would wait for ever).
        self.pid = os.getpid()
        self.lock_fd = lock_fd
        self.key = process_key(environ)
        self.idle_s = idle_seconds(environ)
        self.started = time.time()
        self.spares: set[int] = set()
        self.children: set[int] = set()
        _preload()
        self.sample = _sample_hook()
        self.stamps = _code_stamps()
        #: A long-lived worker's inotify watch on that code (see :meth:`watch_code`).
        self.code_watch: CodeWatch | None = None
        self.code_watch_pid = 0
        self.code_lock = threading.Lock()
        self.code_changed = False
        if os.path.lexists(path):
            os.unlink(path)  # we hold the lock: whatever is there is a dead process's
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        old = os.umask(0o177)
        try:
            self.listener.bind(path)
        finally:
            os.umask(old)
        self.inode = os.stat(path).st_ino
        self.listener.listen(128)
        self.shell = _ShellListener.open(os.path.dirname(path))
        self.sample_file = _sample_file(path) if self.shell else None
        if self.sample_file is not None:
            _cache_sample(self.sample_file)
        self.notes_in, self.notes_out = os.pipe()
        #: The resident worker (``relay.bash`` events answered in place), its pid and the
        #: read end of a pipe only it holds open (it reads as ended once the resident is).
        self.resident_wanted = self.shell is not None and not _resident_off(environ)
        self.resident: int | None = None
        self.resident_life: int | None = None
        self.resident_started = 0.0

    def loop(self) -> None:
        import select

        last = refill_at = time.monotonic()
        while True:
            self._reap()
            if self.resident_wanted and self.resident is None:
                self._fork_resident()
            # A new worker's fork and warm-up would take the CPU from the event that is being
            # answered: while one worker still waits, it comes a little later.
            if not self.spares or time.monotonic() >= refill_at:
                while len(self.spares) < _SPARES:
                    self._fork_spare()
            now = time.monotonic()
            left = self.idle_s - (now - last)
            if left <= 0 or not self._socket_is_ours():
                return
            wake = min(left, _TICK_S)
            if len(self.spares) < _SPARES:
                wake = min(wake, max(refill_at - now, 0.0))
            waits = [self.notes_in] + ([self.resident_life] if self.resident_life else [])
            ready, _, _ = select.select(waits, [], [], wake)
            if (self.resident_life is not None and self.resident_life in ready
                    and not self._resident_ended()):
                return
            if self.notes_in not in ready:
                continue
            notes = os.read(self.notes_in, 4096)
            for start in range(0, len(notes) - len(notes) % 5, 5):
                kind, pid = notes[start:start + 1], int.from_bytes(
                    notes[start + 1:start + 5], "big")
                last = time.monotonic()
                if kind == resident.NOTE_ACTIVE:
                    continue
                self.spares.discard(pid)
                refill_at = last + _REFILL_DELAY_S
                if kind == _NOTE_END:
                    return

    def _fork_resident(self) -> None:
        assert self.shell is not None
        life_read, life_write = os.pipe()
        gc.freeze()
        pid = os.fork()
        if pid == 0:
            _resident(self, life_read)
        os.close(life_write)  # the resident holds the only write end
        self.resident, self.resident_life = pid, life_read
        self.resident_started = time.monotonic()
        self.children.add(pid)

    def _resident_ended(self) -> bool:
        """The resident is gone; ``False`` when it died so soon after its start that
        another would too (the warm process then ends: relays start a new one)."""
        assert self.resident_life is not None
        os.close(self.resident_life)
        self.resident = self.resident_life = None
        return time.monotonic() - self.resident_started > _RESIDENT_MIN_LIFE_S

    def _fork_spare(self) -> None:
        gc.freeze()  # the worker's collector leaves what it inherited alone (no copy-on-write)
        pid = os.fork()
        if pid == 0:
            _spare(self)
        self.spares.add(pid)
        self.children.add(pid)

    def _reap(self) -> None:
        while self.children:
            try:
                pid, _ = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                self.children.clear()
                self.spares.clear()
                return
            if not pid:
                return
            self.children.discard(pid)
            self.spares.discard(pid)  # a spare that died waiting is replaced

    def watch_code(self) -> None:
        """This process lives on (the resident, a per-file worker): :meth:`stale` compares
        the stamps only when an inotify watch on hookgate's folders saw something."""
        self.code_watch, self.code_watch_pid = CodeWatch(self.stamps), os.getpid()

    def stale(self) -> bool:
        watch = self.code_watch if self.code_watch_pid == os.getpid() else None
        if watch is None:
            return self._stamps_differ()
        # One lock: a thread that finds the watch drained by another's check still sees
        # what that check found; once changed, always changed.
        with self.code_lock:
            if not self.code_changed and watch.maybe_changed():
                self.code_changed = self._stamps_differ()
            return self.code_changed

    def _stamps_differ(self) -> bool:
        return any(_stamp(path) != stamp for path, stamp in self.stamps.items())

    def _socket_is_ours(self) -> bool:
        try:
            return os.lstat(self.path).st_ino == self.inode
        except OSError:
            return False

    def status(self) -> str:
        return "".join(f"{name}: {value}\n" for name, value in (
            ("pid", os.getppid()), ("socket", self.path), ("started", int(self.started)),
            ("idle_exit_s", self.idle_s), ("key", self.key.replace("\n", " | ")),
            ("shell_port", self.shell.endpoint.port if self.shell else "-"),
            ("resident", self.resident or "-"),
        ))

    def unlink_socket(self) -> None:
        if self.shell is not None:
            self.shell.unlink()
        if self._socket_is_ours():
            with contextlib.suppress(OSError):
                os.unlink(self.path)

    def close(self) -> None:
        self.unlink_socket()  # first: no relay finds us any more
        self.listener.close()
        if self.shell is not None:
            self.shell.close()
        if self.sample_file is not None:
            with contextlib.suppress(OSError):
                os.unlink(self.sample_file)
        if self.resident is not None:
            # It stops accepting, answers the events under way and exits.
            with contextlib.suppress(OSError):
                os.kill(self.resident, signal.SIGTERM)
        for pid in self.spares:
            # Waiting in accept(): it ends, nothing of its ran (a relay whose connection it
            # had not taken yet runs the event itself). One that has just taken an event
            # ignores this and answers it.
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGTERM)


#: What a worker tells the warm process: it took a connection, or the warm process must end
#: (its code changed, or it was told to stop); a byte and the worker's pid.
_NOTE_TOOK: Final = b"T"
_NOTE_END: Final = b"E"
_SPARES: Final = 3
#: A resident that dies sooner than this after its start is not started again.
_RESIDENT_MIN_LIFE_S: Final = 5.0


def _resident_off(environ: Mapping[str, str]) -> bool:
    """``HOOKGATE_CLAUDE_CODE_WARM_RESIDENT=off``: every event in a fork of its own (as
    before the resident; for comparisons)."""
    return environ.get("HOOKGATE_CLAUDE_CODE_WARM_RESIDENT", "").strip().lower() in (
        "off", "0", "no", "false")


def _cache_sample(path: str) -> None:
    """Validate the sample hooks file here once, so its definitions are cached for the
    resident's warm-up (which validates nothing)."""
    from hookgate.integrations.claude_code.definition_cache import edition_of, load_definitions

    with contextlib.suppress(Exception):
        load_definitions(path, edition=edition_of(os.environ), environ=os.environ)
#: How long a used worker's replacement waits while another worker is still ready.
_REFILL_DELAY_S: Final = 0.25


class _ShellListener:
    """The shell relay's listeners and their endpoint file (see :mod:`.shell_relay`): the
    loopback port, which ``relay.bash`` reaches, and the Unix socket beside the endpoint file,
    which the compiled relay takes when it is there (``None`` when it could not be made: the
    compiled relay then takes the port)."""

    def __init__(self, listener: socket.socket, unix: _UnixListener | None,
                 endpoint: shell_relay.Endpoint, path: str, inode: int) -> None:
        self.listener = listener
        self.unix = unix
        self.endpoint = endpoint
        self.path = path
        self.inode = inode

    @classmethod
    def open(cls, folder: str) -> _ShellListener | None:
        """``None`` where the shell relay cannot serve (its relays then take the Python
        path, which still reaches the Unix socket)."""
        if not shell_relay.available():
            return None
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        unix = None
        try:
            listener.bind(("127.0.0.1", 0))
            listener.listen(128)
            endpoint = shell_relay.new_endpoint(listener.getsockname()[1])
            path = shell_relay.endpoint_path(folder)
            # before the endpoint file: a relay that finds the file finds the socket too
            unix = _UnixListener.open(shell_relay.unix_path(path))
            inode = shell_relay.write_endpoint(path, endpoint)
        except OSError:
            listener.close()
            if unix is not None:
                unix.close()
            return None
        return cls(listener, unix, endpoint, path, inode)

    @property
    def listeners(self) -> list[socket.socket]:
        return [self.listener] + ([self.unix.listener] if self.unix else [])

    def unlink(self) -> None:
        _remove_if_ours(self.path, self.inode)
        if self.unix is not None:
            self.unix.unlink()

    def close(self) -> None:
        for listener in self.listeners:
            listener.close()


class _UnixListener:
    """A Unix socket of this process's, 0600, and its inode (only ours is ever removed)."""

    def __init__(self, listener: socket.socket, path: str, inode: int) -> None:
        self.listener = listener
        self.path = path
        self.inode = inode

    @classmethod
    def open(cls, path: str) -> _UnixListener | None:
        """``None`` when it cannot be bound (a path too long for a socket address)."""
        found = file_worker.listen(path, 128)  # agents run hooks in parallel
        return None if found is None else cls(found[0], path, found[1])

    def unlink(self) -> None:
        _remove_if_ours(self.path, self.inode)

    def close(self) -> None:
        self.listener.close()


def _remove_if_ours(path: str, inode: int) -> None:
    """Remove ``path`` if it is still the file this process made (never a successor's)."""
    with contextlib.suppress(OSError):
        if os.lstat(path).st_ino == inode:
            os.unlink(path)


def _note(server: _Server, kind: bytes) -> None:
    with contextlib.suppress(OSError):  # the warm process is gone: the worker still serves
        os.write(server.notes_out, kind + os.getpid().to_bytes(4, "big"))


def _ignore(signum: int, frame: object) -> None:
    pass


def _resident(server: _Server, life_read: int) -> None:
    """The forked resident (:mod:`.resident`). Never returns."""
    try:
        for number in (signal.SIGTERM, signal.SIGCHLD):
            signal.signal(number, signal.SIG_DFL)
        os.close(server.lock_fd)
        os.close(server.notes_in)
        os.close(life_read)
        server.listener.close()  # the Unix socket is the forked workers'
        assert server.shell is not None
    except BaseException:
        os._exit(1)
    resident.serve_resident(server, server.shell.listeners, server.shell.endpoint,
                            lambda kind: _note(server, kind),
                            lambda: _note(server, _NOTE_END))


def _spare(server: _Server) -> None:
    """A forked worker: wait for one connection, serve it, exit. Never returns."""
    try:
        for number in (signal.SIGTERM, signal.SIGCHLD):
            signal.signal(number, signal.SIG_DFL)
        os.close(server.lock_fd)  # the lock must die with the warm process, not a worker
        os.close(server.notes_in)
        _pretouch(server.sample)
        _pretouch_shell(server)
        conn, shell = _accept(server, server.pid)
        _note(server, _NOTE_TOOK)
        server.listener.close()
        if server.shell is not None:
            server.shell.close()
    except BaseException:
        os._exit(0)
    before = set(sys.modules)  # what the worker did not import for a hooks file
    with conn:
        if shell:
            _serve_shell(server, conn)
        else:
            _serve_one(server, conn, before)
    os._exit(0)


def _accept(server: _Server, parent: int) -> tuple[socket.socket, bool]:
    """The next connection on either listener (and whether it is the shell relay's). Every
    spare waits on both through its own epoll with ``EPOLLEXCLUSIVE``: a connection wakes one
    spare, not all of them (each woken spare would take the CPU from the relay that waits)."""
    import select

    # With a resident, the shell relay's port is its alone (its events reach a worker
    # through the Unix socket, handed over).
    shell = server.shell if server.shell and not server.resident_wanted else None
    listeners = [server.listener] + (shell.listeners if shell else [])
    poller = select.epoll()
    for listener in listeners:
        listener.setblocking(False)
        poller.register(listener.fileno(), select.EPOLLIN | select.EPOLLEXCLUSIVE)
    by_fd = {listener.fileno(): listener for listener in listeners}
    while True:
        ready = poller.poll(_TICK_S)
        if not ready and os.getppid() != parent:
            os._exit(0)  # the warm process is gone: so are we
        for fd, _ in ready:
            try:
                conn, _ = by_fd[fd].accept()
            except (BlockingIOError, InterruptedError):
                continue  # another spare took it
            # From here the warm process's SIGTERM (its idle exit may cross an event that
            # just came in) no longer ends this worker; a handler, not SIG_IGN: hook
            # programs must not inherit an ignored SIGTERM.
            signal.signal(signal.SIGTERM, _ignore)
            poller.close()
            conn.setblocking(True)
            return conn, by_fd[fd] is not server.listener


def _serve_one(server: _Server, conn: socket.socket, before: set[str]) -> None:
    fds: list[int] = []
    try:
        if peer_uid(conn) != os.getuid():
            return  # another user: not a word
        conn.settimeout(_REQUEST_TIMEOUT_S)
        head, fds = _receive_head(conn)
        if head[:4] != wire.MAGIC:
            return
        kind, length = head[4:5], int.from_bytes(head[5:9], "big")
        if kind == wire.EVENT:
            if server.stale():
                server.unlink_socket()  # before the answer: the relay's next try starts anew
                conn.sendall(wire.REFUSED)
                _note(server, _NOTE_END)
                return
            _event(conn, fds, length, server.key)  # never returns
        elif kind == wire.HAND_OFF and server.shell is not None:
            _serve_hand_off(server, conn, fds, length, before)  # never returns once it ran
        elif kind == wire.STATUS:
            conn.sendall(server.status().encode())
        elif kind == wire.STOP:
            server.unlink_socket()
            _note(server, _NOTE_END)
            conn.sendall(b"K")
    except BaseException:
        return
    finally:
        for fd in fds:
            os.close(fd)


def _receive_head(conn: socket.socket) -> tuple[bytes, list[int]]:
    """The 9 header bytes and the descriptors sent along with them."""
    fds: list[int] = []
    data, ancillary, _, _ = conn.recvmsg(9, socket.CMSG_SPACE(2 * 4))
    for level, kind, payload in ancillary:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            usable = len(payload) - len(payload) % 4
            fds.extend(int.from_bytes(payload[i:i + 4], sys.byteorder)
                       for i in range(0, usable, 4))
    while data and len(data) < 9:
        more = conn.recv(9 - len(data))
        if not more:
            break
        data += more
    return data, fds


def _receive(conn: socket.socket, size: int) -> bytes:
    chunks: list[bytes] = []
    left = size
    while left > 0:
        chunk = conn.recv(min(left, 1 << 20))
        if not chunk:
            break
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def _event(conn: socket.socket, fds: list[int], length: int, key: str) -> None:
    """Take the event, run it as :mod:`.main` does, report the exit code, exit."""
    try:
        args, raw, streams, agent = _take(conn, fds, length, key)
    except BaseException:
        os._exit(0)  # nothing ran: the relay runs the event itself
    sys.stdout, sys.stderr = streams
    code = 2
    try:
        if agent is None:
            from hookgate.integrations.claude_code.main import run

            code = run(args, raw, stdout=sys.stdout, stderr=sys.stderr)
        else:
            from hookgate.integrations.agent_bridge import contract_for
            from hookgate.integrations.agent_bridge import main as bridge_main

            code = bridge_main(contract_for(agent), args.config, None,
                               stdin=io.BytesIO(raw), stdout=sys.stdout, stderr=sys.stderr)
    finally:
        for stream in streams:
            with contextlib.suppress(BaseException):
                stream.flush()
        try:
            # Let go of Claude Code's pipes first: it waits for their end, not for our exit.
            null = os.open(os.devnull, os.O_WRONLY)
            os.dup2(null, 1)
            os.dup2(null, 2)
            conn.sendall(wire.DONE + bytes([code & 0xFF]))
        finally:
            os._exit(0)


_Streams = tuple[io.TextIOWrapper, io.TextIOWrapper]




def _serve_shell(server: _Server, conn: socket.socket) -> None:
    """One event from ``relay.bash`` (when no resident takes them): the peer checked, the
    tokens exchanged, then :func:`_run_shell`."""
    assert server.shell is not None
    try:
        found = shell_serve.read_request(conn, server.shell.endpoint)
    except BaseException:
        return
    if found is not None:
        _run_shell(server, conn, found[0])


def _serve_hand_off(server: _Server, conn: socket.socket, fds: list[int],
                    length: int, before: set[str]) -> None:
    """An event the resident could not answer in place: the relay's connection and its
    request; taken (``S``), run once the resident commits (``G``), as :func:`_run_shell`.
    Then, for a hooks file with ``callable`` hooks, this worker stays for its later events
    (:mod:`.file_worker`)."""
    assert server.shell is not None
    if len(fds) != 1 or not 0 <= length <= wire.MAX_BODY:
        return
    relay = socket.socket(fileno=fds.pop())
    with relay:
        body = _receive(conn, length)
        request = shell_relay.parse_request(body) if len(body) == length else None
        if request is None or not shell_serve.token_matches(request, server.shell.endpoint):
            return
        conn.sendall(wire.STARTED)
        if _receive(conn, 1) != wire.COMMIT:
            return  # the resident gave up: it told the relay, nothing runs
        try:
            args = _take_shell(server, request)
            # the event's own, before a hook may change them
            cwd, environ = os.getcwd(), dict(os.environ)
            key = args and file_worker.file_key(request.agent, args, environ, cwd)
        except BaseException:
            args = None
        if args is None:
            with contextlib.suppress(BaseException):
                relay.sendall(shell_serve.REFUSED)  # nothing ran: the relay hands it on
            return
        kept: list[tuple[socket.socket, int, str]] = []
        stamps = file_worker.ModuleStamps(before)

        def stay() -> None:
            """Before the answer: this worker's socket for the file's later events, so
            that the next event (the agent's next step, right after) finds it."""
            if (key and threading.active_count() == 1  # no hook thread left running
                    and file_worker.has_callables(request.agent, args, environ, cwd)):
                stamps.record()  # what the event imported, as it imported it
                path = file_worker.socket_path(server.path, key)
                found = file_worker.listen(path)
                if found is not None:
                    kept.append((*found, path))

        _answer_shell(relay, request, args, stay)
    if kept and key:
        conn.close()
        _serve_file(server, key, stamps, *kept[0])
    os._exit(0)


def _run_shell(server: _Server, conn: socket.socket,
               request: shell_relay.ShellRequest) -> BridgeArgs | None:
    """The relay's process taken over from ``/proc``, the event run as :mod:`.main` runs
    it, the answer sent (its options returned); refused (nothing ran) whenever that cannot
    be done exactly. Exits on a failure of its own."""
    try:
        taken = _take_shell(server, request)
    except BaseException:
        taken = None
    if taken is None:
        with contextlib.suppress(BaseException):
            conn.sendall(shell_serve.REFUSED)  # nothing ran: the relay hands the event on
        return None
    _answer_shell(conn, request, taken)
    return taken


def _answer_shell(conn: socket.socket, request: shell_relay.ShellRequest,
                  args: BridgeArgs, before_answer: Callable[[], None] | None = None) -> None:
    """Run the taken event and send its answer; exit when that fails."""
    conn.settimeout(None)  # the hooks' own timeouts hold
    out, err = io.StringIO(), io.StringIO()
    code = 2
    ok = False
    try:
        sys.stdout, sys.stderr = out, err
        code = shell_serve.run_event(request.agent, args, request.stdin, out, err)
        ok = True
        if before_answer is not None:
            with contextlib.suppress(Exception):
                before_answer()
    finally:
        try:
            conn.sendall(shell_serve.answer_bytes(code, out, err))
        except BaseException:
            ok = False
        if not ok:
            os._exit(0)


def _serve_file(server: _Server, key: str, stamps: file_worker.ModuleStamps,
                listener: socket.socket, inode: int, path: str) -> None:
    """The per-file worker's life (:mod:`.file_worker`) on its socket at ``path``: its
    later events, one at a time, until idle, a change, or the warm process's end. Never
    returns."""
    import select

    parent = server.pid
    last = time.monotonic()
    server.watch_code()

    def retire() -> None:
        """No event finds this worker any more (before it refuses one: the fresh fork
        that answers it then may take its place)."""
        with contextlib.suppress(OSError):
            if os.lstat(path).st_ino == inode:
                os.unlink(path)
        listener.close()

    try:
        while os.getppid() == parent and time.monotonic() - last < file_worker.IDLE_S:
            try:
                if os.lstat(path).st_ino != inode:
                    break
            except OSError:
                break
            ready, _, _ = select.select([listener], [], [], _TICK_S)
            if not ready:
                continue
            conn = listener.accept()[0]
            last = time.monotonic()
            with conn:
                if not _file_event(server, conn, key, stamps, retire):
                    break
            stamps.record()
    finally:
        retire()
        os._exit(0)


def _file_event(server: _Server, conn: socket.socket, key: str,
                stamps: file_worker.ModuleStamps, retire: Callable[[], None]) -> bool:
    """One handed-over event at the per-file worker: taken only when it is this worker's
    (same user, token, file, bytes and project; nothing it imported changed); ``False``
    when the worker must end."""
    assert server.shell is not None
    fds: list[int] = []
    try:
        if peer_uid(conn) != os.getuid():
            return True  # another user: not a word
        conn.settimeout(_REQUEST_TIMEOUT_S)
        head, fds = _receive_head(conn)
        length = int.from_bytes(head[5:9], "big")
        if (head[:5] != wire.MAGIC + wire.HAND_OFF or len(fds) != 1
                or not 0 <= length <= wire.MAX_BODY):
            return True
        with socket.socket(fileno=fds.pop()) as relay:
            body = _receive(conn, length)
            request = shell_relay.parse_request(body) if len(body) == length else None
            if request is None or not shell_serve.token_matches(request,
                                                                server.shell.endpoint):
                return True
            if stamps.changed():
                retire()
                conn.sendall(wire.REFUSED)  # a fresh fork imports the edited module
                return False
            args = _take_shell(server, request)  # None when stale (and the warm one ends)
            if args is None or file_worker.file_key(
                    request.agent, args, os.environ, os.getcwd()) != key:
                retire()
                conn.sendall(wire.REFUSED)
                return False
            import importlib

            importlib.invalidate_caches()  # a module file new since the last event is found
            try:
                conn.sendall(wire.STARTED)
                committed = _receive(conn, 1) == wire.COMMIT
            except OSError:
                committed = False
            if not committed:
                return True  # the resident gave up: it told the relay, nothing ran
            stay: list[bool] = []

            def free() -> None:
                """Before the answer: the resident may give this worker the next event
                (the agent's next step, which comes as soon as the relay has the answer,
                finds it free; the hand-over waits in this worker's backlog meanwhile).
                Not when a hook left a thread running: the worker ends after the answer."""
                stay.append(threading.active_count() == 1)
                if stay[0]:
                    conn.sendall(wire.DONE)

            _answer_shell(relay, request, args, free)
        return bool(stay and stay[0])
    except BaseException:
        return False
    finally:
        for fd in fds:
            os.close(fd)


def _take_shell(server: _Server, request: shell_relay.ShellRequest) -> BridgeArgs | None:
    """Become the relay's process (environment, working folder, umask) when the event is
    this warm process's to run; ``None`` (nothing changed that matters) otherwise."""
    if request.agent not in shell_relay.AGENTS:
        return None
    args = parse_args(request.options)
    if args is None:
        return None
    proc = f"/proc/{request.pid}"
    found = shell_serve.process_of(proc)
    if found is None:
        return None
    environ, umask = found
    if process_key(environ) != server.key:
        return None  # another PYTHONPATH or install: the Python relay finds its own
    if server.stale():
        server.unlink_socket()  # before the answer: the next event starts a new one
        _note(server, _NOTE_END)
        return None
    os.chdir(f"{proc}/cwd")
    os.umask(umask)
    os.environ.clear()
    os.environ.update(environ)
    return args


#: A made-up shell relay request for :func:`_pretouch_shell` (its input is ``_SAMPLE``).
_SHELL_SAMPLE: Final = b"\0".join((
    b"0" * 32, b"1", b"claude-code", b"2", b"--config", b"/warm-up.json", _SAMPLE.encode(), b""))


def _pretouch_shell(server: _Server) -> None:
    """The shell relay's path, run on a made-up request and on this process itself (its
    hooks file a command hook that does nothing): as :func:`_pretouch`, the memory an event
    touches is copied before the event waits for it."""
    with contextlib.suppress(Exception):
        request = shell_relay.parse_request(_SHELL_SAMPLE)
        assert request is not None
        parse_args(request.options)
        found = shell_serve.process_of(f"/proc/{os.getpid()}")
        assert found is not None
        process_key(found[0])
        server.stale()
        if server.sample_file is not None:
            from hookgate.integrations.agent_bridge import contract_for
            from hookgate.integrations.agent_bridge import main as bridge_main
            from hookgate.integrations.claude_code.main import run

            run(BridgeArgs(config=server.sample_file), request.stdin, stdout=io.StringIO(),
                stderr=io.StringIO())
            # the other agents' path, on an event the sample file has no hook for
            for agent, event in (("codex", "PostToolUse"), ("gemini", "AfterTool")):
                sample = _SAMPLE.replace('"PreToolUse"', f'"{event}"').encode()
                bridge_main(contract_for(agent), server.sample_file, None,
                            stdin=io.BytesIO(sample), stdout=io.StringIO(),
                            stderr=io.StringIO())


def _take(conn: socket.socket, fds: list[int], length: int,
          key: str) -> tuple[BridgeArgs, bytes, _Streams, str | None]:
    """Read the request, become the relay's process (cwd, environment, stdout, stderr), and
    take the event once the relay commits; raise (nothing ran) otherwise."""
    if not 0 <= length <= wire.MAX_BODY or len(fds) != 2:
        raise ValueError("not an event request")
    body = _receive(conn, length)
    if len(body) != length:
        raise ValueError("truncated request")
    items = wire.unpack(body)
    if len(items) not in (10, 11) or items[0].decode("utf-8", "surrogateescape") != key:
        conn.sendall(wire.REFUSED)
        raise ValueError("another key")
    config, cwd, env, out_enc, out_err, err_enc, err_err, umask, raw = items[1:10]
    agent = items[10].decode() if len(items) == 11 else None
    if agent not in (None, "codex", "gemini"):
        conn.sendall(wire.REFUSED)
        raise ValueError("an agent this warm process does not serve")
    os.umask(int(umask, 8))
    try:
        os.chdir(cwd)
    except OSError:
        conn.sendall(wire.REFUSED)  # the relay's own run reports it as it always has
        raise
    os.dup2(fds[0], 1)
    os.dup2(fds[1], 2)
    for fd in fds:
        os.close(fd)
    fds.clear()
    environ = {}
    for entry in env.split(b"\0") if env else ():
        name, _, value = entry.partition(b"=")
        environ[os.fsdecode(name)] = os.fsdecode(value)
    os.environ.clear()
    os.environ.update(environ)
    streams = (
        io.TextIOWrapper(io.FileIO(1, "w", closefd=False), encoding=out_enc.decode(),
                         errors=out_err.decode()),
        io.TextIOWrapper(io.FileIO(2, "w", closefd=False), encoding=err_enc.decode(),
                         errors=err_err.decode()),
    )
    args = BridgeArgs(config=None if config == b"-" else os.fsdecode(config[1:]))
    conn.sendall(wire.STARTED)
    if _receive(conn, 1) != wire.COMMIT:
        raise ValueError("the relay gave up")
    conn.settimeout(None)
    return args, raw, streams, agent


def serve(path: str, lock_fd: int, environ: Mapping[str, str] | None = None) -> None:
    os.chdir("/")  # hold no project folder open
    marker = failed_marker(path)
    try:
        server = _Server(path, lock_fd, os.environ if environ is None else environ)
    except BaseException as exc:
        # Relays run their events themselves meanwhile; the marker keeps them from starting
        # a warm process that fails again on every event (and says why).
        with contextlib.suppress(OSError):
            fd = os.open(marker, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
            with os.fdopen(fd, "w") as file:
                file.write(f"{time.ctime()}: {type(exc).__name__}: {exc}\n")
        raise
    with contextlib.suppress(OSError):
        os.unlink(marker)

    def stop(signum: int, frame: object) -> None:
        raise SystemExit(0)

    signal.signal(signal.SIGTERM, stop)
    try:
        server.loop()
    finally:
        server.close()


if __name__ == "__main__":
    serve(sys.argv[1], int(sys.argv[2]))
