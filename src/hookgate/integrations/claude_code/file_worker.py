"""A forked worker kept for one hooks file with ``callable`` hooks: later events of the same
file and project are answered by it, one at a time, without a fork each.

A forked worker (:mod:`.warm`) that answered an event the resident handed over stays alive
when the event's hooks file holds ``callable`` hooks. It listens on a socket of its own in
the warm process's folder, named after the event's :func:`file_key`: the agent, the hooks
file's path and exact bytes, the relay's working directory and ``CLAUDE_PROJECT_DIR``. The
resident (:mod:`.resident`) sends an event there when its key names that socket and no
other event of that key is under way; anything else goes to a fresh fork as before.

The worker checks everything itself before it takes an event (the resident only routes):
the peer is this user, the client token is the relay's, the event's key is the worker's
(never another project's or another file's), hookgate's code and every module file imported
since the worker's fork are unchanged (:class:`ModuleStamps`). A changed or vanished module
file, or a hookgate update, and it refuses (nothing ran: the resident hands the event to a
fresh fork) and exits. It exits after ``IDLE_S`` without an event, when its socket file is
gone, and with the warm process.

What persists between the events of one file: the user's modules and their globals (as in
the library and the gateway). ``os.environ``, the working directory and umask are the
event's, set for each one, as a fresh fork sets them.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import socket
import sys
from typing import TYPE_CHECKING, Final

from hookgate.integrations.claude_code.code_watch import CodeWatch

if TYPE_CHECKING:
    from collections.abc import Mapping

    from hookgate.integrations.claude_code.startup import BridgeArgs

__all__ = ["IDLE_S", "ModuleStamps", "file_key", "has_callables", "listen", "socket_path"]

#: A worker this long without an event exits.
IDLE_S: Final = 600.0

_Stamp = tuple[int, int, int, int, bytes]


def file_key(agent: str, args: BridgeArgs, environ: Mapping[str, str], cwd: str) -> str | None:
    """The key of the event's hooks file and project, or ``None`` (no per-file worker: no
    hooks file named, a gateway, an unreadable file)."""
    if args.gateway or environ.get("HOOKGATE_GATEWAY_URL"):
        return None
    config = args.config or environ.get(f"HOOKGATE_{agent.upper().replace('-', '_')}_CONFIG")
    if not config or not os.path.isabs(cwd):
        return None
    config = os.path.join(cwd, config)
    try:
        with open(config, "rb") as file:
            content = file.read()
    except OSError:
        return None
    digest = hashlib.sha256()
    for part in (agent, config, cwd, environ.get("CLAUDE_PROJECT_DIR", "")):
        digest.update(os.fsencode(part) + b"\0")
    digest.update(hashlib.sha256(content).digest())
    return digest.hexdigest()


def has_callables(agent: str, args: BridgeArgs, environ: Mapping[str, str], cwd: str) -> bool:
    """The event's hooks file is cached, with ``callable`` hooks."""
    from hookgate.integrations.claude_code.definition_cache import edition_of, read_entry

    config = args.config or environ.get(f"HOOKGATE_{agent.upper().replace('-', '_')}_CONFIG")
    if not config:
        return False
    entry = read_entry(os.path.join(cwd, config), edition=edition_of(environ), environ=environ)
    return entry is not None and entry.has_callables


def socket_path(warm_path: str, key: str) -> str:
    """The worker's socket for ``key`` (16 hex digits: a path must stay short; the worker
    checks the whole key itself)."""
    return warm_path.removesuffix(".sock") + f".file-{key[:16]}"


def listen(path: str, backlog: int = 8) -> tuple[socket.socket, int] | None:
    """A listening socket at ``path`` (0600, bound beside and linked into place) and its
    inode; ``None`` when a live process holds it or it cannot be bound."""
    temporary = f"{path}.{os.getpid()}"
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temporary)
        old = os.umask(0o177)
        try:
            listener.bind(temporary)
        finally:
            os.umask(old)
        listener.listen(backlog)
        try:
            os.link(temporary, path)
        except FileExistsError:
            if _alive(path):
                raise
            with contextlib.suppress(FileNotFoundError):
                os.unlink(path)
            os.link(temporary, path)
        return listener, os.lstat(path).st_ino
    except OSError:
        listener.close()
        return None
    finally:
        with contextlib.suppress(OSError):
            os.unlink(temporary)


def _alive(path: str) -> bool:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
        try:
            probe.connect(path)
        except OSError:
            return False
    return True


class ModuleStamps:
    """The files of the modules imported since the worker's fork, and their size, time
    stamp, inode and device: an edited, replaced or vanished file shows as a change."""

    def __init__(self, before: set[str]) -> None:
        self.known = set(before)
        self.stamps: dict[str, _Stamp | None] = {}
        #: Their folders watched (made at the first record: the per-file worker's own).
        self.watch: CodeWatch | None = None

    def record(self) -> None:
        """Stamp the modules imported since the last call (after each event)."""
        new = []
        for name, module in list(sys.modules.items()):
            if name in self.known:
                continue
            self.known.add(name)
            path = getattr(module, "__file__", None)
            if isinstance(path, str):
                self.stamps[path] = _stamp(path)
                new.append(path)
        if self.watch is None:
            self.watch = CodeWatch(self.stamps)
        else:
            self.watch.add(new)

    def changed(self) -> bool:
        """A module file changed: compared (each digest read again) only when the watch on
        their folders saw something, or cannot tell."""
        if self.watch is not None and not self.watch.maybe_changed():
            return False
        return any(_stamp(path) != stamp for path, stamp in self.stamps.items())


def _stamp(path: str) -> _Stamp | None:
    """A file's stamp; for the user's own module files (outside Python's and hookgate's
    folders) also its content's digest: a file's time stamp may not move on an edit made
    within the same clock tick as the import."""
    try:
        info = os.stat(path)
        digest = b""
        if not path.startswith(_SYSTEM):
            with open(path, "rb") as file:
                digest = hashlib.sha256(file.read()).digest()
    except OSError:
        return None
    return (info.st_size, info.st_mtime_ns, info.st_ino, info.st_dev, digest)


#: Folders of modules that are not the user's: Python's, its packages' and hookgate's.
_SYSTEM: Final = tuple(
    {
        os.path.join(folder, "")
        for folder in (
            sys.prefix,
            sys.base_prefix,
            sys.exec_prefix,
            os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
        )
    }
)
