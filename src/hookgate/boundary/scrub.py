"""``hookgate scrub``: rewrite what the policy finds, file by file, preview first.

Each finding is replaced by its rule's ``replace`` text, or by a mask of the value (a short
prefix kept, the rest starred, line breaks kept so line numbers do not move). The preview is
a unified diff in which the removed values are themselves shortened, so a preview in a CI
log does not print the secrets it is about to remove. ``apply`` writes each file through a
temporary file in the same directory and an atomic rename.
"""

from __future__ import annotations

import difflib
import os
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from hookgate.boundary.scanner import Finding, Scanner, Skipped, iter_files, mask_value

_NO_NEWLINE = "\n\\ No newline at end of file\n"

__all__ = [
    "FileScrub",
    "ScrubPlan",
    "apply_plan",
    "mask_bytes",
    "plan_scrub",
    "render_preview",
    "scrub_bytes",
]


@dataclass(slots=True)
class FileScrub:
    file: Path
    display: str
    original: bytes
    scrubbed: bytes
    findings: list[Finding]


@dataclass(slots=True)
class ScrubPlan:
    files: list[FileScrub] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)

    @property
    def replacements(self) -> int:
        return sum(len(item.findings) for item in self.files)


def _replacement(scanner: Scanner, finding: Finding) -> bytes:
    rule = scanner.policy.by_id.get(finding.rule_id)
    if rule is not None and rule.replace is not None:
        return rule.replace.encode("utf-8")
    return mask_value(finding.value.decode("utf-8", "surrogateescape")).encode(
        "utf-8", "surrogateescape")


def mask_bytes(scanner: Scanner, data: bytes, path: str) -> tuple[bytes, int]:
    """``data`` with every accepted match replaced as :func:`scrub_bytes` does, and how many
    were replaced; builds no reports (``content-guard`` masks tool output with it)."""
    pieces: list[bytes] = []
    cursor = replaced = 0
    for start, end, rule in scanner.accepted_matches(data, path):
        if start < cursor:
            continue  # overlaps one already replaced
        pieces.append(data[cursor:start])
        pieces.append(rule.replace.encode("utf-8") if rule.replace is not None else mask_value(
            data[start:end].decode("utf-8", "surrogateescape")).encode("utf-8", "surrogateescape"))
        cursor = end
        replaced += 1
    if not replaced:
        return data, 0
    pieces.append(data[cursor:])
    return b"".join(pieces), replaced


def scrub_bytes(scanner: Scanner, data: bytes, path: str) -> tuple[bytes, list[Finding]]:
    """``data`` with every finding replaced, and the findings that were replaced."""
    applied: list[Finding] = []
    pieces: list[bytes] = []
    cursor = 0
    for finding in scanner.scan_bytes(data, path):
        if finding.start < cursor:
            continue  # overlaps one already replaced
        pieces.append(data[cursor:finding.start])
        pieces.append(_replacement(scanner, finding))
        cursor = finding.end
        applied.append(finding)
    pieces.append(data[cursor:])
    return b"".join(pieces), applied


def plan_scrub(scanner: Scanner, paths: Iterable[str | Path]) -> ScrubPlan:
    plan = ScrubPlan()
    limit = scanner.policy.max_file_bytes
    for file, display in iter_files(paths):
        if scanner.policy.path_fully_allowed(display):
            continue
        try:
            size = file.stat().st_size
            if size > limit:
                plan.skipped.append(Skipped(display, f"larger than {limit} bytes ({size})"))
                continue
            data = file.read_bytes()
        except OSError as exc:
            plan.skipped.append(Skipped(display, f"unreadable: {exc.strerror or exc}"))
            continue
        if b"\0" in data[:8192]:
            plan.skipped.append(Skipped(display, "binary"))
            continue
        scrubbed, applied = scrub_bytes(scanner, data, display)
        if applied:
            plan.files.append(FileScrub(file, display, data, scrubbed, applied))
    return plan


def _hidden(value: bytes) -> bytes:
    text = value.decode("utf-8", "replace")
    prefix = text[:min(4, len(text) // 4)]
    return f"[{prefix}… {len(text)} chars]".encode()


def render_preview(plan: ScrubPlan, *, show_values: bool = False) -> str:
    chunks: list[str] = []
    for item in plan.files:
        before = item.original
        if not show_values:
            pieces, cursor = [], 0
            for finding in item.findings:
                pieces += [before[cursor:finding.start], _hidden(finding.value)]
                cursor = finding.end
            pieces.append(before[cursor:])
            before = b"".join(pieces)
        old = before.decode("utf-8", "replace").splitlines(keepends=True)
        new = item.scrubbed.decode("utf-8", "replace").splitlines(keepends=True)
        for line in difflib.unified_diff(old, new, f"a/{item.display}", f"b/{item.display}"):
            chunks.append(line if line.endswith("\n") else line + _NO_NEWLINE)
    return "".join(chunks)


def _write_atomically(file: Path, data: bytes) -> None:
    mode = file.stat().st_mode & 0o7777
    handle, temporary = tempfile.mkstemp(prefix=f".{file.name}.", suffix=".scrub",
                                         dir=file.parent)
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
        os.chmod(temporary, mode)
        os.replace(temporary, file)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def apply_plan(plan: ScrubPlan) -> list[str]:
    """Write every scrubbed file; return the files that changed on disk since the plan."""
    conflicts = []
    for item in plan.files:
        if item.file.read_bytes() != item.original:
            conflicts.append(item.display)  # someone wrote it meanwhile: leave it alone
            continue
        _write_atomically(item.file, item.scrubbed)
    return conflicts
