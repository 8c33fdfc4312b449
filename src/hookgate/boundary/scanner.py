"""The content scanner: a policy's rules over bytes, files and directory trees.

Every rule runs over the whole buffer (RE2, linear time); candidates are then filtered by
inline ``hookgate:allow`` comments and the policy's allow-list. A finding keeps its matched
value in memory only (``scrub`` needs it); what leaves the process is the masked excerpt and
a fingerprint.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

import re2

from hookgate.boundary.policy import Policy, Rule, severity_rank

__all__ = [
    "Finding",
    "ScanReport",
    "Scanner",
    "Skipped",
    "fingerprint_of",
    "mask_value",
]

BINARY_SNIFF_BYTES: Final = 8192
EXCERPT_WIDTH: Final = 120
_ALLOW_MARKER: Final = b"hookgate:allow"
_ALLOW_RULES: Final = re2.compile(rb"hookgate:allow=([A-Za-z0-9_.,\-]+)")
_VCS_DIRS: Final = frozenset({".git", ".hg", ".svn"})


def fingerprint_of(rule_id: str, value: bytes) -> str:
    """A stable id for one accepted value of one rule (it survives moves and edits around it)."""
    return hashlib.sha256(rule_id.encode() + b"\0" + value).hexdigest()[:16]


def mask_value(value: str) -> str:
    """Keep a short prefix (enough to recognise the kind), star the rest; newlines stay."""
    keep = min(4, len(value) // 4)
    return value[:keep] + "".join("\n" if char == "\n" else "*" for char in value[keep:])


@dataclass(frozen=True, slots=True)
class Finding:
    rule_id: str
    severity: str
    message: str
    path: str
    line: int
    column: int
    start: int
    end: int
    excerpt: str
    fingerprint: str
    commit: str | None = None
    value: bytes = field(default=b"", repr=False, compare=False)

    def at_least(self, severity: str) -> bool:
        return severity_rank(self.severity) >= severity_rank(severity)

    @property
    def location(self) -> str:
        prefix = f"{self.commit[:12]}:" if self.commit else ""
        return f"{prefix}{self.path}:{self.line}"

    def to_dict(self) -> dict[str, object]:
        out: dict[str, object] = {
            "rule": self.rule_id, "severity": self.severity, "message": self.message,
            "path": self.path, "line": self.line, "column": self.column,
            "excerpt": self.excerpt, "fingerprint": self.fingerprint,
        }
        if self.commit:
            out["commit"] = self.commit
        return out


@dataclass(frozen=True, slots=True)
class Skipped:
    path: str
    reason: str


@dataclass(slots=True)
class ScanReport:
    findings: list[Finding] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)
    scanned: int = 0

    def extend(self, other: ScanReport) -> None:
        self.findings.extend(other.findings)
        self.skipped.extend(other.skipped)
        self.scanned += other.scanned

    def failing(self, threshold: str) -> list[Finding]:
        return [finding for finding in self.findings if finding.at_least(threshold)]


def looks_binary(data: bytes) -> bool:
    return b"\0" in data[:BINARY_SNIFF_BYTES]


class Scanner:
    """Scans with one policy. Safe to share across threads (compiled RE2 is immutable)."""

    def __init__(self, policy: Policy) -> None:
        self.policy = policy

    # -- raw matching -------------------------------------------------------------------
    def matches(self, data: bytes) -> list[tuple[Rule, int, int]]:
        """Every (rule, start, end) in ``data``, sorted; generic rules give way on overlap."""
        specific: list[tuple[Rule, int, int]] = []
        generic: list[tuple[Rule, int, int]] = []
        for rule in self.policy.rules:
            for candidate in rule.matcher.candidates(data):
                (generic if rule.generic else specific).append(
                    (rule, candidate.start, candidate.end))
        if generic:
            spans = sorted((start, end) for _, start, end in specific)
            kept_generic = [item for item in generic if not _overlaps(spans, item[1], item[2])]
            specific.extend(_dedupe_generic(kept_generic))
        specific.sort(key=lambda item: (item[1], item[2], item[0].id))
        return specific

    # -- findings -----------------------------------------------------------------------
    def scan_bytes(self, data: bytes, path: str = "<stdin>", *,
                   line_map: list[int] | None = None, commit: str | None = None) -> list[Finding]:
        """Findings in ``data`` after inline and policy allow-lists.

        ``line_map`` maps 0-based line indexes of ``data`` to the line numbers to report
        (used when ``data`` is the added lines of a diff).
        """
        hits = self.matches(data)
        if not hits:
            return []
        findings = []
        line_index, counted_to = 0, 0
        for rule, start, end in hits:
            line_index += data.count(b"\n", counted_to, start)
            counted_to = start
            line_start = data.rfind(b"\n", 0, start) + 1
            line_end = data.find(b"\n", start)
            line_end = len(data) if line_end < 0 else line_end
            line = data[line_start:line_end]
            if _inline_allowed(line, rule.id):
                continue
            value = data[start:end]
            fingerprint = fingerprint_of(rule.id, value)
            if self.policy.allowed(rule.id, path, fingerprint):
                continue
            number = line_map[line_index] if line_map is not None else line_index + 1
            findings.append(Finding(
                rule_id=rule.id, severity=rule.severity, message=rule.message, path=path,
                line=number, column=len(data[line_start:start].decode("utf-8", "replace")) + 1,
                start=start, end=end,
                excerpt=_excerpt(line, line_start, hits, start),
                fingerprint=fingerprint, commit=commit, value=value,
            ))
        return findings

    def scan_text(self, text: str, path: str = "<text>") -> list[Finding]:
        return self.scan_bytes(text.encode("utf-8", "surrogatepass"), path)

    def scan_file(self, file: Path, display: str) -> ScanReport:
        report = ScanReport()
        if self.policy.path_fully_allowed(display):
            return report
        try:
            size = file.stat().st_size
            if size > self.policy.max_file_bytes:
                report.skipped.append(Skipped(display, f"larger than {self.policy.max_file_bytes}"
                                                       f" bytes ({size})"))
                return report
            data = file.read_bytes()
        except OSError as exc:
            report.skipped.append(Skipped(display, f"unreadable: {exc.strerror or exc}"))
            return report
        if looks_binary(data):
            report.skipped.append(Skipped(display, "binary"))
            return report
        report.scanned = 1
        report.findings = self.scan_bytes(data, display)
        return report

    def scan_paths(self, paths: Iterable[str | Path]) -> ScanReport:
        report = ScanReport()
        for file, display in iter_files(paths):
            report.extend(self.scan_file(file, display))
        return report


def _overlaps(spans: list[tuple[int, int]], start: int, end: int) -> bool:
    return any(s < end and start < e for s, e in spans)


def _dedupe_generic(items: list[tuple[Rule, int, int]]) -> list[tuple[Rule, int, int]]:
    """Two generic rules on one span (keyword and entropy) report it once: the first rule."""
    kept: list[tuple[Rule, int, int]] = []
    for item in sorted(items, key=lambda item: (item[1], item[2])):
        if kept and kept[-1][1] < item[2] and item[1] < kept[-1][2]:
            continue
        kept.append(item)
    return kept


def _inline_allowed(line: bytes, rule_id: str) -> bool:
    if _ALLOW_MARKER not in line:
        return False
    scoped = _ALLOW_RULES.search(line)
    if scoped is None:
        return True
    return rule_id in scoped.group(1).decode("ascii").split(",")


def _excerpt(line: bytes, line_start: int, hits: list[tuple[Rule, int, int]], focus: int) -> str:
    """The line with every finding on it masked, cut to EXCERPT_WIDTH around ``focus``."""
    line_end = line_start + len(line)
    pieces: list[str] = []
    cursor = line_start
    for _, start, end in hits:
        if end <= cursor or start >= line_end:
            continue
        start = max(start, cursor)
        pieces.append(line[cursor - line_start:start - line_start].decode("utf-8", "replace"))
        value = line[start - line_start:min(end, line_end) - line_start]
        pieces.append(mask_value(value.decode("utf-8", "replace")))
        cursor = min(end, line_end)
    pieces.append(line[cursor - line_start:].decode("utf-8", "replace"))
    text = "".join(pieces).replace("\t", " ").strip("\r")
    offset = len(line[:max(0, focus - line_start)].decode("utf-8", "replace"))
    if len(text) <= EXCERPT_WIDTH:
        return text.strip()
    begin = max(0, min(offset - EXCERPT_WIDTH // 3, len(text) - EXCERPT_WIDTH))
    cut = text[begin:begin + EXCERPT_WIDTH]
    return ("…" if begin else "") + cut + ("…" if begin + EXCERPT_WIDTH < len(text) else "")


def iter_files(paths: Iterable[str | Path]) -> Iterator[tuple[Path, str]]:
    """(file, display path) for each file under ``paths``; git-ignored files are left out."""
    for raw in paths:
        root = Path(raw)
        if root.is_dir():
            listed = _git_listed(root)
            if listed is not None:
                for relative in listed:
                    file = root / relative
                    if file.is_file() and not file.is_symlink():
                        yield file, _display(root, relative, raw)
                continue
            for directory, dirnames, filenames in os.walk(root):
                dirnames[:] = sorted(name for name in dirnames if name not in _VCS_DIRS)
                for name in sorted(filenames):
                    file = Path(directory) / name
                    if not file.is_symlink():
                        yield file, _display(root, str(file.relative_to(root)), raw)
        else:
            yield root, str(raw)


def _display(root: Path, relative: str, raw: str | Path) -> str:
    return relative if str(raw) in (".", "./") else str(Path(raw) / relative)


def _git_listed(root: Path) -> list[str] | None:
    """Tracked and untracked-not-ignored files, when ``root`` is inside a git work tree.

    ``None`` (walk every file) outside a work tree, and for a directory git ignores as a
    whole: a staging or build directory named on the command line is scanned in full.
    """
    try:
        ignored = subprocess.run(["git", "-C", str(root), "check-ignore", "-q", "."],
                                 capture_output=True, check=False, timeout=60)
        if ignored.returncode == 0:
            return None
        done = subprocess.run(
            ["git", "-C", str(root), "ls-files", "-z", "--cached", "--others",
             "--exclude-standard"],
            capture_output=True, check=False, timeout=60,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    if done.returncode != 0:
        return None
    return sorted({name for name in done.stdout.decode("utf-8", "surrogateescape").split("\0")
                   if name})
