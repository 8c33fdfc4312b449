"""The git pre-push guard: one hook in the repository's own hooks directory.

The hook goes where git keeps hooks for this repository (``git rev-parse --git-path
hooks``, normally ``.git/hooks``), which no commit can change. It never points git at a
folder of the work tree: with ``core.hooksPath`` on a tracked folder, every branch you
check out, pull or rebase onto decides which programs git runs (a ``post-checkout`` added by
a pull request runs on ``git checkout``). What the hook runs is ``hookgate pre-push run``
with the policy file the repository tracks: data read at push time, not code, and pinned by
its SHA-256 at install, so a branch that edits the policy cannot loosen the guard that scans
it (a changed policy blocks the push until ``install`` is run again).
"""

from __future__ import annotations

import hashlib
import shlex
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from hookgate.errors import HookgateError

__all__ = [
    "HOOK_MARKER",
    "InstallError",
    "Installed",
    "Uninstalled",
    "hook_script",
    "install",
    "tracked_hooks_path",
    "uninstall",
]

HOOK_MARKER: Final = "# hookgate pre-push guard"
#: Where ``install`` keeps a pre-push hook it replaced (``--force``), for ``uninstall``.
SAVED_SUFFIX: Final = ".before-hookgate"
#: The tracked folder older releases pointed ``core.hooksPath`` at.
OLD_HOOKS_DIR: Final = "hooks"


class InstallError(HookgateError, RuntimeError):
    """The hook cannot be installed (or removed) without breaking something that is not ours."""


@dataclass(frozen=True, slots=True)
class Installed:
    path: Path
    #: The ``core.hooksPath`` that was removed (it pointed into the work tree), if any.
    hooks_path_removed: str | None
    #: Where a pre-push hook that was there before was kept, if any.
    saved: Path | None
    #: A tracked hook file of the old layout that is now unused, if any.
    stale_tracked_hook: Path | None


@dataclass(frozen=True, slots=True)
class Uninstalled:
    path: Path
    restored: Path | None


def hook_script(policy: str | None, fail_on: str | None,
                policy_sha256: str | None = None) -> str:
    args = ["pre-push", "run"]
    if policy:
        args += ["--policy", policy]
    if policy_sha256:
        args += ["--policy-sha256", policy_sha256]
    if fail_on:
        args += ["--fail-on", fail_on]
    command = " ".join(shlex.quote(arg) for arg in args)
    return f"""#!/bin/sh
{HOOK_MARKER} (written by `hookgate pre-push install`; `hookgate pre-push uninstall` removes it).
# Scans exactly the commits being pushed and blocks the push when the policy finds something
# or cannot scan something. It lives in the repository's own hooks directory, which no
# commit can change. The policy file it names is read from the work tree at push time and
# must still be the one install approved (its SHA-256 below): a branch cannot weaken it.
# Bypass: git push --no-verify   (only when you know exactly what you are letting through)
HOOKGATE="${{HOOKGATE:-hookgate}}"
if ! command -v "$HOOKGATE" >/dev/null 2>&1; then
    echo "pre-push: '$HOOKGATE' was not found, so this push cannot be scanned; it is blocked." >&2
    echo "pre-push: install hookgate (pip install hookgate), or set HOOKGATE=/path/to/hookgate." >&2
    echo "pre-push: 'git push --no-verify' bypasses this hook; use it only when you know" >&2
    echo "pre-push: exactly what you are pushing." >&2
    exit 1
fi
exec "$HOOKGATE" {command} "$@"
"""


def _git(cwd: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise InstallError(done.stderr.strip() or f"git {' '.join(args)} failed")
    return done.stdout.strip()


def _config(cwd: Path, *scope: str) -> str | None:
    done = subprocess.run(["git", "config", *scope, "--get", "core.hooksPath"], cwd=cwd,
                          capture_output=True, text=True, check=False)
    return done.stdout.strip() or None if done.returncode == 0 else None


def _top(cwd: Path) -> Path:
    return Path(_git(cwd, "rev-parse", "--show-toplevel"))


def tracked_hooks_path(cwd: Path) -> str | None:
    """``core.hooksPath`` when it points into the work tree (where a branch decides what git
    runs), else None."""
    value = _config(cwd)
    if value is None:
        return None
    top = _top(cwd).resolve()
    resolved = (top / Path(value).expanduser()).resolve()
    return value if resolved == top or top in resolved.parents else None


def _hooks_dir(top: Path) -> Path:
    return Path(_git(top, "rev-parse", "--path-format=absolute", "--git-path", "hooks"))


def _is_ours(path: Path) -> bool:
    return path.is_file() and HOOK_MARKER in path.read_text(errors="replace")


def _clear_hooks_path(top: Path, force: bool) -> str | None:
    """Remove a ``core.hooksPath`` so that git runs the repository's own hooks."""
    value = _config(top)
    if value is None:
        return None
    inside = tracked_hooks_path(top) is not None
    old_layout = value.rstrip("/") == OLD_HOOKS_DIR and _is_ours(top / OLD_HOOKS_DIR / "pre-push")
    if not old_layout and not force:
        why = ("it points into the work tree, so every branch you check out decides which "
               "programs git runs" if inside else
               "git runs hooks only from there, never from the repository's own hooks directory")
        raise InstallError(
            f"core.hooksPath is {value!r}: {why}. hookgate installs its hook in the "
            "repository's own hooks directory; pass --force to remove core.hooksPath (hooks "
            f"in {value!r} stop running), or run 'hookgate pre-push run' from a pre-push hook "
            "there yourself")
    if _config(top, "--local") is not None:
        _git(top, "config", "--local", "--unset-all", "core.hooksPath")
    remaining = _config(top)
    if remaining is not None:
        raise InstallError(f"core.hooksPath is {remaining!r} in your global or system git "
                           "configuration; remove it there (git config --global --unset "
                           "core.hooksPath), then install again")
    return value


def install(cwd: Path, *, policy: str | None = None, fail_on: str | None = None,
            force: bool = False) -> Installed:
    """Write the pre-push hook into the repository's own hooks directory."""
    top = _top(cwd)
    if policy and not (top / policy).is_file():
        raise InstallError(f"policy file {policy!r} not found under {top} (give it relative "
                           "to the repository root so every clone finds it)")
    digest = hashlib.sha256((top / policy).read_bytes()).hexdigest() if policy else None
    removed = _clear_hooks_path(top, force)
    hooks = _hooks_dir(top)
    target = hooks / "pre-push"
    saved: Path | None = None
    if target.exists() and not _is_ours(target):
        if not force:
            raise InstallError(f"{target} exists and was not written by hookgate; merge it by "
                               "hand or pass --force to replace it (it is kept for uninstall)")
        saved = target.with_name(target.name + SAVED_SUFFIX)
        target.replace(saved)
    hooks.mkdir(parents=True, exist_ok=True)
    target.write_text(hook_script(policy, fail_on, digest))
    target.chmod(0o755)
    stale = top / OLD_HOOKS_DIR / "pre-push"
    return Installed(target, removed, saved, stale if _is_ours(stale) else None)


def uninstall(cwd: Path) -> Uninstalled:
    """Remove hookgate's pre-push hook; put back the hook it replaced, if any."""
    top = _top(cwd)
    target = _hooks_dir(top) / "pre-push"
    if not _is_ours(target):
        raise InstallError(f"no hookgate pre-push hook at {target}")
    target.unlink()
    saved = target.with_name(target.name + SAVED_SUFFIX)
    if saved.exists():
        saved.replace(target)
        return Uninstalled(target, target)
    return Uninstalled(target, None)
