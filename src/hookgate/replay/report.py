"""What a replay found: :class:`ReplayReport` (JSON) and its text table.

``{"replayed": N, "changed": M, "unknown": U, "unreadable": R, "changes": [{"dispatch_id",
"event", "tool_name", "before", "after", "reason", "created_at"}], "shadow": {hook: {
"would_block": n, …}}, …}``. A change is a
dispatch whose decision differs (``allow`` / ``block`` / ``ask``), or that could not be
replayed (``after: "unknown"``, counted in ``unknown``, not in ``changed``). Reasons are
redacted and cut as the dispatch API shows them. The lists are bounded (``max_changes``);
the counts are always whole.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Final

from hookgate.audit import redact, truncate
from hookgate.replay.records import RecordedDispatch
from hookgate.replay.replayer import Verdict

__all__ = ["MAX_UNREADABLE_LISTED", "Change", "ReplayReport", "text_lines"]

#: Unreadable records listed by id (all are counted).
MAX_UNREADABLE_LISTED: Final = 100


def _iso(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).isoformat().replace("+00:00", "Z")


@dataclass(frozen=True, slots=True)
class Change:
    dispatch_id: str
    event: str
    tool_name: str | None
    before: str
    after: str
    reason: str | None
    created_at: float

    def to_dict(self) -> dict[str, Any]:
        return {
            "dispatch_id": self.dispatch_id,
            "event": self.event,
            "tool_name": self.tool_name,
            "before": self.before,
            "after": self.after,
            "reason": self.reason,
            "created_at": _iso(self.created_at),
        }


def _reason(recorded: RecordedDispatch, verdict: Verdict) -> str | None:
    """Why it changed, redacted and cut as the dispatch API shows a reason (only for the
    changes listed: most replayed dispatches never need it)."""
    if verdict.decision in ("block", "ask", "unknown") or verdict.reason:
        text = verdict.reason
    else:
        before = f": {recorded.before_reason}" if recorded.before_reason else ""
        text = f"no hook {recorded.before}s it now (before{before})"
    return truncate(redact(text)) if text else None


@dataclass(slots=True)
class ReplayReport:
    #: Changes listed at most (0: all).
    max_changes: int = 1000
    replayed: int = 0
    changed: int = 0
    unknown: int = 0
    unreadable: int = 0
    #: Decisions after the replay, by decision (``allow``, ``block``, ``ask``, ``unknown``).
    after_counts: dict[str, int] = field(default_factory=dict)
    changes: list[Change] = field(default_factory=list)
    #: Per shadow hook of the candidate: what it would have done, counted
    #: (``{"would_block": 3, "would_allow": 40}``); shadow hooks never change a decision.
    shadow: dict[str, dict[str, int]] = field(default_factory=dict)
    unreadable_records: list[dict[str, str]] = field(default_factory=list)
    #: Why the replay stopped before the end of the window (a count or time bound), if it did.
    stopped: str | None = None
    elapsed_s: float = 0.0

    def add(self, recorded: RecordedDispatch, verdict: Verdict) -> None:
        self.replayed += 1
        for name, would in verdict.shadow:
            counts = self.shadow.setdefault(name, {})
            counts[would] = counts.get(would, 0) + 1
        after = verdict.decision
        self.after_counts[after] = self.after_counts.get(after, 0) + 1
        if after == recorded.before:
            return
        if after == "unknown":
            self.unknown += 1
        else:
            self.changed += 1
        if self.max_changes and len(self.changes) >= self.max_changes:
            return
        self.changes.append(
            Change(
                recorded.id,
                recorded.event,
                recorded.tool_name,
                recorded.before,
                after,
                _reason(recorded, verdict),
                recorded.created_at,
            )
        )

    def add_unreadable(self, dispatch_id: str, why: str) -> None:
        self.unreadable += 1
        if len(self.unreadable_records) < MAX_UNREADABLE_LISTED:
            self.unreadable_records.append({"dispatch_id": dispatch_id, "why": why})

    @property
    def changes_left_off(self) -> int:
        return self.changed + self.unknown - len(self.changes)

    def to_dict(self) -> dict[str, Any]:
        return {
            "replayed": self.replayed,
            "changed": self.changed,
            "unknown": self.unknown,
            "unreadable": self.unreadable,
            "after": dict(sorted(self.after_counts.items())),
            "changes": [change.to_dict() for change in self.changes],
            "changes_left_off": self.changes_left_off,
            "shadow": {name: dict(sorted(c.items())) for name, c in sorted(self.shadow.items())},
            "unreadable_records": list(self.unreadable_records),
            "complete": self.stopped is None,
            "stopped": self.stopped,
            "elapsed_s": round(self.elapsed_s, 3),
        }


def text_lines(report: ReplayReport, escape: Callable[[str], str]) -> list[str]:
    """The report as a summary and a table; every line through ``escape`` (the CLI's
    :func:`hookgate.cli.terminal.printable`), since ids, tools and reasons are others' text."""
    rate = report.replayed / report.elapsed_s if report.elapsed_s > 0 else 0.0
    lines = [
        f"replayed {report.replayed} dispatches in {report.elapsed_s:.2f} s ({rate:,.0f}/s): "
        f"{report.changed} would change, {report.unknown} unknown, "
        f"{report.unreadable} unreadable"
    ]
    if report.stopped:
        lines.append(f"stopped early: {report.stopped}")
    if report.changes:
        rows = [("DISPATCH", "WHEN", "EVENT", "TOOL", "BEFORE", "AFTER", "REASON")]
        rows += [
            (
                c.dispatch_id,
                _iso(c.created_at)[:19],
                c.event,
                c.tool_name or "-",
                c.before,
                c.after,
                c.reason or "",
            )
            for c in report.changes
        ]
        widths = [max(len(escape(row[i])) for row in rows) for i in range(6)]
        for row in rows:
            cells = [escape(row[i]).ljust(widths[i]) for i in range(6)]
            lines.append("  ".join([*cells, escape(row[6])]))
    for name, counts in sorted(report.shadow.items()):
        said = ", ".join(f"{k.replace('_', ' ')} {v}" for k, v in sorted(counts.items()))
        lines.append(escape(f"shadow hook {name}: {said}"))
    if report.changes_left_off:
        lines.append(f"… {report.changes_left_off} more changes not listed (--max-changes)")
    for entry in report.unreadable_records:
        lines.append(escape(f"unreadable {entry['dispatch_id']}: {entry['why']}"))
    if report.unreadable > len(report.unreadable_records):
        lines.append(f"… {report.unreadable - len(report.unreadable_records)} more unreadable")
    return lines
