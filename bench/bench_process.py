"""Process hooks: one ``pre_tool_use`` round trip through a long-lived JSON-RPC child.

Measured in one event loop; the candidates take turns call by call (so machine noise hits
them alike) and the median per-call time is reported:

* hookgate: ``engine.fire`` with one ``process`` hook (chain, JSON-RPC encode/decode, the
  writer and the reader included);
* the JSON-RPC channel alone (``HookProcess.call``, no engine), to show where time goes;
* bare echo, same child: the same request line written to the same kind of child over a
  pipe and its answer line read back, no hookgate (goal: at most 1.5x);
* bare echo, ``cat``: a line written to ``cat`` and read back (the floor of a pipe round
  trip; reported for reference, the child itself is not doing JSON work);
* a fresh Python interpreter per call, which is what a per-call command hook costs.

The bare echo writes the very line hookgate writes for the event (:data:`REQUEST`: the same
params, ``meta`` included), so the child does the same work for every candidate.

``python -m bench.callgrind process`` counts this process's instructions per
:data:`CALLGRIND_CALLS` round trips of each candidate (the child runs outside valgrind and is
not counted; ``process:without`` is the bare echo, the ratio column is against it): what
hookgate executes per round trip, whatever the machine's load.
"""

from __future__ import annotations

import asyncio
import gc
import json
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path

from bench.callgrind import active, measured, rounds
from bench.harness import Row, interleaved_medians_us
from hookgate import Engine
from hookgate.handlers.process.config import parse_spec
from hookgate.handlers.process.protocol import build_params
from hookgate.handlers.process.rpc import HookProcess

SCRIPT = str(Path(__file__).parent / "scripts" / "jsonrpc_echo_hook.py")
PAYLOAD = {"tool_name": "exec", "tool_input": {"cmd": "ls -la /tmp", "timeout": 30}}
#: The request line hookgate writes for PAYLOAD (its first call: id 1).
REQUEST = json.dumps(
    {"jsonrpc": "2.0", "id": 1, "method": "hook.before_tool",
     "params": build_params("pre_tool_use", PAYLOAD)},
    separators=(",", ":"),
).encode() + b"\n"
#: Round trips per counted run under callgrind.
CALLGRIND_CALLS = 500


async def _pipe(*argv: str) -> tuple[asyncio.subprocess.Process, Callable[[], Awaitable[bytes]]]:
    proc = await asyncio.create_subprocess_exec(
        *argv, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE
    )
    assert proc.stdin is not None and proc.stdout is not None
    stdin, stdout = proc.stdin, proc.stdout

    async def round_trip() -> bytes:
        stdin.write(REQUEST)
        await stdin.drain()
        return await stdout.readline()

    return proc, round_trip


async def _fresh_interpreter() -> bytes:
    proc = await asyncio.create_subprocess_exec(
        sys.executable, SCRIPT, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE
    )
    out, _ = await proc.communicate(REQUEST)
    return out


async def _measure(quick: bool, *, fresh: bool = True) -> dict[str, float]:
    rounds = 1000 if quick else 10000
    engine = Engine([{"event": "pre_tool_use", "handler_type": "process", "name": "echo",
                      "matcher": "^(exec|shell)$",  # as users write hooks
                      "config": {"command": [sys.executable, SCRIPT]}}])
    same_proc, same_child = await _pipe(sys.executable, SCRIPT)
    cat_proc, cat = await _pipe("cat")
    channel = HookProcess(parse_spec({"command": [sys.executable, SCRIPT]}), label="bench",
                          modes=["tool"])
    params = build_params("pre_tool_use", PAYLOAD)

    async def rpc() -> object:
        return await channel.call("hook.before_tool", params)

    async def hook() -> object:
        outcome = await engine.fire("pre_tool_use", PAYLOAD)
        assert outcome.decision == "allow", outcome.reason
        return outcome

    try:
        candidates = {"hook": hook, "rpc": rpc, "same": same_child, "cat": cat}
        if active():
            await _count(candidates)
            return {}
        await interleaved_medians_us(candidates, samples=200)  # warm up
        us = await interleaved_medians_us(candidates, samples=rounds)
        if fresh:
            us.update(await interleaved_medians_us(
                {"fresh": _fresh_interpreter}, samples=10 if quick else 40
            ))
    finally:
        await engine.aclose()
        await channel.aclose()
        for proc in (same_proc, cat_proc):
            assert proc.stdin is not None
            proc.stdin.close()
            await proc.wait()
    return us


async def _count(candidates: dict[str, Callable[[], Awaitable[object]]]) -> None:
    """Under callgrind: each candidate's instructions for :data:`CALLGRIND_CALLS` calls."""
    labels = {"hook": "engine.fire", "rpc": "channel", "same": "without", "cat": "cat"}
    for make in candidates.values():
        for _ in range(20):  # warm-up: the child's start, caches
            await make()
    # What imports and warm-up left is no candidate's garbage: frozen out of the collections,
    # a full one does not land in whichever candidate happens to run (a 7 % spread).
    gc.collect()
    gc.freeze()
    for _ in range(rounds()):
        for name, make in candidates.items():
            with measured(f"process:{labels[name]}"):
                for _ in range(CALLGRIND_CALLS):
                    await make()


def _round_trip(us: dict[str, float], group: str) -> Row:
    hook = us["hook"]
    return Row(group, "process hook round trip (engine.fire)", hook, "µs",
               "bare line echo over a pipe, same child", us["same"], "<= 1.5x",
               hook <= 1.5 * us["same"])


def round_trip_row(quick: bool = False) -> Row:
    """The goal row alone (bench_core reports it too)."""
    return _round_trip(asyncio.run(_measure(quick, fresh=False)), "core")


def run(quick: bool = False) -> list[Row]:
    us = asyncio.run(_measure(quick, fresh=not active()))
    if active():
        return []
    hook = us["hook"]
    return [
        _round_trip(us, "process"),
        Row("process", "process hook round trip (engine.fire)", hook, "µs",
            "bare line echo over a pipe, cat", us["cat"]),
        Row("process", "JSON-RPC channel alone (HookProcess.call)", us["rpc"], "µs",
            "bare line echo over a pipe, same child", us["same"]),
        Row("process", "fresh python interpreter per call", us["fresh"], "µs",
            "process hook round trip", hook),
    ]
