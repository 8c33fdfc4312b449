"""``hookgate claude-code``, the per-event process: hand the event to the warm process.

Claude Code starts ``hookgate claude-code`` for every hook event, and a Python process that
imports hookgate's core costs several times a bare Python start. So this process imports
nothing heavy (``os``, ``sys``, ``_socket``; no ``json``, no ``typing``): it reads its stdin,
connects to the user's warm process (:mod:`.warm`, found by :mod:`.warm_place`), sends the
input, its options, working directory and environment, and passes its own stdout and stderr
along. A fresh fork of the warm process answers the event exactly as :mod:`.main` does in
a process of its own, writing straight into Claude Code's pipes; this process exits with
the exit code it reports.

Failure rules (the same as :mod:`.main`'s):

* Nothing was handed over yet (no warm process yet: this relay starts one, detached, for the
  next events, once it has answered and let go of the agent's pipes, so that the new
  process's imports do not take the CPU from this event; none can be started, the folder is
  refused, the peer is another user, the warm process refused or went away before taking
  the event): the event runs here, in this process, exactly as without a warm process.
* The warm process took the event and then failed (died, closed the connection, answered
  garbage): the hooks may have run, so they are never run again; exit 2 with a one-line
  reason on the events where that stops the action (exit 1 elsewhere).

``HOOKGATE_CLAUDE_CODE_WARM=off`` turns the warm process off; ``=require`` fails the event
(closed) instead of running it here when the warm process does not take it (for tests and
checks). ``--gateway`` never uses it (that path is one HTTP request already).
"""

from __future__ import annotations

import _socket
import os
import sys

from hookgate.errors import HookgateError
from hookgate.integrations.claude_code import warm_wire as wire
from hookgate.integrations.claude_code.startup import BridgeArgs, parse_args
from hookgate.integrations.claude_code.warm_place import Place, peer_uid, place

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence
    from typing import Final

__all__ = ["CLAUDE_CODE", "RelayBroken", "ask_warm", "main", "prestart", "start_warm"]

#: The agent the relay was first written for (its events carry no agent item on the wire).
CLAUDE_CODE: Final = "claude-code"

#: How long the warm process may take to take an event before it runs here instead.
TAKE_TIMEOUT_S: Final = 5.0
#: How long a relay that must use the warm process (``require``) waits for one that is
#: starting (this relay's or another's).
START_TIMEOUT_S: Final = 10.0


class RelayBroken(HookgateError, ConnectionError):
    """The warm process took the event and then failed (reported as hookgate's failure)."""


def main(args: Sequence[str] | None = None, agent: str = CLAUDE_CODE) -> int:
    """``hookgate <agent>`` with ``args`` (default: ``sys.argv[2:]``): ``claude-code``,
    ``codex`` or ``gemini``; one warm process serves them all."""
    argv = sys.argv[2:] if args is None else args
    relay_failed = os.environ.get("HOOKGATE_RELAY_FAILED")
    if relay_failed:
        # relay.bash handed the event over and the warm process failed on it: its hooks may
        # have run, so they never run again; hookgate's failure, in the agent's form.
        try:
            raw: bytes | None = sys.stdin.buffer.read()
        except BaseException:
            raw = None
        return _fail(agent, raw, f"the warm hookgate process failed: {relay_failed}")
    parsed = parse_args(argv)
    gateway = parsed is None or parsed.gateway or os.environ.get("HOOKGATE_GATEWAY_URL")
    found = None if gateway else place(os.environ)
    if parsed is None or gateway or (found is None and not _required()):
        if agent == CLAUDE_CODE:
            from hookgate.integrations.claude_code.main import main as in_process

            return in_process(argv)
        return _agent_run(agent, parsed or BridgeArgs(), None)
    try:
        raw = sys.stdin.buffer.read()
    except BaseException as exc:
        return _fail(agent, None, f"cannot read stdin: {exc}")
    try:
        code = None if found is None else ask_warm(found, parsed, raw, wait=_required(),
                                                   agent=agent)
    except RelayBroken as exc:
        return _fail(agent, raw, f"the warm hookgate process failed: {exc}")
    if code is not None:
        return code
    if _required():
        why = "" if found is None or not found.failed_recently() else (
            f"; it failed to start less than a minute ago, see {found.failed}")
        return _fail(agent, raw, "no warm hookgate process took the event "
                     f"(HOOKGATE_CLAUDE_CODE_WARM=require){why}")
    if agent != CLAUDE_CODE:
        code = _agent_run(agent, parsed, raw)
    else:
        from hookgate.integrations.claude_code.main import run

        code = run(parsed, raw, stdout=sys.stdout, stderr=sys.stderr)
    if found is not None:
        _start_after_answer(found)
    return code


