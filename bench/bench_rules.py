"""Rule hooks (declarative session rules), measured through the public engine API with a
matcher, as users write them.

Rows (issue 29's goals):

* ``fire_sync`` and ``await fire`` with one ``limit`` rule (memory store): at most 20 µs per
  event; the baseline is the same engine call with a no-op callable hook on the same matcher,
  so the ratio is what the rule adds (a counter taken under a lock, its key, its reason);
* the same with an ``after`` rule whose history pattern the engine also records (every event
  both reads the history and writes a stamp): at most 20 µs;
* ``await fire`` with a ``limit`` rule on Redis (a loopback ``redis-server``: one Lua script
  per event): at most 1 ms; the baseline is one raw ``PING`` round trip with the same client;
  and the heaviest rule event, ``after`` + ``limit`` with the history stamp written: also one
  script, one round trip (the rule has the chain's last word, so it keeps the event's stamp in
  its own step: :mod:`hookgate.handlers.rule.pending`; ``tests/state/test_rule_redis_step.py``
  counts the round trips).

The memory rows are timed in turns with their baseline (:func:`interleaved_per_call_us`) by
the wall clock and by CPU time; the machine is shared, so the ratio is the number to read.
``python -m bench.callgrind rules`` counts instructions per :data:`CALLGRIND_EVENTS` events
(``rules:without`` is the no-op callable hook).
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Callable
from typing import Any, Final

from bench.callgrind import active, measured, rounds
from bench.harness import (
    Row,
    interleaved_per_call_us,
    interleaved_per_call_us_async,
)
from hookgate import Engine
from hookgate.state import MemoryStateStore, use_state_store

MATCHER: Final = "^(exec|shell)$"
PAYLOAD: Final = {"tool_name": "exec", "tool_input": {"cmd": "ls"}, "session_id": "bench",
                  "agent_id": "agent-1"}
#: Far more than a timed run makes: the rule admits every call.
LIMIT: Final = {"limit": {"count": 1_000_000, "per": "session", "window_s": 3600}}
#: Each event reads the history (no Read in the session: admitted)...
AFTER: Final = {"after": {"tool": "^Read$", "per": "session"}}
#: ... and the engine stamps it, for a rule that never judges (its matcher names no tool)
#: but looks back at exec calls.
WATCHER: Final = {"event": "pre_tool_use", "handler_type": "rule", "name": "watcher",
                  "matcher": "^never$", "config": {"require": {"tool": MATCHER,
                                                               "succeeded": False}}}
REDIS_URL: Final = "redis://127.0.0.1:6379/0"
CALLGRIND_EVENTS: Final = 2000


def _noop(event: Any) -> None:
    return None


def _engine(config: dict[str, Any] | None) -> Engine:
    engine = Engine()
    use_state_store(engine, MemoryStateStore())
    if config is None:
        engine.add({"event": "pre_tool_use", "handler_type": "callable", "matcher": MATCHER,
                    "config": {"callable": _noop}})
    else:
        engine.add({"event": "pre_tool_use", "handler_type": "rule", "name": "bench-rule",
                    "matcher": MATCHER, "config": config})
        if config is AFTER:
            engine.add(WATCHER)
    return engine


def _admitted(engine: Engine) -> None:
    # The rule must admit (a bench of blocks would time another path).
    for _ in range(3):
        outcome = engine.fire_sync("pre_tool_use", PAYLOAD)
        assert outcome.decision == "allow", outcome.reason


def _memory_rows(min_time: float) -> list[Row]:
    baseline_engine, limit_engine = _engine(None), _engine(LIMIT)
    after_engine = _engine(AFTER)
    for engine in (limit_engine, after_engine):
        _admitted(engine)
    variants = {
        "callable": lambda: baseline_engine.fire_sync("pre_tool_use", PAYLOAD),
        "limit": lambda: limit_engine.fire_sync("pre_tool_use", PAYLOAD),
        "after": lambda: after_engine.fire_sync("pre_tool_use", PAYLOAD),
    }
    wall = interleaved_per_call_us(variants, min_time=min_time)
    cpu = interleaved_per_call_us(variants, min_time=min_time, clock=time.process_time)
    awaited = interleaved_per_call_us_async(
        {}, {"callable": lambda: baseline_engine.fire("pre_tool_use", PAYLOAD),
             "limit": lambda: limit_engine.fire("pre_tool_use", PAYLOAD)},
        min_time=min_time,
    )
    _admitted(after_engine)
    for engine in (baseline_engine, limit_engine, after_engine):
        engine.close()
    baseline = "the same call, a no-op callable hook on the same matcher"
    rows = []
    for clock, us in (("wall", wall), ("CPU", cpu)):
        rows += [
            Row("rules", f"fire_sync, limit rule, memory, {clock}", us["limit"], "µs",
                baseline, us["callable"], "<= 20 µs", us["limit"] <= 20.0),
            Row("rules", f"fire_sync, after rule + history stamp, memory, {clock}",
                us["after"], "µs", baseline, us["callable"], "<= 20 µs", us["after"] <= 20.0),
        ]
    rows.append(Row("rules", "await fire, limit rule, memory", awaited["limit"], "µs", baseline,
                    awaited["callable"], "<= 20 µs", awaited["limit"] <= 20.0))
    return rows


def _redis_rows(min_time: float) -> list[Row]:
    from hookgate.handlers.prompt.redis_state import connect
    from hookgate.state.shared import RedisStateStore

    prefix = f"hgbench-{uuid.uuid4().hex[:8]}:"
    name = "await fire, limit rule (1 round trip), Redis"
    try:
        asyncio.run(_ping())
    except Exception as exc:  # no Redis here: the row says so instead of a number
        return [Row("rules", f"{name} (unavailable: {type(exc).__name__})", 0.0, "µs",
                    goal="<= 1000 µs")]
    # Made outside a loop: the client connects on first use, inside the timing loop.
    client = connect(REDIS_URL)
    engine, heaviest = Engine(), Engine()
    for each in (engine, heaviest):
        use_state_store(each, RedisStateStore(client, prefix=prefix))
    engine.add({"event": "pre_tool_use", "handler_type": "rule", "name": "bench-rule",
                "matcher": MATCHER, "config": LIMIT})
    heaviest.add({"event": "pre_tool_use", "handler_type": "rule", "name": "bench-rule",
                  "matcher": MATCHER, "config": {**LIMIT, **AFTER}})
    heaviest.add(WATCHER)
    timed = interleaved_per_call_us_async(
        {}, {"ping": client.ping, "rule": lambda: engine.fire("pre_tool_use", PAYLOAD),
             "heaviest": lambda: heaviest.fire("pre_tool_use", PAYLOAD)},
        min_time=min_time,
    )
    engine.close()
    heaviest.close()
    asyncio.run(_forget(prefix))
    baseline = "one raw PING round trip, same client"
    return [
        Row("rules", name, timed["rule"], "µs", baseline, timed["ping"], "<= 1000 µs",
            timed["rule"] <= 1000.0),
        Row("rules", "await fire, after + limit rule + history stamp (1 round trip), Redis",
            timed["heaviest"], "µs", baseline, timed["ping"], "<= 1000 µs",
            timed["heaviest"] <= 1000.0),
    ]


async def _ping() -> None:
    from hookgate.handlers.prompt.redis_state import connect

    client = connect(REDIS_URL)
    try:
        await client.ping()
    finally:
        await client.aclose()


async def _forget(prefix: str) -> None:
    from hookgate.handlers.prompt.redis_state import connect

    client = connect(REDIS_URL)
    try:
        keys = [key async for key in client.scan_iter(match=f"{prefix}*")]
        if keys:
            await client.delete(*keys)
    finally:
        await client.aclose()


def _count_all() -> list[Row]:
    engines = {"without": _engine(None), "limit": _engine(LIMIT), "after": _engine(AFTER)}
    _admitted(engines["limit"])

    def times(engine: Engine) -> Callable[[int], object]:
        def many(events: int) -> None:
            for _ in range(events):
                engine.fire_sync("pre_tool_use", PAYLOAD)

        return many

    variants = {name: times(engine) for name, engine in engines.items()}
    for variant in variants.values():
        variant(10)
    for _ in range(rounds()):
        for name, variant in variants.items():
            with measured(f"rules:{name}"):
                variant(CALLGRIND_EVENTS)
    for engine in engines.values():
        engine.close()
    return []


def run(quick: bool = False) -> list[Row]:
    if active():
        return _count_all()
    min_time = 0.05 if quick else 0.2
    return [*_memory_rows(min_time), *_redis_rows(min_time)]
