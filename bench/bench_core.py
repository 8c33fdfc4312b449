"""Core overhead: ``fire`` with 0, 1 and 10 matching callable hooks.

Compared with calling the same functions directly, and with pluggy calling them (sync).
Goals: an event with no matching hook under 2 µs; 10 callable hooks at most 1.5x pluggy.

On the main thread plain functions run in place under a watchdog thread that interrupts one
past its timeout (hookgate.hook_alarm: no system call per event in the steady state). The
``interrupt_plain_hooks=False`` rows send them to a worker thread instead (the gateway's way,
and any other thread's): one thread hop per event, whatever the number of hooks. The
``inline_sync_hooks`` rows run them in place with no timeout at all, which is what pluggy does.
In every ``fire_sync`` row the chain runs without a generator (hookgate.chain.run_chain_now)
and the bench's hooks form one plain run: calls made once per hook list, an abstention
replying with its final trace row, no chain state unless a hook answers (docs/engine.md,
Performance). Wall-clock numbers move with the machine's load, so the ``fire_sync`` rows,
pluggy and the direct calls of each hook count are timed in turns
(:func:`bench.harness.interleaved_per_call_us`): their ratios are taken under the same load
(the ``await fire`` rows are timed apart). Instruction counts do not move: a script that fires
N events, under ``valgrind --tool=callgrind``, gives per event (I(N=2200) - I(N=200)) / 2000.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pluggy

from bench.harness import Row, interleaved_per_call_us, per_call_us, per_call_us_async
from hookgate import Engine
from hookgate.settings import Settings

hookspec = pluggy.HookspecMarker("bench")
hookimpl = pluggy.HookimplMarker("bench")


class Spec:
    @hookspec
    def pre_tool_use(self, tool_name: str, tool_input: dict[str, Any]) -> None: ...


def _make_plugin(index: int) -> object:
    class Plugin:
        @hookimpl
        def pre_tool_use(self, tool_name: str, tool_input: dict[str, Any]) -> None:
            return None

    Plugin.__name__ = f"Plugin{index}"
    return Plugin()


def _noop(event: Any) -> None:
    return None


def _engine(hooks: int, *, inline: bool = False, interrupt: bool = True) -> Engine:
    engine = Engine(settings=Settings(inline_sync_hooks=inline, interrupt_plain_hooks=interrupt))
    for index in range(hooks):
        engine.hook("pre_tool_use", name=f"h{index}")(_noop)
    return engine


def run(quick: bool = False) -> list[Row]:
    min_time = 0.05 if quick else 0.2
    payload = {"tool_name": "exec", "tool_input": {"cmd": "ls"}}
    rows: list[Row] = []

    # Zero matching hooks: a hook exists for another event, none for this one.
    engine0 = _engine(0)
    engine0.hook("stop")(_noop)
    bare = per_call_us(lambda: None, min_time=min_time)
    zero_sync = per_call_us(lambda: engine0.fire_sync("pre_tool_use", payload), min_time=min_time)
    zero_async = per_call_us_async(lambda: engine0.fire("pre_tool_use", payload),
                                   min_time=min_time)
    rows.append(Row("core", "fire_sync, 0 matching hooks", zero_sync, "µs", "bare no-op call",
                    bare, "< 2 µs", zero_sync < 2.0))
    rows.append(Row("core", "await fire, 0 matching hooks", zero_async, "µs", None, None,
                    "< 2 µs", zero_async < 2.0))

    for count in (1, 10):
        engine = _engine(count)
        functions = [_noop] * count

        def direct(functions: list[Any] = functions) -> None:
            for fn in functions:
                fn(payload)

        pm = pluggy.PluginManager("bench")
        pm.add_hookspecs(Spec)
        for index in range(count):
            pm.register(_make_plugin(index))
        tool_input: dict[str, Any] = payload["tool_input"]  # type: ignore[assignment]

        def via_pluggy(
            pm: pluggy.PluginManager = pm, tool_input: dict[str, Any] = tool_input
        ) -> None:
            pm.hook.pre_tool_use(tool_name="exec", tool_input=tool_input)

        inline = _engine(count, inline=True)
        threaded = _engine(count, interrupt=False)
        # In turns: each ratio to pluggy is then taken under the same load.
        timed = interleaved_per_call_us(
            {
                "direct": direct,
                "pluggy": via_pluggy,
                "sync": lambda engine=engine: engine.fire_sync("pre_tool_use", payload),
                "inline": lambda engine=inline: engine.fire_sync("pre_tool_use", payload),
                "threaded": lambda engine=threaded: engine.fire_sync("pre_tool_use", payload),
            },
            min_time=min_time,
        )
        direct_us, pluggy_us, sync_us = timed["direct"], timed["pluggy"], timed["sync"]
        inline_us, threaded_us = timed["inline"], timed["threaded"]
        async_us = per_call_us_async(lambda engine=engine: engine.fire("pre_tool_use", payload),
                                     min_time=min_time)
        rows.append(Row("core", f"direct calls of {count} function(s)", direct_us, "µs"))
        goal = "<= 1.5x pluggy" if count == 10 else None
        passed = (sync_us / pluggy_us <= 1.5) if count == 10 else None
        rows.append(Row("core", f"fire_sync, {count} matching callable hook(s)", sync_us, "µs",
                        f"pluggy calling the same {count} function(s)", pluggy_us, goal, passed))
        rows.append(Row("core", f"await fire, {count} matching callable hook(s)", async_us, "µs",
                        f"pluggy calling the same {count} function(s)", pluggy_us))
        rows.append(Row("core", f"fire_sync, {count} hook(s), inline_sync_hooks", inline_us,
                        "µs", f"pluggy calling the same {count} function(s)", pluggy_us))
        rows.append(Row("core", f"fire_sync, {count} hook(s), worker thread", threaded_us,
                        "µs", f"pluggy calling the same {count} function(s)", pluggy_us))
        engine.close()
        inline.close()
        threaded.close()
    asyncio.run(asyncio.sleep(0))
    return rows
