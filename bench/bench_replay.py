"""Replay speed: recorded dispatches replayed per second through a candidate policy.

Traffic is recorded the way a gateway records it: an engine with a callable hook fires
events into the audit writer, which seals each input into a SQLite store. Then the stored
records are replayed as ``hookgate replay --data-dir`` does (read oldest first a page at a
time, opened with the key, run through the candidate, compared), with the candidate:

* a callable hook run in place (``isolate: none``);
* a callable hook run on a worker (``isolate: thread``, a hooks file's default);
* a ``rule`` hook (a per-session limit on the replay's memory state store).

Goal: >= 20,000 records/s for callable and rule hooks. Rates are given per CPU second of this
process (``time.process_time``, the steadier figure on a shared machine) and per second of
wall clock (the store reads the next page in its own thread meanwhile), each the best of a
few interleaved rounds; the baseline is the floor of any replay, reading and opening every
record without running a hook.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from pathlib import Path
from tempfile import TemporaryDirectory
from typing import Any

from bench.harness import Row
from hookgate.definition import HookDefinition
from hookgate.definition_model import validate_definition
from hookgate.engine import Engine
from hookgate.replay.records import open_recorded
from hookgate.replay.replayer import Replayer
from hookgate.replay.run import ReplayBounds, replay_rows
from hookgate.replay.sources import store_rows
from hookgate.secrets.keyring import Keyring, generate_key_text
from hookgate.store.audit_writer import AuditWriter
from hookgate.store.base import Caller, DispatchQuery, Store
from hookgate.store.sqlite import SqliteStore

GOAL = 20_000.0
#: Sessions the recorded traffic spreads over.
SESSIONS = 50
COMMANDS = ("ls -la", "rm -rf build", "git status", "git push origin main", "make test")


def live_guard(event: Any) -> dict[str, Any] | None:
    if str(event["tool_input"]["cmd"]).startswith("rm"):
        return {"decision": "block", "reason": "rm is not allowed"}
    return None


def candidate_guard(event: Any) -> dict[str, Any] | None:
    cmd = str(event["tool_input"]["cmd"])
    if cmd.startswith(("rm", "git push")):
        return {"decision": "block", "reason": "rm and git push are not allowed"}
    return None


def _hook(**fields: Any) -> HookDefinition:
    raw = {"event": "pre_tool_use", "scope": "global", "matcher": "^exec$", **fields}
    return validate_definition(raw)


async def record(store: Store, keyring: Keyring, count: int) -> None:
    writer = AuditWriter(store, keyring=keyring)
    await writer.start()
    engine = Engine(audit=writer)
    engine.add(_hook(name="guard", handler_type="callable",
                     config={"callable": "bench.bench_replay:live_guard"}))
    for n in range(count):
        await engine.fire("pre_tool_use", {
            "tool_name": "exec", "tool_input": {"cmd": COMMANDS[n % len(COMMANDS)]},
            "session_id": f"s-{n % SESSIONS}", "tenant_id": "bench", "agent_id": "agent-1",
        })
    await writer.close()
    await engine.aclose()


async def read_and_open(store: Store, keyring: Keyring) -> int:
    opened = 0
    async for row in store_rows(store, Caller.system(), DispatchQuery()):
        open_recorded(row, keyring)
        opened += 1
    return opened


async def replay(store: Store, keyring: Keyring, candidate: Sequence[HookDefinition]) -> int:
    replayer = Replayer(candidate)
    try:
        rows = store_rows(store, Caller.system(), DispatchQuery())
        report = await replay_rows(rows, replayer, keyring, ReplayBounds(max_changes=10))
    finally:
        await replayer.aclose()
    assert report.unreadable == 0
    return report.replayed


RULE = "rule hook (limit per session, 1 in 5 over)"
CALLABLES: dict[str, list[HookDefinition]] = {
    "callable hook, in place": [_hook(
        name="guard", handler_type="callable",
        config={"callable": "bench.bench_replay:candidate_guard", "isolate": "none"},
    )],
    "callable hook, on a worker (isolate: thread)": [_hook(
        name="guard", handler_type="callable",
        config={"callable": "bench.bench_replay:candidate_guard", "isolate": "thread"},
    )],
}


def candidates(count: int) -> dict[str, list[HookDefinition]]:
    """The candidates for ``count`` records: the rule's limit lets 4 in 5 of each session's
    calls through, however many records there are (a fixed limit would block nearly all of
    a long run, another path than the one named)."""
    limit = {"count": max(1, count * 4 // (5 * SESSIONS)), "per": "session", "window_s": 86_400}
    rule = _hook(name="budget", handler_type="rule", config={"limit": limit})
    return {**CALLABLES, RULE: [rule]}


async def _best_s(
    store: Store, keyring: Keyring, rounds: int, count: int
) -> dict[tuple[str, str], float]:
    """The least CPU and wall time of each variant over ``rounds`` interleaved rounds (the
    machine is shared: the least is the run others disturbed least)."""
    best: dict[tuple[str, str], float] = {}
    policies = candidates(count)
    for _ in range(rounds):
        for name in (FLOOR, *policies):
            cpu, wall = time.process_time(), time.perf_counter()
            if name == FLOOR:
                done = await read_and_open(store, keyring)
            else:
                done = await replay(store, keyring, policies[name])
            spent = {"cpu": time.process_time() - cpu, "wall": time.perf_counter() - wall}
            assert done > 0
            for clock, seconds in spent.items():
                best[name, clock] = min(best.get((name, clock), seconds), seconds)
    return best


FLOOR = "reading and opening each record, no hook"


def run(quick: bool) -> list[Row]:
    count = 5_000 if quick else 50_000
    keyring = Keyring.from_text(generate_key_text())

    async def measure(folder: Path) -> dict[tuple[str, str], float]:
        store = SqliteStore(folder)
        await store.open()
        await store.migrate()
        try:
            await record(store, keyring, count)
            return await _best_s(store, keyring, 2 if quick else 3, count)
        finally:
            await store.close()

    with TemporaryDirectory() as tmp:
        best = asyncio.run(measure(Path(tmp)))
    rows = []
    for clock, per in (("cpu", "CPU s"), ("wall", "s, wall clock")):
        floor = count / best[FLOOR, clock]
        for name in candidates(count):
            rate = count / best[name, clock]
            rows.append(Row(
                "replay", f"{name} ({count:,} records, {clock})", rate, "rec/s",
                baseline=f"{FLOOR} (records per {per})", baseline_value=floor,
                goal=f">= {GOAL:,.0f} rec/s", passed=rate >= GOAL,
            ))
    return rows
