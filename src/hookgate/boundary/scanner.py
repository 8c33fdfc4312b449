"""The content scanner: a policy's rules over bytes, files and directory trees.

Every rule runs over the whole buffer (RE2, linear time); candidates are then filtered by
inline ``hookgate:allow`` comments and the policy's allow-list. A finding keeps its matched
value in memory only (``scrub`` needs it); what leaves the process is the masked excerpt and
a fingerprint.
"""

from __future__ import annotations

import bisect
import hashlib
import os
import subprocess
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final, NamedTuple

import re2

from hookgate.boundary.policy import Policy, Rule, severity_rank

__all__ = [
    "Finding",
    "RuleMatch",
    "ScanReport",
    "Scanner",
    "Skipped",
    "fingerprint_of",
    "mask_value",
    "visible",
]

BINARY_SNIFF_BYTES: Final = 8192
EXCERPT_WIDTH: Final = 120
_ALLOW_MARKER: Final = b"hookgate:allow"
_ALLOW_RULES: Final = re2.compile(rb"hookgate:allow=([A-Za-z0-9_.,\-]+)")
_VCS_DIRS: Final = frozenset({".git", ".hg", ".svn"})


# Control characters (C0 but tab, DEL, C1) as visible escapes: a scanned line is someone
# else's text, and printed raw its escape sequences could rewrite the terminal (erase the
# report's lines, fake a clean result).
_VISIBLE: Final = {code: f"\\x{code:02x}" for code in (*range(0x20), 0x7F, *range(0x80, 0xA0))
                   if code != 0x09}


def visible(text: str) -> str:
    """``text`` with its control characters shown as ``\\xNN`` (nothing else changes)."""
    return text.translate(_VISIBLE)


def fingerprint_of(rule_id: str, value: bytes) -> str:
    """A stable id for one accepted value of one rule (it survives moves and edits around it)."""
    return hashlib.sha256(rule_id.encode() + b"\0" + value).hexdigest()[:16]


