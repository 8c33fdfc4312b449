"""The git pre-push guard: a tracked ``hooks/pre-push`` that runs ``hookgate pre-push run``.

The hook lives in the repository (``hooks/``), not in ``.git/hooks``, so every clone gets
it; ``git config core.hooksPath hooks`` switches it on.
"""

from __future__ import annotations

import shlex
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from hookgate.errors import HookgateError

__all__ = ["HOOK_MARKER", "InstallError", "Installed", "hook_script", "install"]

HOOK_MARKER: Final = "# hookgate pre-push guard"
HOOKS_DIR: Final = "hooks"


class InstallError(HookgateError, RuntimeError):
    """The hook cannot be installed without overwriting something that is not ours."""


@dataclass(frozen=True, slots=True)
class Installed:
    path: Path
    hooks_path_was: str | None


def hook_script(policy: str | None, fail_on: str | None) -> str:
    args = ["pre-push", "run"]
    if policy:
        args += ["--policy", policy]
    if fail_on:
        args += ["--fail-on", fail_on]
    command = " ".join(shlex.quote(arg) for arg in args)
    return f"""#!/bin/sh
{HOOK_MARKER} (written by `hookgate pre-push install`; commit it with the repository).
# Scans exactly the commits being pushed and blocks the push when the policy finds something.
# Switch it on once per clone:   git config core.hooksPath hooks
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


def install(cwd: Path, *, policy: str | None = None, fail_on: str | None = None,
            force: bool = False) -> Installed:
    """Write ``hooks/pre-push`` at the top of the work tree and set ``core.hooksPath``."""
    top = Path(_git(cwd, "rev-parse", "--show-toplevel"))
    target = top / HOOKS_DIR / "pre-push"
    if target.exists() and HOOK_MARKER not in target.read_text(errors="replace") and not force:
        raise InstallError(f"{target} exists and was not written by hookgate; "
                           "merge it by hand or pass --force to replace it")
    try:
        hooks_path: str | None = _git(top, "config", "--get", "core.hooksPath")
    except InstallError:
        hooks_path = None
    if hooks_path not in (None, HOOKS_DIR, f"{HOOKS_DIR}/") and not force:
        raise InstallError(f"core.hooksPath is already {hooks_path!r}; hooks there would stop "
                           "running. Pass --force to switch it to 'hooks'")
    if policy and not (top / policy).is_file():
        raise InstallError(f"policy file {policy!r} not found under {top} (give it relative "
                           "to the repository root so every clone finds it)")
    target.parent.mkdir(exist_ok=True)
    target.write_text(hook_script(policy, fail_on))
    target.chmod(0o755)
    _git(top, "config", "core.hooksPath", HOOKS_DIR)
    return Installed(target, hooks_path)
