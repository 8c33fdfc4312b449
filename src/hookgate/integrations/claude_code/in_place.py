"""An event answered in place by the warm process's resident worker (:mod:`.resident`): whose
process it stands for, and the rule for which events may be answered that way.

The resident answers many events at once, each on a thread, in one long-lived process, so
nothing of an event may live in process-wide state: the relay's environment, working
directory and umask are an :class:`EventProcess` held by the event's thread
(:func:`running`), and what runs the event reads them from there (:func:`current`): the
command hook's environment, working directory and umask are given to its subprocess
explicitly. ``os.environ`` itself is, in the resident only, a view that answers each
thread with its own event's environment (:func:`install_environ`), so a lookup made deeper
down (``CLAUDE_PROJECT_DIR``, ``HOME``) sees the event's values too, never another's.

**The rule.** Only a hooks file whose cached definitions (:mod:`.definition_cache`, keyed on
the file's exact bytes) hold no ``callable`` hook runs in place, and only when every hook
of the event runs without the engine (command hooks without ``state``). Anything else raises
:class:`NeedsFork` before any hook ran: a ``callable`` hook imports the user's modules, which
must be imported fresh for each event (an edited module takes effect on the next one) and
never into a process that serves other projects; a hooks file that is not in the cache yet
(new, or just edited) is validated in a fork too (its validation imports ``callable``
targets). The resident then hands the event to a forked worker of the warm process (for a
hooks file with ``callable`` hooks, the worker kept for that file and project when there is
one: :mod:`.file_worker`).
"""

from __future__ import annotations

import os
from _collections_abc import Iterator, MutableMapping
from _thread import _local as _ThreadLocal

TYPE_CHECKING = False
if TYPE_CHECKING:
    from types import TracebackType

    from hookgate.handlers.subprocess.spare_shell import SpareShells

__all__ = ["EventProcess", "NeedsFork", "current", "install_environ", "keep_spare_shells",
           "read_whole", "refill_spare_shells", "running", "spare_shells"]


class NeedsFork(BaseException):
    """The event must run in a forked worker; none of its hooks has run.

    A ``BaseException``: the fail-closed handlers around a run (``except Exception``) must
    not turn it into the agent's deny."""


class EventProcess:
    """The relay's process as the event's hooks must see it. (No dataclass, no
    ``threading``: :mod:`.main` imports this module on the path that must start fast.)"""

    __slots__ = ("cwd", "environ", "files", "umask")

    def __init__(self, environ: dict[str, str], cwd: str, umask: int) -> None:
        self.environ = environ
        self.cwd = cwd
        self.umask = umask
        #: Files the event read, by the path it named: (real path, bytes). One event reads
        #: its hooks file once, however many steps ask for it.
        self.files: dict[str, tuple[str, bytes]] = {}

    def directory(self, configured: str | None) -> str:
        """Where a command runs: its configured ``cwd`` (relative to the relay's) or the
        relay's."""
        return os.path.join(self.cwd, configured) if configured else self.cwd


_local = _ThreadLocal()


def current() -> EventProcess | None:
    """The event this thread answers in place, or ``None`` (a process of its own or a fork,
    where ``os.environ`` and the working directory are the relay's)."""
    found: EventProcess | None = getattr(_local, "event", None)
    return found


class running:
    """The current thread answers ``event`` inside the ``with`` block."""

    __slots__ = ("event",)

    def __init__(self, event: EventProcess) -> None:
        self.event = event

    def __enter__(self) -> EventProcess:
        _local.event = self.event
        return self.event

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        _local.event = None


class _EventEnviron(MutableMapping[str, str]):
    """``os.environ`` in the resident: the current event's environment on an event's
    thread, the process's own elsewhere. A write on an event's thread stays in a copy of
    that event's (never in the process's)."""

    def __init__(self, own: MutableMapping[str, str]) -> None:
        self._own = own

    def _target(self) -> MutableMapping[str, str]:
        event = current()
        return self._own if event is None else event.environ

    def __getitem__(self, key: str) -> str:
        return self._target()[key]

    def __setitem__(self, key: str, value: str) -> None:
        self._target()[key] = value

    def __delitem__(self, key: str) -> None:
        del self._target()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(list(self._target()))

    def __len__(self) -> int:
        return len(self._target())

    def copy(self) -> dict[str, str]:
        return dict(self._target())


def install_environ() -> None:
    """Make ``os.environ`` the per-event view (the resident does this once, at its start)."""
    if not isinstance(os.environ, _EventEnviron):
        # not to change the environment: to answer each event's thread with its own
        os.environ = _EventEnviron(os.environ)  # type: ignore[assignment]  # noqa: B003


#: The resident's shells started ahead of the command hooks they will run (see
#: :mod:`hookgate.handlers.subprocess.spare_shell`); none elsewhere.
_spares: list[SpareShells] = []


def keep_spare_shells() -> None:
    """Keep spare shells for the events answered in place (the resident, at its start)."""
    from hookgate.handlers.subprocess.spare_shell import SpareShells

    if not _spares:
        _spares.append(SpareShells())
        _spares[0].refill()


def spare_shells() -> SpareShells | None:
    """The spare shells, for an event answered in place."""
    return _spares[0] if _spares and current() is not None else None


def refill_spare_shells() -> None:
    """Replace the spares events took (after an answer: off every event's path)."""
    if _spares:
        _spares[0].refill()


def read_whole(path: str) -> bytes:
    """A whole file in plain system calls, no buffered file object: what an event reads
    (its relay's ``/proc`` files, its hooks file), where each call counts."""
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        chunks = []
        while chunk := os.read(fd, 1 << 16):
            chunks.append(chunk)
    finally:
        os.close(fd)
    return b"".join(chunks)