def mask_value(value: str) -> str:
    """Keep a short prefix (enough to recognise the kind), star the rest; newlines stay."""
    return _starred(value, min(4, len(value) // 4))


class Finding(NamedTuple):
    """One finding. A NamedTuple: immutable and cheap to make (a line can hold tens of
    thousands); its ``repr`` leaves out the matched value."""

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
    value: bytes = b""

    def __repr__(self) -> str:
        return (f"Finding(rule_id={self.rule_id!r}, path={self.path!r}, line={self.line}, "
                f"column={self.column}, excerpt={self.excerpt!r})")

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


class RuleMatch(NamedTuple):
    """One rule's match in the scanned bytes (before allow-lists)."""

    start: int
    end: int
    rule: Rule


class Scanner:
    """Scans with one policy. Safe to share across threads (compiled RE2 is immutable).

    ``inline_allow`` says whether a ``hookgate:allow`` comment in the scanned text accepts the
    findings on its line. Only text the repository's owner wrote and reviews (its files and
    commits, scanned by ``hookgate scan`` and the pre-push guard) may carry one; text an agent
    or a tool produced (content-guard, ``scan --stdin``, staged artifacts for ``scrub``) is
    data, and a marker in it accepts nothing. Off unless the caller says so.
    """

    def __init__(self, policy: Policy, *, inline_allow: bool = False) -> None:
        self.policy = policy
        self.inline_allow = inline_allow

    # -- raw matching -------------------------------------------------------------------
    def matches(self, data: bytes) -> list[RuleMatch]:
        """Every rule match in ``data``, sorted; generic rules give way on overlap.

        O(n log n) in the number of matches: overlap is a binary search in the merged
        spans of the specific matches, never a walk over all of them.
        """
        specific: list[RuleMatch] = []
        generic: list[RuleMatch] = []
        for rule in self.policy.rules:
            for candidate in rule.matcher.candidates(data):
                (generic if rule.generic else specific).append(
                    RuleMatch(candidate.start, candidate.end, rule))
        if generic:
            taken = _MergedSpans(specific)
            kept_generic = [item for item in generic if not taken.overlaps(item.start, item.end)]
            specific.extend(_dedupe_generic(kept_generic))
        specific.sort(key=lambda item: (item.start, item.end, item.rule.id))
        return specific

    # -- findings -----------------------------------------------------------------------
    def scan_bytes(self, data: bytes, path: str = "<stdin>", *,
                   line_map: list[int] | None = None, commit: str | None = None) -> list[Finding]:
        """Findings in ``data`` after inline and policy allow-lists.

        ``line_map`` maps 0-based line indexes of ``data`` to the line numbers to report
        (used when ``data`` is the added lines of a diff). Linear in ``len(data)`` plus the
        matches: lines are found by one forward walk, each line is decoded and masked once,
        and each finding's excerpt is a slice of its masked line.
        """
        hits = self.matches(data)
        if not hits:
            return []
        masked = _MergedSpans(hits)
        lines = _LineWalker(data, masked)
        allow_list = bool(self.policy.allow)
        inline_allow = self.inline_allow
        findings = []
        line = lines.line
        for start, end, rule in hits:
            if start > line.end:
                line = lines.at(start)
            if inline_allow and line.allows(rule.id):
                continue
            value = data[start:end]
            fingerprint = fingerprint_of(rule.id, value)
            if allow_list and self.policy.allowed(rule.id, path, fingerprint):
                continue
            column = lines.column(start)
            findings.append(Finding(
                rule.id, rule.severity, rule.message, path,
                line_map[line.index] if line_map is not None else line.index + 1,
                column + 1, start, end, line.excerpt(column), fingerprint, commit, value))
        return findings

    def accepted_matches(self, data: bytes, path: str = "<text>") -> list[RuleMatch]:
        """The matches :meth:`scan_bytes` would report, without building the reports (no
        line, column or excerpt): what masking needs, at a fraction of the cost per match."""
        if self.inline_allow:
            by_id = self.policy.by_id
            return [RuleMatch(finding.start, finding.end, by_id[finding.rule_id])
                    for finding in self.scan_bytes(data, path)]
        hits = self.matches(data)
        if not self.policy.allow:
            return hits
        allowed = self.policy.allowed
        return [hit for hit in hits if not allowed(
            hit.rule.id, path, fingerprint_of(hit.rule.id, data[hit.start:hit.end]))]

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


class _MergedSpans:
    """The union of match spans as sorted, disjoint [start, end) intervals."""

    def __init__(self, matches: Iterable[RuleMatch]) -> None:
        starts: list[int] = []
        ends: list[int] = []
        for start, end, _ in sorted(matches, key=lambda item: (item.start, item.end)):
            if ends and start < ends[-1]:
                ends[-1] = max(ends[-1], end)
            else:
                starts.append(start)
                ends.append(end)
        self.starts, self.ends = starts, ends

    def overlaps(self, start: int, end: int) -> bool:
        index = bisect.bisect_right(self.ends, start)  # the first span ending after ``start``
        return index < len(self.starts) and self.starts[index] < end

    def within(self, low: int, high: int) -> Iterator[tuple[int, int]]:
        """The spans that overlap [low, high), in order."""
        index = bisect.bisect_right(self.ends, low)
        while index < len(self.starts) and self.starts[index] < high:
            yield self.starts[index], self.ends[index]
            index += 1


def _dedupe_generic(items: list[RuleMatch]) -> list[RuleMatch]:
    """Two generic rules on one span (keyword and entropy) report it once: the first rule."""
    kept: list[RuleMatch] = []
    for item in sorted(items, key=lambda item: (item.start, item.end)):
        if kept and kept[-1].start < item.end and item.start < kept[-1].end:
            continue
        kept.append(item)
    return kept


_EVERY_RULE: Final = frozenset({"*"})


class _Line:
    """One line of the scanned bytes, decoded and masked once for every finding on it."""

    __slots__ = ("_allowed", "_masked", "data", "end", "index", "masks", "start")

    def __init__(self, data: bytes, index: int, start: int, end: int,
                 masks: _MergedSpans) -> None:
        self.data, self.index, self.start, self.end, self.masks = data, index, start, end, masks
        self._allowed: frozenset[str] | None = None
        self._masked: str | None = None

    def allows(self, rule_id: str) -> bool:
        """True when a ``hookgate:allow`` comment on this line accepts ``rule_id``."""
        if self._allowed is None:
            self._allowed = _inline_allowed_rules(self.data[self.start:self.end])
        return self._allowed is _EVERY_RULE or rule_id in self._allowed

    def excerpt(self, column: int) -> str:
        """The line with every finding masked, cut to EXCERPT_WIDTH around ``column``."""
        if self._masked is None:
            self._masked = self._mask()
        text = self._masked
        if len(text) <= EXCERPT_WIDTH:
            return visible(text.strip())
        begin = max(0, min(column - EXCERPT_WIDTH // 3, len(text) - EXCERPT_WIDTH))
        cut = visible(text[begin:begin + EXCERPT_WIDTH])
        return ("…" if begin else "") + cut + ("…" if begin + EXCERPT_WIDTH < len(text) else "")

    def _mask(self) -> str:
        raw = self.data[self.start:self.end]
        if raw.isascii():  # the common case: characters are bytes, slice the text directly
            return self._mask_ascii(raw.decode("ascii"))
        data, pieces, cursor = self.data, [], self.start
        for span_start, span_end in self.masks.within(self.start, self.end):
            start, end = max(span_start, cursor), min(span_end, self.end)
            pieces.append(data[cursor:start].decode("utf-8", "replace"))
            # The kept prefix belongs to the value's first line only: a value that began on
            # an earlier line (a private key block) is starred from the line's start.
            keep = _kept_prefix(data, span_start, span_end) if start == span_start else 0
            pieces.append(_starred(data[start:end].decode("utf-8", "replace"), keep))
            cursor = end
        pieces.append(data[cursor:self.end].decode("utf-8", "replace"))
        return "".join(pieces).replace("\t", " ").strip("\r")

    def _mask_ascii(self, text: str) -> str:
        base, line_end, pieces, cursor = self.start, self.end, [], 0
        for span_start, span_end in self.masks.within(self.start, self.end):
            start, end = max(span_start - base, cursor), min(span_end, line_end) - base
            pieces.append(text[cursor:start])
            if start + base != span_start:
                keep = 0
            elif span_end <= line_end:
                keep = min(4, (span_end - span_start) // 4)
            else:
                keep = _kept_prefix(self.data, span_start, span_end)
            pieces.append(text[start:start + keep] + "*" * (end - start - keep))
            cursor = end
        pieces.append(text[cursor:])
        return "".join(pieces).replace("\t", " ").strip("\r")


class _LineWalker:
    """Finds the line of each match by walking forward once (matches come sorted by start)."""

    def __init__(self, data: bytes, masks: _MergedSpans) -> None:
        self.data, self.masks = data, masks
        end = data.find(b"\n")
        self.line = _Line(data, 0, 0, len(data) if end < 0 else end, masks)
        self._column_at, self._column = 0, 0

    def at(self, position: int) -> _Line:
        line = self.line
        if position <= line.end:
            return line
        data = self.data
        index = line.index + data.count(b"\n", line.end, position)
        start = data.rfind(b"\n", line.end, position) + 1
        end = data.find(b"\n", position)
        self.line = _Line(data, index, start, len(data) if end < 0 else end, self.masks)
        self._column_at, self._column = start, 0
        return self.line

    def column(self, position: int) -> int:
        """0-based column of ``position`` on the current line, in characters."""
        self._column += len(self.data[self._column_at:position].decode("utf-8", "replace"))
        self._column_at = position
        return self._column


def _kept_prefix(data: bytes, start: int, end: int) -> int:
    """How many characters of a value :func:`mask_value` keeps (at most 4, a quarter)."""
    if end - start >= 64:  # at least 16 characters whatever the encoding
        return 4
    return min(4, len(data[start:end].decode("utf-8", "replace")) // 4)


def _starred(value: str, keep: int) -> str:
    rest = value[keep:]
    if "\n" not in rest:
        return value[:keep] + "*" * len(rest)
    return value[:keep] + "\n".join("*" * len(part) for part in rest.split("\n"))


def _inline_allowed_rules(line: bytes) -> frozenset[str]:
    if _ALLOW_MARKER not in line:
        return frozenset()
    scoped = _ALLOW_RULES.search(line)
    if scoped is None:
        return _EVERY_RULE
    return frozenset(scoped.group(1).decode("ascii").split(","))


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
