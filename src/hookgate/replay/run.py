"""One replay from start to end: records in, :class:`~hookgate.replay.report.ReplayReport`
out.

Each record is opened (:func:`~hookgate.replay.records.open_recorded`), checked (its tenant is
its sealed input's), run through the candidate (:class:`~hookgate.replay.replayer.Replayer`)
and compared. A record that cannot be used is counted and listed, never dropped silently and
never replayed as an empty event. ``max_records`` and ``max_seconds`` bound a replay (the
API's replays are always bounded); progress is reported every ``progress_every`` records.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterable, Callable
from dataclasses import dataclass

from hookgate.replay.records import RecordedDispatch, Unreadable, open_recorded
from hookgate.replay.replayer import Replayer, Verdict
from hookgate.replay.report import ReplayReport
from hookgate.replay.sources import BadLine
from hookgate.secrets.keyring import Keyring
from hookgate.store.base import DispatchRow

__all__ = ["Progress", "ReplayBounds", "replay_rows"]

#: Called with (records seen, records expected or None, seconds so far).
Progress = Callable[[int, int | None, float], None]


@dataclass(frozen=True, slots=True)
class ReplayBounds:
    max_records: int | None = None
    max_seconds: float | None = None
    #: Changes listed at most (0: all); the counts are always whole.
    max_changes: int = 1000
    #: Records between two progress reports (and two yields to the event loop).
    progress_every: int = 5_000


async def replay_rows(
    rows: AsyncIterable[DispatchRow | BadLine],
    replayer: Replayer,
    keyring: Keyring | None,
    bounds: ReplayBounds,
    *,
    total: int | None = None,
    progress: Progress | None = None,
) -> ReplayReport:
    report = ReplayReport(max_changes=bounds.max_changes)
    started = time.perf_counter()
    try:
        await _replay_all(rows, replayer, keyring, bounds, report, started, total, progress)
    finally:
        close = getattr(rows, "aclose", None)
        if close is not None:  # a source stopped early (a bound) lets go of its read ahead
            await close()
    report.elapsed_s = time.perf_counter() - started
    if progress is not None:
        progress(report.replayed + report.unreadable, total, report.elapsed_s)
    return report


async def _replay_all(
    rows: AsyncIterable[DispatchRow | BadLine],
    replayer: Replayer,
    keyring: Keyring | None,
    bounds: ReplayBounds,
    report: ReplayReport,
    started: float,
    total: int | None,
    progress: Progress | None,
) -> None:
    seen = 0
    every = max(1, bounds.progress_every)
    most, until = bounds.max_records, None
    if bounds.max_seconds is not None:
        until = started + bounds.max_seconds
    clock = time.perf_counter
    # Records opened here wait in order (an unreadable one as its id and why) and are
    # replayed a batch at a time on the replay's own thread (Replayer.replay_many).
    waiting: list[RecordedDispatch | tuple[str, str]] = []
    queued = 0
    async for row in rows:
        if most is not None and seen >= most:
            report.stopped = f"the limit of {most} records was reached"
            break
        if until is not None and clock() > until:
            report.stopped = f"the limit of {bounds.max_seconds:g} s was reached"
            break
        seen += 1
        if seen % every == 0:
            if progress is not None:
                progress(seen, total, clock() - started)
            await asyncio.sleep(0)  # a long replay on a gateway lets others be served
        if isinstance(row, BadLine):
            waiting.append((row.where, row.why))
            continue
        try:
            recorded = open_recorded(row, keyring)
            sealed_tenant = recorded.payload.get("tenant_id")
            if sealed_tenant is not None and sealed_tenant != row.tenant_id:
                raise Unreadable("its tenant is not the one its sealed input names")
        except Unreadable as exc:
            waiting.append((row.id, str(exc)))
            continue
        waiting.append(recorded)
        queued += 1
        if queued >= BATCH:
            await _replay_waiting(waiting, replayer, report)
            queued = 0
    await _replay_waiting(waiting, replayer, report)


#: Records replayed per hop to the replay's thread: a few ms of work, so ``max_seconds`` and
#: a gateway's other requests wait little longer than for one record.
BATCH = 256


async def _replay_waiting(
    waiting: list[RecordedDispatch | tuple[str, str]], replayer: Replayer, report: ReplayReport
) -> None:
    """Replay the waiting records and report them, and the unreadable ones, in order."""
    # Exact class checks: this is twice per record (an ABC-free isinstance still costs more).
    records = [item for item in waiting if item.__class__ is RecordedDispatch]
    verdicts = iter(await replayer.replay_many(records) if records else ())
    for item in waiting:
        if item.__class__ is not RecordedDispatch:
            report.add_unreadable(*item)  # type: ignore[misc]
            continue
        verdict = next(verdicts)
        if verdict.__class__ is Verdict:
            report.add(item, verdict)
        else:
            report.add_unreadable(item.id, f"unknown event {item.event!r}")
    waiting.clear()
