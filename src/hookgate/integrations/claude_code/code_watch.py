"""Whether hookgate's code may have changed since a long-lived process started, in one
system call per event.

The warm process's resident must never answer an event with code older than what is
installed (an upgrade, an edited checkout): before each event it compared the time stamp and
size of every hookgate module it had loaded, some fifty ``stat`` calls, about a quarter of
what an event without hooks costs it. Linux's inotify tells the same thing at once: a watch on
each folder holding those modules reports any write, attribute change, creation, removal or
rename in it, and reading the watch without blocking says whether anything happened. Only
then are the stamps compared (a ``__pycache__`` written beside is no change).

Where inotify cannot be had (not Linux, no watches left), :meth:`CodeWatch.maybe_changed`
is always ``True``: every event compares the stamps, as before.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
from collections.abc import Iterable
from typing import Final

__all__ = ["CodeWatch"]

# linux/inotify.h
_IN_MODIFY: Final = 0x002
_IN_ATTRIB: Final = 0x004
_IN_CLOSE_WRITE: Final = 0x008
_IN_MOVED_FROM: Final = 0x040
_IN_MOVED_TO: Final = 0x080
_IN_CREATE: Final = 0x100
_IN_DELETE: Final = 0x200
_IN_DELETE_SELF: Final = 0x400
_IN_MOVE_SELF: Final = 0x800
_IN_NONBLOCK: Final = 0o4000
_IN_CLOEXEC: Final = 0o2000000
_CHANGES: Final = (_IN_MODIFY | _IN_ATTRIB | _IN_CLOSE_WRITE | _IN_MOVED_FROM | _IN_MOVED_TO
                   | _IN_CREATE | _IN_DELETE | _IN_DELETE_SELF | _IN_MOVE_SELF)


class CodeWatch:
    """A non-blocking inotify watch on the folders of ``files``."""

    __slots__ = ("_fd", "_first", "_folders")

    def __init__(self, files: Iterable[str]) -> None:
        self._fd: int | None = None
        self._folders: set[str] = set()
        #: The stamps were taken before the watch began: the first call says "compare".
        self._first = True
        with contextlib.suppress(OSError, AttributeError, ValueError):
            self._fd = _new_watch()
        self.add(files)

    def add(self, files: Iterable[str]) -> None:
        """Watch the folders of ``files`` too (modules imported since); the next call says
        "compare", since they were stamped before their watch began."""
        folders = {os.path.dirname(os.path.abspath(path)) for path in files} - self._folders
        if self._fd is None or not folders:
            return
        self._first = True
        for folder in sorted(folders):
            if _LIBC.inotify_add_watch(self._fd, os.fsencode(folder), _CHANGES) < 0:
                self.close()  # a folder we cannot watch: no promise at all
                return
            self._folders.add(folder)

    def maybe_changed(self) -> bool:
        """Something in a watched folder changed since the last call (or nothing can be
        known): the caller compares its stamps."""
        if self._fd is None:
            return True
        changed, self._first = self._first, False
        try:
            while os.read(self._fd, 65536):  # drain: one change answers for all
                changed = True
        except BlockingIOError:
            return changed
        except OSError:
            self.close()
            return True
        return True  # the watch ended (read returned nothing)

    def close(self) -> None:
        if self._fd is not None:
            with contextlib.suppress(OSError):
                os.close(self._fd)
            self._fd = None


#: The C library Python itself runs on (inotify has no wrapper in ``os``).
_LIBC: Final = ctypes.CDLL(None, use_errno=True)


def _new_watch() -> int | None:
    fd = int(_LIBC.inotify_init1(_IN_NONBLOCK | _IN_CLOEXEC))
    return fd if fd >= 0 else None
