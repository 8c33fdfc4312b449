"""The hook sandbox: hook programs (command and process hooks, command gates) run under
bubblewrap, so a hook author's program cannot read the gateway's secrets.

``hookgate serve --hook-sandbox auto|bwrap|off`` (default ``auto``; the library and the CLIs
default to ``off``: there the hooks are the user's own). Under the sandbox a program gets:

* its own PID namespace: no view of the gateway's processes (``/proc/$PPID/environ`` is the
  sandbox's init, which holds only the allowlisted environment);
* the paths in ``hidden`` (the data directory, the key file) replaced by an empty directory
  or an empty file;
* only the environment it is started with (bubblewrap itself inherits nothing else);
* its working directory writable, the rest of the file system read-only.

It does not restrict the network, CPU or memory, and read-only files outside ``hidden``
stay readable: see docs/security.md.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final, Literal

from hookgate.errors import HookgateError

__all__ = [
    "BWRAP",
    "MODES",
    "NO_SANDBOX",
    "Sandbox",
    "SandboxUnavailable",
    "find_bwrap",
    "resolve_sandbox",
]

Mode = Literal["auto", "bwrap", "off"]
MODES: Final = ("auto", "bwrap", "off")
#: Where Debian's ``bubblewrap`` package installs it.
BWRAP: Final = "/usr/bin/bwrap"


class SandboxUnavailable(HookgateError, RuntimeError):
    """``--hook-sandbox bwrap`` was asked for and bubblewrap is not installed."""


def find_bwrap() -> str | None:
    """The bubblewrap executable on ``PATH``, or None when it is not installed."""
    import shutil  # only when a sandbox is asked for: the CLI's start-up stays light

    return shutil.which("bwrap")


@dataclass(frozen=True, slots=True)
class Sandbox:
    """How hook programs are started: directly (``program`` None) or under bubblewrap."""

    program: str | None = None
    hidden: tuple[str, ...] = ()

    @property
    def active(self) -> bool:
        return self.program is not None

    def wrap(self, argv: Sequence[str], cwd: str | None) -> list[str]:
        """The command line that runs ``argv`` in ``cwd`` (None: hookgate's own working
        directory) inside the sandbox; ``argv`` unchanged when the sandbox is off.

        Raises OSError when ``cwd`` is missing or lies inside a hidden path (the program
        could not run there), so callers report it like a failed start.
        """
        if self.program is None:
            return list(argv)
        workdir = os.path.realpath(cwd or os.getcwd())
        if not os.path.isdir(workdir):
            raise FileNotFoundError(2, "No such directory", workdir)
        hidden = _existing(self.hidden)
        for path in hidden:
            if workdir == path or workdir.startswith(path.rstrip("/") + "/"):
                raise PermissionError(13, "the hook's directory is inside hookgate's data", cwd)
        args = [
            self.program,
            "--ro-bind", "/", "/",
            "--dev", "/dev",
            "--proc", "/proc",
            "--unshare-pid",
            # No capabilities, even when hookgate runs as root: with CAP_SYS_ADMIN a program
            # could unmount what hides the data directory.
            "--cap-drop", "ALL",
            "--die-with-parent",
            # A new session: the program cannot reach a terminal hookgate may have.
            "--new-session",
            "--bind", workdir, workdir,
        ]
        for path in hidden:
            if os.path.isdir(path):
                args += ["--tmpfs", path]
            else:
                args += ["--ro-bind", "/dev/null", path]
        args += ["--chdir", workdir, "--", *argv]
        return args


NO_SANDBOX: Final = Sandbox()


def _existing(paths: Sequence[str]) -> list[str]:
    # Resolved, so a symlinked data directory is hidden where it really is.
    return sorted({os.path.realpath(p) for p in paths if p and os.path.exists(p)})


@functools.lru_cache(maxsize=16)
def resolve_sandbox(mode: str, hidden: tuple[str, ...] = ()) -> Sandbox:
    """The sandbox for a ``--hook-sandbox`` mode. ``auto``: bubblewrap when installed, else
    none; ``bwrap``: bubblewrap or :class:`SandboxUnavailable`; ``off``: none."""
    if mode == "off":
        return NO_SANDBOX
    program = find_bwrap()
    if program is None:
        if mode == "bwrap":
            raise SandboxUnavailable(
                "--hook-sandbox bwrap: bubblewrap is not installed (Debian/Ubuntu: "
                "apt-get install bubblewrap)"
            )
        return NO_SANDBOX
    if mode not in MODES:
        raise ValueError(f"hook sandbox must be one of {', '.join(MODES)}, got {mode!r}")
    return Sandbox(program=program, hidden=tuple(hidden))