def _start_after_answer(where: Place) -> None:
    """Start the warm process for the next events, now that this one is answered: the
    agent's pipes let go first (it reads them to their end), then the detached start."""
    for stream in (sys.stdout, sys.stderr):
        try:  # noqa: SIM105 - contextlib is not imported on this path
            stream.flush()
        except BaseException:
            pass
    try:
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, 1)
        os.dup2(null, 2)
        os.close(null)
    except OSError:
        pass
    start_warm(where, wait=False)


def _agent_run(agent: str, args: BridgeArgs, raw: bytes | None) -> int:
    """Another agent's event in this process (no warm process, or a gateway)."""
    import io

    from hookgate.integrations.agent_bridge import contract_for
    from hookgate.integrations.agent_bridge import main as bridge_main

    return bridge_main(contract_for(agent), args.config, args.gateway,
                       stdin=None if raw is None else io.BytesIO(raw))


def _fail(agent: str, raw: bytes | None, message: str) -> int:
    """hookgate's own failure, in the agent's contract (Claude Code: exit 2 where that stops
    the action; the others: an explicit deny, exit 0)."""
    from hookgate.integrations.claude_code.main import fail, peek_event

    event = None if raw is None else peek_event(raw)
    if agent == CLAUDE_CODE:
        return fail(event, message, sys.stderr)
    from hookgate.integrations.agent_bridge import contract_for, print_reply

    return print_reply(contract_for(agent).failure(event, message), sys.stdout, sys.stderr)


def _required() -> bool:
    return os.environ.get("HOOKGATE_CLAUDE_CODE_WARM", "").strip().lower() == "require"


def ask_warm(where: Place, args: BridgeArgs, raw: bytes, *, wait: bool = False,
             agent: str = "claude-code") -> int | None:
    """The exit code of the event answered by the warm process; ``None`` when it did not
    take the event (nothing ran). Raise :class:`RelayBroken` when it took it and failed.
    ``wait``: when there is no warm process yet, start one and wait for it (else the event
    runs here and :func:`main` starts one afterwards), and ask a new one when one refuses
    (its hookgate changed, so it exits)."""
    for _ in range(3 if wait else 1):
        code = _ask_once(where, args, raw, wait, agent)
        if code is not None:
            return code
    return None


def _ask_once(where: Place, args: BridgeArgs, raw: bytes, wait: bool, agent: str
              ) -> int | None:
    sock = _connect(where, wait)
    if sock is None:
        return None
    try:
        request = _request(where, args, raw, agent)
        if request is None:
            return None
        try:
            sock.settimeout(TAKE_TIMEOUT_S)
            sent = sock.sendmsg([request], [(_socket.SOL_SOCKET, _socket.SCM_RIGHTS, _FDS)])
            if sent < len(request):
                sock.sendall(request[sent:])  # a large input fills the socket's buffer
            if _recv_exactly(sock, 1) != wire.STARTED:
                return None  # refused, gone, or too slow: it runs nothing without our commit
            sock.sendall(wire.COMMIT)
        except OSError:
            return None
        # Committed: from here the hooks may run, and a failure is reported, never retried.
        try:
            sock.settimeout(None)  # the hooks' own timeouts hold in the worker
            reply = _recv_exactly(sock, 2)
        except OSError as exc:
            raise RelayBroken(f"connection lost ({exc})") from None
        if len(reply) < 2:
            raise RelayBroken("it ended before answering")
        if reply[:1] != wire.DONE:
            raise RelayBroken("it answered something else than an exit code")
        return reply[1]
    finally:
        sock.close()


_FDS: Final = (1).to_bytes(4, sys.byteorder) + (2).to_bytes(4, sys.byteorder)


