"""Core overhead, measured the way users write hooks: a matcher on every hook.

Every hook is registered as the README shows it, ``matcher="^(exec|shell)$"``, and does
nothing. The baseline is pluggy calling functions that do what such a hook must do without
hookgate: test the same pattern against the tool name, then return. Those functions test it
with Python's ``re`` (compiled once, ``search``): for a pattern this small one ``re`` search
is faster than one search through google-re2's Python wrapper, so ``re`` is the stricter
baseline (hookgate runs RE2 because matchers are user input; that is its own cost).

Rows (issue 26's goals):

* ``fire_sync`` / ``await fire`` with 10 and 1 hooks whose matcher accepts the tool
  (``exec``), against pluggy calling the same number of functions: at most 1.5x / 2.0x
  (10 hooks) and 2.0x / 3.0x (1 hook);
* 10 and 100 hooks whose matcher rejects the tool (``read_file``): at most 2 µs (10) and
  2.5 µs (100: the cost must not grow with the number of rejecting hooks), and at most 0.3x
  pluggy calling 10 functions that each make the same test; timed by the wall clock and by
  the process's CPU time (these goals are absolute: on a machine shared by more runnable
  threads than cores, the wall clock also counts the waits for a core);
* an event no hook is registered for (the no-hook fast path): under 2 µs;
* the process hook round trip against a bare line echo to the same child (from
  :mod:`bench.bench_process`): at most 1.5x.

Wall-clock numbers move with the machine's load, so each row and its pluggy baseline are timed
in turns (:func:`bench.harness.interleaved_per_call_us`, and its ``_async`` twin inside one
event loop for ``await fire``). Instruction counts do not move:
``python -m bench.callgrind core`` counts each variant's run of :data:`CALLGRIND_EVENTS`
events (``<group>:without`` is pluggy, the ratio column is against it).
"""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Callable
from typing import Any, Final

import pluggy

from bench import bench_process
from bench.callgrind import active, measured, rounds
from bench.harness import (
    Row,
    interleaved_per_call_us,
    interleaved_per_call_us_async,
    per_call_us,
    per_call_us_async,
)
from hookgate import Engine

#: The README's matcher, on every hook.
MATCHER: Final = "^(exec|shell)$"
_search = re.compile(MATCHER).search
MATCHING: Final = {"tool_name": "exec", "tool_input": {"cmd": "ls"}}
REJECTED: Final = {"tool_name": "read_file", "tool_input": {"path": "a.txt"}}
#: Events per counted run under callgrind.
CALLGRIND_EVENTS: Final = 2000

hookspec = pluggy.HookspecMarker("bench")
hookimpl = pluggy.HookimplMarker("bench")


class Spec:
    @hookspec
    def pre_tool_use(self, tool_name: str, tool_input: dict[str, Any]) -> None: ...


def _make_plugin(index: int) -> object:
    class Plugin:
        @hookimpl
        def pre_tool_use(self, tool_name: str, tool_input: dict[str, Any]) -> None:
            if _search(tool_name) is None:
                return None
            return None

    Plugin.__name__ = f"Plugin{index}"
    return Plugin()


def _noop(event: Any) -> None:
    return None


def _engine(hooks: int) -> Engine:
    engine = Engine()
    for index in range(hooks):
        engine.hook("pre_tool_use", name=f"h{index}", matcher=MATCHER)(_noop)
    return engine


def _pluggy(hooks: int, payload: dict[str, Any]) -> Callable[[], object]:
    pm = pluggy.PluginManager("bench")
    pm.add_hookspecs(Spec)
    for index in range(hooks):
        pm.register(_make_plugin(index))
    call = pm.hook.pre_tool_use
    tool_name, tool_input = payload["tool_name"], payload["tool_input"]
    return lambda: call(tool_name=tool_name, tool_input=tool_input)


def _times(fn: Callable[[], object]) -> Callable[[int], object]:
    def run(events: int) -> None:
        for _ in range(events):
            fn()

    return run


def _awaited(engine: Engine, payload: dict[str, Any]) -> Callable[[int], object]:
    """``events`` awaited fires in one event loop (the loop's start is counted once)."""

    async def many(events: int) -> None:
        for _ in range(events):
            await engine.fire("pre_tool_use", payload)

    return lambda events: asyncio.run(many(events))


def _count(group: str, variants: dict[str, Callable[[int], object]]) -> None:
    """Under callgrind: each variant's instructions for :data:`CALLGRIND_EVENTS` events."""
    for variant in variants.values():
        variant(10)  # warm-up: caches, executors
    for _ in range(rounds()):
        for name, variant in variants.items():
            with measured(f"{group}:{name}"):
                variant(CALLGRIND_EVENTS)


