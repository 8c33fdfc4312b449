"""Scan what a set of commits adds: the ``+`` lines of every commit, file by file.

Scanning the added lines of each commit (not only the tip's tree) catches a secret that one
commit adds and a later one removes: it is still in the history being pushed.

What the guard sees is what git stores, whatever the repository says about it:

* ``--text --no-textconv --no-ext-diff``: a committed ``.gitattributes`` cannot make a file
  "binary" (``*.env -diff``) or route it through a driver that hides its content; bytes
  with NUL in them are scanned like any others.
* ``--remerge-diff``: a merge commit shows what it adds beyond the automatic merge of its
  parents (an "evil merge"); an octopus merge, which git does not re-merge, shows its diff
  against each parent.
* Every revision comes after ``--end-of-options`` and is checked first: a range is never
  read as an option (``--output=FILE``).
* Added content above the policy's ``max_file_bytes`` is not scanned and is reported as
  unscanned; the pre-push guard blocks on it.

git's output is read as a stream and each file's additions are kept up to that limit only,
so memory stays bounded whatever a commit adds.
"""

from __future__ import annotations

import subprocess
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Final

from hookgate.boundary.scanner import Scanner, ScanReport, Skipped
from hookgate.errors import HookgateError

__all__ = [
    "GitError",
    "PushedRef",
    "Revisions",
    "parse_pre_push",
    "push_revisions",
    "scan_revisions",
    "user_range",
]

ZERO_SHA: Final = "0" * 40
_HUNK_PREFIX: Final = b"@@ "
_COMMIT_PREFIX: Final = b"\0commit "
_READ_CHUNK: Final = 1 << 20
# How git must show a diff for the scan: what is stored, with fixed prefixes and no colour,
# whatever the user's configuration or the repository's attributes say.
_DIFF_OPTIONS: Final = ("--no-color", "--text", "--no-textconv", "--no-ext-diff",
                        "--no-renames", "--no-relative", "--src-prefix=a/", "--dst-prefix=b/",
                        "-p", "-U0", "--format=%x00commit %H")


class GitError(HookgateError, RuntimeError):
    """git failed or was given something it does not understand."""


@dataclass(frozen=True, slots=True)
class Revisions:
    """Which commits to scan: reachable from ``tips``, not from ``excluded``.

    Every entry is a revision git resolves (a sha, a ref, ``A..B``), never an option: the
    values are checked here and handed to git after ``--end-of-options``.
    """

    tips: tuple[str, ...]
    excluded: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        for revision in (*self.tips, *self.excluded):
            _check_revision(revision)

    def arguments(self) -> list[str]:
        return [*self.tips, *(f"^{revision}" for revision in self.excluded)]


def _check_revision(revision: str) -> None:
    unsafe = revision.startswith(("-", "^-")) or any(char in revision for char in "\0\n\r")
    if not revision or unsafe:
        raise GitError(f"{revision!r} is not a revision or range")


def user_range(text: str) -> Revisions:
    """A ``--git-range`` as the user wrote it (``A..B``, ``A...B``, a ref), checked."""
    _check_revision(text)
    return Revisions((text,))


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
    limit: int
    lines: list[bytes] = field(default_factory=list)
    numbers: list[int] = field(default_factory=list)
    size: int = 0

    @property
    def oversized(self) -> bool:
        return self.size > self.limit

    def add(self, line: bytes, number: int) -> None:
        self.size += len(line) + 1
        if self.oversized:
            self.lines.clear()  # it will not be scanned: keep no more of it
            self.numbers.clear()
            return
        self.lines.append(line)
        self.numbers.append(number)


def _unquote(path: bytes) -> str:
    """git C-quotes odd paths ("a\\tb"); undo the quoting."""
    if not path.startswith(b'"'):
        return path.decode("utf-8", "surrogateescape")
    return path[1:-1].decode("unicode_escape").encode("latin-1").decode("utf-8", "replace")


def _strip_side(name: str) -> str:
    return name[2:] if name.startswith("b/") else name


def _lines(stream: IO[bytes], cap: int) -> Iterator[bytes]:
    """Lines of ``stream`` without their newline; a line longer than ``cap`` is cut to
    ``cap + 1`` bytes (enough to tell it is too long) and the rest of it is read and dropped."""
    while True:
        line = stream.readline(_READ_CHUNK)
        if not line:
            return
        if line.endswith(b"\n"):
            yield line[:-1]
            continue
        kept, size = [line], len(line)
        while not line.endswith(b"\n"):  # the rest of a long line, kept only up to the cap
            line = stream.readline(_READ_CHUNK)
            if not line:
                break
            if size <= cap:
                kept.append(line)
            size += len(line)
        yield b"".join(kept).removesuffix(b"\n")[:cap + 1]


