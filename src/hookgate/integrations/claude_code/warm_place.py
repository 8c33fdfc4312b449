"""Where the warm ``hookgate claude-code`` process listens, and who may talk to it.

Shared by the per-event relay (:mod:`.relay`) and the warm process (:mod:`.warm`). Like
the relay, it imports nothing but ``os``, ``sys`` and ``_socket``: it runs on every event.

* **The folder**: ``$HOOKGATE_CLAUDE_CODE_WARM_DIR`` if set, else ``$XDG_RUNTIME_DIR/hookgate``,
  else ``/tmp/hookgate-<uid>``; created 0700. A folder that is a symlink, is not owned by the
  user, or is writable by the group or others is refused (someone else could have put a
  socket there that answers "allow"): the event then runs in its own process as without the
  warm process.
* **The name**: one warm process per hookgate install (version and package folder), Python
  (executable and version) and ``PYTHONPATH`` (it decides which hook modules import); a
  hookgate upgrade or another Python never talks to an old process. Hooks files are not part
  of it: an event whose hooks file has ``callable`` hooks runs in a fresh fork of the warm
  process, so hook modules of two projects (or two events) never share a ``sys.modules``;
  the others are answered in place by its resident, which imports no hook module at all
  (:mod:`.in_place`).
* **The peer**: both ends check the other's user id on the socket (``SO_PEERCRED``); where
  the system cannot tell (not Linux), there is no warm process.
"""

from __future__ import annotations

import _socket
import os
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Final

__all__ = [
    "OFF_VALUES",
    "RETRY_START_S",
    "Place",
    "disabled",
    "failed_marker",
    "folder_of",
    "install_id",
    "Peer",
    "peer_of",
    "peer_uid",
    "place",
    "process_key",
    "usable_folder",
]

#: ``HOOKGATE_CLAUDE_CODE_WARM`` values that turn the warm process off.
OFF_VALUES: Final = ("off", "0", "no", "false")
#: How long after a failed start no warm process is started again.
RETRY_START_S: Final = 60.0
#: Longest path a Unix socket address holds (``sun_path``, with its final NUL).
_MAX_SOCKET_PATH: Final = 107


def disabled(environ: Mapping[str, str]) -> bool:
    return environ.get("HOOKGATE_CLAUDE_CODE_WARM", "").strip().lower() in OFF_VALUES


def process_key(environ: Mapping[str, str]) -> str:
    """What one warm process stands for: events with another key never reach it."""
    return _own_key() + environ.get("PYTHONPATH", "")


def _own_key() -> str:
    """The key's part this process alone decides (computed once: the resident compares the
    key of every event)."""
    if not _OWN_KEY:
        import hookgate

        _OWN_KEY.append("\n".join((
            "hookgate-claude-code-warm/1", getattr(hookgate, "__version__", "?"),
            os.path.dirname(os.path.abspath(hookgate.__file__ or "")), sys.executable,
            sys.version, "",
        )))
    return _OWN_KEY[0]


_OWN_KEY: list[str] = []


def _digest(text: str) -> str:
    """64-bit FNV-1a (no hashlib import; a collision only costs a refused event, since the
    warm process compares the whole key)."""
    digest = 0xCBF29CE484222325
    for byte in text.encode("utf-8", "surrogateescape"):
        digest = ((digest ^ byte) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return f"{digest:016x}"


def install_id() -> str:
    """This hookgate install and Python, for the shell relay's endpoint file (written into
    the installed command). Not the version: an upgrade in place keeps the command working,
    and the warm process compares the whole key of every event anyway."""
    import hookgate

    return _digest("\n".join((
        os.path.dirname(os.path.abspath(hookgate.__file__ or "")), sys.executable)))


class Place:
    """The socket and lock file of the warm process for one key."""

    __slots__ = ("failed", "folder", "key", "lock", "socket")

    def __init__(self, folder: str, key: str) -> None:
        self.folder = folder
        self.key = key
        name = "cc-" + _digest(key)
        self.socket = os.path.join(folder, name + ".sock")
        self.lock = os.path.join(folder, name + ".lock")
        #: Written by a warm process that could not start (why); see ``failed_recently``.
        self.failed = failed_marker(self.socket)

    def failed_recently(self) -> bool:
        """A warm process for this key failed to start less than ``RETRY_START_S`` ago: none
        is started again until then (each would cost a Python start and fail again)."""
        import time

        try:
            return os.stat(self.failed).st_mtime > time.time() - RETRY_START_S
        except OSError:
            return False


def failed_marker(socket_path: str) -> str:
    return socket_path.removesuffix(".sock") + ".failed"


def folder_of(environ: Mapping[str, str]) -> str:
    explicit = environ.get("HOOKGATE_CLAUDE_CODE_WARM_DIR")
    if explicit:
        return explicit
    runtime = environ.get("XDG_RUNTIME_DIR")
    if runtime and os.path.isabs(runtime):
        return os.path.join(runtime, "hookgate")
    return f"/tmp/hookgate-{os.getuid()}"


def usable_folder(folder: str) -> bool:
    """The folder exists (created 0700 if not), is a real folder of this user, and nobody
    else may write in it."""
    try:
        os.mkdir(folder, 0o700)
    except FileExistsError:
        pass
    except OSError:
        return False
    try:
        info = os.lstat(folder)
    except OSError:
        return False
    import stat

    return (stat.S_ISDIR(info.st_mode) and info.st_uid == os.getuid()
            and not info.st_mode & 0o022)


def place(environ: Mapping[str, str]) -> Place | None:
    """Where this install's warm process listens; ``None`` when there must be none."""
    if disabled(environ) or not hasattr(_socket, "SO_PEERCRED") or not hasattr(_socket,
                                                                              "AF_UNIX"):
        return None
    folder = folder_of(environ)
    if not usable_folder(folder):
        return None
    found = Place(folder, process_key(environ))
    if len(os.fsencode(found.socket)) > _MAX_SOCKET_PATH:
        return None
    return found


def peer_uid(sock: _socket.socket) -> int:
    """The user id of the process at the other end of a connected Unix socket."""
    return peer_of(sock).uid


class Peer:
    """The process at the other end of a Unix socket, as the kernel knows it. (No
    ``typing``: the relay's fast path imports this module.)"""

    __slots__ = ("pid", "uid")

    def __init__(self, pid: int, uid: int) -> None:
        self.pid = pid
        self.uid = uid


def peer_of(sock: _socket.socket) -> Peer:
    """The process that connected (or listens at) the other end of a Unix socket."""
    creds = sock.getsockopt(_socket.SOL_SOCKET, _socket.SO_PEERCRED, 12)  # pid, uid, gid
    return Peer(int.from_bytes(creds[0:4], sys.byteorder, signed=True),
                int.from_bytes(creds[4:8], sys.byteorder))
