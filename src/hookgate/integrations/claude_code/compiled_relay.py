"""The compiled shell relay (``relay.c``): ``relay.bash``'s program without bash's start.

Starting bash and reading a script costs about as much again as a bare ``sh`` hook, which
left the relay no room to stay within twice a bare hook. ``hookgate <agent> install`` builds
``relay.c`` with the system's C compiler into hookgate's own package folder, beside
``relay.bash`` (``relay-bin-<digest of the source>``), and the installed command is that
binary with ``relay.bash``'s arguments: no shell code around it (an agent's ``bash -c`` takes
functions named like ``exec`` or ``[`` from a project's environment), and a file that lives as
long as hookgate itself, as ``relay.bash`` does (a binary in a cache folder, once cleared,
would make every event's command "not found": exit 127, which Claude Code and Codex take for
"go ahead"). A package folder the user cannot write (a system-wide install) or a machine
without a C compiler keeps ``relay.bash`` (the command ``install`` writes shows which).

The build is written beside and renamed over, so a command never finds half a binary; a new
source gets a new name, so an upgrade never changes a binary under a running command.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import stat
import subprocess
import tempfile
from typing import Final

__all__ = ["SOURCE", "binary_path", "build", "compiler"]

_HERE: Final = os.path.dirname(os.path.abspath(__file__))
#: Where the compiler is looked for, and the build's ``PATH``: the system's folders, never
#: the caller's ``PATH`` (a project's ``bin/`` or a direnv would put its own ``cc`` first).
SYSTEM_PATH: Final = "/usr/local/bin:/usr/bin:/bin"
SOURCE: Final = os.path.join(_HERE, "relay.c")
#: Static when the C library allows it (no dynamic loader: nothing of the event's
#: environment, LD_PRELOAD included, is read before main), else the usual dynamic link.
_FLAG_SETS: Final = (("-O2", "-static"), ("-O2",))
_BUILD_TIMEOUT_S: Final = 60


def binary_path(folder: str = _HERE) -> str:
    """Where the binary for this source lives: beside ``relay.bash`` (``folder``: elsewhere,
    for tests)."""
    with open(SOURCE, "rb") as source:
        digest = hashlib.sha256(source.read()).hexdigest()[:16]
    return os.path.join(folder, f"relay-bin-{digest}")


def _usable(path: str) -> bool:
    """A built binary: a regular file, executable, not writable by others."""
    try:
        found = os.lstat(path)
    except OSError:
        return False
    return stat.S_ISREG(found.st_mode) and os.access(path, os.X_OK) \
        and found.st_mode & 0o022 == 0


def compiler(search_path: str = SYSTEM_PATH) -> str | None:
    for name in ("cc", "gcc", "clang"):
        found = shutil.which(name, path=search_path)
        if found:
            return found
    return None


def _private(folder: str) -> bool:
    """A folder only its owner can write (hookgate's package folder, normally)."""
    try:
        found = os.stat(folder)
    except OSError:
        return False
    return os.access(folder, os.W_OK) and found.st_mode & 0o022 == 0


def build(folder: str = _HERE, search_path: str = SYSTEM_PATH) -> str | None:
    """The binary's path, built now if need be; ``None`` when it cannot be (no C compiler,
    the build failed, hookgate's folder not writable, or writable by others too): the
    command then runs ``relay.bash``. ``folder``, ``search_path``: elsewhere, for tests."""
    target = binary_path(folder)
    if _usable(target):
        return target
    cc = compiler(search_path)
    if cc is None or not _private(folder):
        return None
    for flags in _FLAG_SETS:
        try:
            fd, temporary = tempfile.mkstemp(prefix=".relay-", dir=folder)
        except OSError:
            return None
        os.close(fd)
        try:
            done = subprocess.run([cc, *flags, "-o", temporary, SOURCE], capture_output=True,
                                  timeout=_BUILD_TIMEOUT_S, check=False,
                                  env={"PATH": search_path, "LC_ALL": "C"})
            if done.returncode == 0:
                os.chmod(temporary, 0o755)
                os.rename(temporary, target)
                return target
        except (OSError, subprocess.SubprocessError):
            pass
        finally:
            if os.path.exists(temporary):
                os.unlink(temporary)
    return None