def _parse_log(lines: Iterator[bytes], limit: int) -> Iterator[_FileAdditions]:
    """Each file's added lines, commit by commit, as git prints them."""
    commit = ""
    current: _FileAdditions | None = None
    in_header = False  # between "diff --git" and the first hunk, "+++" is a header line
    next_line = 0
    for line in lines:
        if line.startswith(_COMMIT_PREFIX):
            if current is not None:
                yield current
            commit = line[len(_COMMIT_PREFIX):].decode("ascii").strip()
            current, in_header = None, False
        elif line.startswith(b"diff --git "):
            if current is not None:
                yield current
            current, in_header = None, True
        elif in_header and line.startswith(b"+++ "):
            target = line[4:]
            if target != b"/dev/null":
                current = _FileAdditions(commit, _strip_side(_unquote(target)), limit)
        elif line.startswith(_HUNK_PREFIX):
            in_header = False
            new_part = line.split(b" +", 1)[1].split(b" ", 1)[0]
            next_line = int(new_part.split(b",", 1)[0])
        elif not in_header and current is not None and line.startswith(b"+"):
            current.add(line[1:], next_line)
            next_line += 1
    if current is not None:
        yield current


def _stream_log(cwd: str | Path, arguments: Sequence[str], limit: int) -> Iterator[_FileAdditions]:
    command = ["git", "-c", "core.quotePath=false", "log", *arguments]
    with tempfile.TemporaryFile() as errors:
        try:
            process = subprocess.Popen(command, cwd=cwd, stdout=subprocess.PIPE, stderr=errors)
        except OSError as exc:
            raise GitError(f"cannot run git: {exc}") from None
        assert process.stdout is not None
        try:
            yield from _parse_log(_lines(process.stdout, limit), limit)
        finally:
            process.stdout.close()
            code = process.wait()
        if code != 0:
            errors.seek(0)
            message = errors.read().decode("utf-8", "replace").strip() or f"exit {code}"
            if "remerge-diff" in message:
                message += " (scanning merge commits needs git 2.36 or newer)"
            raise GitError(f"git log: {message}")


def _octopus_merges(cwd: str | Path, revisions: Revisions) -> list[str]:
    output = _git(cwd, "rev-list", "--min-parents=3", "--end-of-options",
                  *revisions.arguments(), "--")
    return output.decode("ascii").split()


def _additions(scanner: Scanner, revisions: Revisions,
               cwd: str | Path) -> Iterator[_FileAdditions]:
    limit = scanner.policy.max_file_bytes
    yield from _stream_log(cwd, [*_DIFF_OPTIONS, "--remerge-diff", "--end-of-options",
                                 *revisions.arguments(), "--"], limit)
    octopus = _octopus_merges(cwd, revisions)
    if octopus:  # git does not re-merge these: scan their diff against every parent
        yield from _stream_log(cwd, [*_DIFF_OPTIONS, "--diff-merges=separate", "--no-walk",
                                     "--end-of-options", *octopus, "--"], limit)


def scan_revisions(scanner: Scanner, revisions: Revisions, cwd: str | Path = ".") -> ScanReport:
    """Scan the lines added by the commits ``revisions`` names.

    Additions above the policy's ``max_file_bytes`` are reported in ``skipped``: the
    caller decides whether unscanned content blocks (the pre-push guard: it does).
    """
    report = ScanReport()
    limit = scanner.policy.max_file_bytes
    for item in _additions(scanner, revisions, cwd):
        if not item.size or scanner.policy.path_fully_allowed(item.path):
            continue
        if item.oversized:
            report.skipped.append(Skipped(f"{item.commit[:12]}:{item.path}",
                                          f"adds more than {limit} bytes ({item.size})"))
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


def _is_sha(text: str) -> bool:
    return len(text) in (40, 64) and all(char in "0123456789abcdef" for char in text)


def parse_pre_push(stdin: str) -> list[PushedRef]:
    """The lines git writes to a pre-push hook: ``<local ref> <sha> <remote ref> <sha>``."""
    refs = []
    for number, line in enumerate(stdin.splitlines(), 1):
        if not line.strip():
            continue
        parts = line.split()
        if len(parts) != 4 or not (_is_sha(parts[1]) and _is_sha(parts[3])):
            raise GitError(f"pre-push input line {number} is not '<ref> <sha> <ref> <sha>'")
        refs.append(PushedRef(*parts))
    return refs


def push_revisions(ref: PushedRef, remote: str, cwd: str | Path = ".") -> Revisions | None:
    """The commits this ref update sends to ``remote`` (None for a deletion)."""
    if set(ref.local_sha) == {"0"}:
        return None  # a deletion sends no commits
    if set(ref.remote_sha) != {"0"} and _known_commit(ref.remote_sha, cwd):
        return Revisions((ref.local_sha,), (ref.remote_sha,))
    # A new branch (or a remote tip we never fetched): what no remote-tracking ref has yet.
    return Revisions((ref.local_sha,), tuple(_remote_tips(remote, cwd)))


def _remote_tips(remote: str, cwd: str | Path) -> list[str]:
    """The commits of every remote-tracking ref of ``remote`` (none when pushing to a URL)."""
    if not remote or remote.startswith("-"):
        return []
    output = _git(cwd, "for-each-ref", "--format=%(objectname)", "--end-of-options",
                  f"refs/remotes/{remote}/")
    return sorted(set(output.decode("ascii").split()))


def _known_commit(sha: str, cwd: str | Path) -> bool:
    try:
        _git(cwd, "cat-file", "-e", "--end-of-options", f"{sha}^{{commit}}")
    except GitError:
        return False
    return True