def _request(where: Place, args: BridgeArgs, raw: bytes, agent: str) -> bytes | None:
    try:
        cwd = os.getcwd()
    except OSError:
        return None  # the event reports it as it always has
    out, err = sys.stdout, sys.stderr
    if out is None or err is None:
        return None
    env = b"\0".join(key + b"=" + value for key, value in os.environb.items())
    config = b"-" if args.config is None else b"+" + os.fsencode(args.config)
    umask = os.umask(0o077)
    os.umask(umask)
    return wire.pack(wire.EVENT, [
        where.key.encode("utf-8", "surrogateescape"), config, os.fsencode(cwd), env,
        out.encoding.encode(), (out.errors or "strict").encode(),
        err.encoding.encode(), (err.errors or "strict").encode(), b"%o" % umask, raw,
        *(() if agent == CLAUDE_CODE else (agent.encode(),)),
    ])


def _recv_exactly(sock: _socket.socket, size: int) -> bytes:
    """``size`` bytes, or fewer when the peer closed first."""
    data = b""
    while len(data) < size:
        chunk = sock.recv(size - len(data))
        if not chunk:
            break
        data += chunk
    return data


def _connect(where: Place, wait: bool) -> _socket.socket | None:
    """A connection to the warm process of this user, started if there is none; ``None``
    when there is none yet (or, with ``wait``, none came up)."""
    sock = _try_connect(where.socket)
    if sock is None and wait:
        sock = start_warm(where, wait=True)
    if sock is None:
        return None  # (without ``wait`` one is started once the event is answered here)
    try:
        if peer_uid(sock) == os.getuid():
            return sock
    except OSError:
        pass
    sock.close()
    return None


def _try_connect(path: str) -> _socket.socket | None:
    sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    try:
        sock.connect(path)
    except OSError:
        sock.close()
        return None
    return sock


def start_warm(where: Place, environ: Mapping[str, str] | None = None, *, wait: bool = True
               ) -> _socket.socket | None:
    """Start the warm process unless one is alive or starting (whoever holds the lock file);
    with ``wait``, connect to it once it listens (``None`` if it does not come up in time),
    else return ``None`` at once: starting takes longer than running the event here."""
    import fcntl
    import time

    env = os.environ if environ is None else environ
    if where.failed_recently():
        return None
    deadline = time.monotonic() + START_TIMEOUT_S
    for _ in range(3):  # (a new one, when the one that held the lock died meanwhile)
        try:
            lock = os.open(where.lock, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC,
                           0o600)
        except OSError:
            return None
        try:
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                pass  # a warm process holds it: alive, or starting
            else:
                # The lock goes to the new process with the file (flock locks belong to the
                # open file): no second one can start while it lives.
                if not _spawn(where, lock, env):
                    return None
        finally:
            os.close(lock)
        if not wait:
            return None
        pause = 0.002
        while time.monotonic() < deadline:
            sock = _try_connect(where.socket)
            if sock is not None:
                return sock
            if _lock_free(where):
                break  # it exited (or failed to start)
            time.sleep(pause)
            pause = min(pause * 1.5, 0.05)
        else:
            return None
    return None


def prestart(environ: Mapping[str, str] | None = None) -> bool:
    """Start the warm process now unless one runs (``install`` does, so that the first event
    of the next session finds one); ``False`` where there is none to start (turned off, an
    unusable folder, not Linux)."""
    env = os.environ if environ is None else environ
    where = place(env)
    if where is None:
        return False
    start_warm(where, env, wait=False)
    return True


def _lock_free(where: Place) -> bool:
    import fcntl

    try:
        fd = os.open(where.lock, os.O_RDWR | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return True
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return False
    finally:
        os.close(fd)  # releases it again if we got it
    return True


def _spawn(where: Place, lock: int, env: Mapping[str, str]) -> bool:
    """The warm process, detached: its own session, stdio on /dev/null (Claude Code waits
    for EOF on the hook's pipes), the locked lock file inherited. ``-P``: no working directory on
    ``sys.path``, so a project's modules never shadow hookgate's."""
    argv = [sys.executable, "-P", "-m", "hookgate.integrations.claude_code.warm",
            where.socket, str(lock)]
    actions = [
        (os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
        (os.POSIX_SPAWN_OPEN, 1, os.devnull, os.O_WRONLY, 0),
        (os.POSIX_SPAWN_DUP2, 1, 2),
    ]
    try:
        os.set_inheritable(lock, True)  # only this one descriptor of ours goes along
        os.posix_spawn(sys.executable, argv, dict(env), file_actions=actions, setsid=True)
    except OSError:
        return False
    finally:
        os.set_inheritable(lock, False)
    return True
