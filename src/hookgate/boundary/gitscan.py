"""Scan what a set of commits adds: the ``+`` lines of every commit, file by file.

Scanning the added lines of each commit (not only the tip's tree) catches a secret that one
commit adds and a later one removes: it is still in the history being pushed.
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

from hookgate.boundary.scanner import Scanner, ScanReport, Skipped
from hookgate.errors import HookgateError

__all__ = ["GitError", "PushedRef", "parse_pre_push", "push_revisions", "scan_revisions"]

ZERO_SHA: Final = "0" * 40
_HUNK_PREFIX: Final = b"@@ "
_COMMIT_PREFIX: Final = b"\0commit "


class GitError(HookgateError, RuntimeError):
    """git failed or was given something it does not understand."""


def _git(cwd: str | Path, *args: str) -> bytes:
    try:
        done = subprocess.run(["git", "-c", "core.quotePath=false", *args], cwd=cwd,
                              capture_output=True, check=False)
    except OSError as exc:
        raise GitError(f"cannot run git: {exc}") from None
    if done.returncode != 0:
        message = done.stderr.decode("utf-8", "replace").strip() or f"exit {done.returncode}"
        raise GitError(f"git {' '.join(args[:3])}: {message}")
    return done.stdout


@dataclass(slots=True)
class _FileAdditions:
    commit: str
    path: str
    lines: list[bytes] = field(default_factory=list)
    numbers: list[int] = field(default_factory=list)
    size: int = 0
    binary: bool = False


def _unquote(path: bytes) -> str:
    """git C-quotes odd paths ("a\\tb"); undo the quoting."""
    if not path.startswith(b'"'):
        return path.decode("utf-8", "surrogateescape")
    return path[1:-1].decode("unicode_escape").encode("latin-1").decode("utf-8", "replace")


def _strip_side(name: str) -> str:
    return name[2:] if name.startswith("b/") else name


def _parse_log(output: bytes) -> list[_FileAdditions]:
    files: list[_FileAdditions] = []
    commit = ""
    current: _FileAdditions | None = None
    in_header = False  # between "diff --git" and the first hunk, "+++" is a header line
    next_line = 0
    for line in output.split(b"\n"):
        if line.startswith(_COMMIT_PREFIX):
            commit = line[len(_COMMIT_PREFIX):].decode("ascii").strip()
            current, in_header = None, False
        elif line.startswith(b"diff --git "):
            current, in_header = None, True
        elif in_header and line.startswith(b"+++ "):
            target = line[4:]
            if target != b"/dev/null":
                current = _FileAdditions(commit, _strip_side(_unquote(target)))
                files.append(current)
        elif in_header and line.startswith(b"Binary files ") and line.endswith(b" differ"):
            target = line.rsplit(b" and ", 1)[-1][: -len(b" differ")]
            if target != b"/dev/null":
                files.append(_FileAdditions(commit, _strip_side(_unquote(target)), binary=True))
        elif line.startswith(_HUNK_PREFIX):
            in_header = False
            new_part = line.split(b" +", 1)[1].split(b" ", 1)[0]
            next_line = int(new_part.split(b",", 1)[0])
        elif not in_header and current is not None and line.startswith(b"+"):
            current.lines.append(line[1:])
            current.numbers.append(next_line)
            current.size += len(line)
            next_line += 1
    return files


def scan_revisions(scanner: Scanner, revisions: list[str], cwd: str | Path = ".") -> ScanReport:
    """Scan the lines added by the commits ``git rev-list REVISIONS`` names."""
    report = ScanReport()
    if not revisions:
        return report
    output = _git(cwd, "log", "--no-color", "--no-ext-diff", "--no-textconv", "--no-renames",
                  "-p", "-U0", "--format=%x00commit %H", *revisions, "--")
    limit = scanner.policy.max_file_bytes
    for item in _parse_log(output):
        label = f"{item.commit[:12]}:{item.path}"
        if item.binary:
            report.skipped.append(Skipped(label, "binary"))
            continue
        if item.size > limit:
            report.skipped.append(Skipped(label, f"adds more than {limit} bytes ({item.size})"))
            continue
        if not item.lines or scanner.policy.path_fully_allowed(item.path):
            continue
        report.scanned += 1
        report.findings.extend(scanner.scan_bytes(b"\n".join(item.lines), item.path,
                                                  line_map=item.numbers, commit=item.commit))
    return report


@dataclass(frozen=True, slots=True)
class PushedRef:
    local_ref: str
    local_sha: str
    remote_ref: str
    remote_sha: str


def parse_pre_push(stdin: str) -> list[PushedRef]:
    """The lines git writes to a pre-push hook: ``<local ref> <sha> <remote ref> <sha>``."""
    refs = []
    for number, line in enumerate(stdin.splitlines(), 1):
        if not line.strip():
            continue
        parts = line.split()
        if len(parts) != 4:
            raise GitError(f"pre-push input line {number} is not '<ref> <sha> <ref> <sha>'")
        refs.append(PushedRef(*parts))
    return refs


def push_revisions(ref: PushedRef, remote: str, cwd: str | Path = ".") -> list[str]:
    """The rev-list arguments for the commits this ref update sends to ``remote``."""
    if set(ref.local_sha) == {"0"}:
        return []  # a deletion sends no commits
    if set(ref.remote_sha) != {"0"} and _known_commit(ref.remote_sha, cwd):
        return [f"{ref.remote_sha}..{ref.local_sha}"]
    # A new branch (or a remote tip we never fetched): what no remote-tracking ref has yet.
    return [ref.local_sha, "--not", f"--remotes={remote}"]


def _known_commit(sha: str, cwd: str | Path) -> bool:
    try:
        _git(cwd, "cat-file", "-e", f"{sha}^{{commit}}")
    except GitError:
        return False
    return True