def _count_all() -> list[Row]:
    for count, payload, kind in ((10, MATCHING, "matching"), (1, MATCHING, "matching"),
                                 (10, REJECTED, "rejecting"), (100, REJECTED, "rejecting")):
        engine = _engine(count)
        variants = {
            "without": _times(_pluggy(count, payload)),
            "fire_sync": _times(lambda engine=engine, payload=payload: engine.fire_sync(
                "pre_tool_use", payload)),
        }
        if kind == "matching":
            variants["await fire"] = _awaited(engine, payload)
        _count(f"core {count} {kind}", variants)
        engine.close()
    return []


def _matching_rows(count: int, min_time: float) -> list[Row]:
    engine = _engine(count)
    via_pluggy = _pluggy(count, MATCHING)
    baseline = f"pluggy calling {count} function(s) testing the same regex (re)"
    sync = interleaved_per_call_us(
        {"pluggy": via_pluggy,
         "fire_sync": lambda: engine.fire_sync("pre_tool_use", MATCHING)},
        min_time=min_time,
    )
    awaited = interleaved_per_call_us_async(
        {"pluggy": via_pluggy},
        {"fire": lambda: engine.fire("pre_tool_use", MATCHING)},
        min_time=min_time,
    )
    engine.close()
    sync_goal, async_goal = (1.5, 2.0) if count == 10 else (2.0, 3.0)
    sync_ratio = sync["fire_sync"] / sync["pluggy"]
    async_ratio = awaited["fire"] / awaited["pluggy"]
    return [
        Row("core", f"fire_sync, {count} matching hook(s)", sync["fire_sync"], "µs", baseline,
            sync["pluggy"], f"<= {sync_goal}x", sync_ratio <= sync_goal),
        Row("core", f"await fire, {count} matching hook(s)", awaited["fire"], "µs", baseline,
            awaited["pluggy"], f"<= {async_goal}x", async_ratio <= async_goal),
    ]


def _rejecting_rows(min_time: float) -> list[Row]:
    ten, hundred = _engine(10), _engine(100)
    variants = {
        "pluggy": _pluggy(10, REJECTED),
        "ten": lambda: ten.fire_sync("pre_tool_use", REJECTED),
        "hundred": lambda: hundred.fire_sync("pre_tool_use", REJECTED),
    }
    timed = interleaved_per_call_us(variants, min_time=min_time)
    # The same in CPU time: these goals are absolute, and on a machine shared by more
    # runnable threads than cores the wall clock also counts the waits for a core.
    cpu = interleaved_per_call_us(variants, min_time=min_time, clock=time.process_time)
    ten.close()
    hundred.close()
    baseline = "pluggy calling 10 functions that each test the regex (re)"
    rows = []
    for clock, us in (("wall", timed), ("CPU", cpu)):
        ten_us, hundred_us, pluggy_us = us["ten"], us["hundred"], us["pluggy"]
        rows += [
            Row("core", f"fire_sync, 10 hooks rejecting the tool, {clock}", ten_us, "µs",
                baseline, pluggy_us, "<= 2 µs and <= 0.3x",
                ten_us <= 2.0 and ten_us <= 0.3 * pluggy_us),
            Row("core", f"fire_sync, 100 hooks rejecting the tool, {clock}", hundred_us, "µs",
                f"10 rejecting hooks, {clock} (flat: same cost)", ten_us, "<= 2.5 µs",
                hundred_us <= 2.5),
        ]
    return rows


def _no_hook_rows(min_time: float) -> list[Row]:
    # A hook exists for another event, none for this one.
    engine = Engine()
    engine.hook("stop")(_noop)
    bare = per_call_us(lambda: None, min_time=min_time)
    sync = per_call_us(lambda: engine.fire_sync("pre_tool_use", MATCHING), min_time=min_time)
    awaited = per_call_us_async(lambda: engine.fire("pre_tool_use", MATCHING),
                                min_time=min_time)
    engine.close()
    return [
        Row("core", "fire_sync, no hook for the event", sync, "µs", "bare no-op call", bare,
            "< 2 µs", sync < 2.0),
        Row("core", "await fire, no hook for the event", awaited, "µs", None, None, "< 2 µs",
            awaited < 2.0),
    ]


def run(quick: bool = False) -> list[Row]:
    if active():
        return _count_all()
    min_time = 0.05 if quick else 0.2
    rows = [*_matching_rows(10, min_time), *_matching_rows(1, min_time)]
    rows += _rejecting_rows(min_time)
    rows += _no_hook_rows(min_time)
    rows.append(bench_process.round_trip_row(quick))
    asyncio.run(asyncio.sleep(0))
    return rows
