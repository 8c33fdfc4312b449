"""Command hooks: one ``pre_tool_use`` round trip through ``sh -c`` and a hook script.

Compared with a bare ``asyncio.create_subprocess_exec`` of the same ``sh -c`` command
line, writing the same event JSON to stdin and reading stdout/stderr (``communicate``).
hookgate adds the chain, a new process group, the environment allowlist, capped reads and
the group kill. Goal: at most 1.15x. The two take turns call by call (so machine noise hits
them alike); the median per-call time is reported.

The ``sandboxed`` row is the same hook under the gateway's hook sandbox (bubblewrap: a new
PID namespace and a read-only bind of the file system), against the unsandboxed hook: what
``hookgate serve --hook-sandbox`` costs per command-hook call. Reported, no goal.
"""

from __future__ import annotations

import asyncio
import json
import tempfile
from pathlib import Path

from bench.harness import Row, interleaved_medians_us
from hookgate import Engine, Settings
from hookgate.sandbox import find_bwrap

PAYLOAD = {"tool_name": "exec", "tool_input": {"cmd": "ls -la /tmp"}, "session_id": "bench"}
SCRIPT = """#!/bin/sh
# Reads the event, answers allow with a line of context.
cat > /dev/null
echo '{"decision": "allow", "additional_context": "checked"}'
"""


async def _measure(quick: bool, script: Path) -> dict[str, float]:
    command = f"sh {script}"
    rounds = 150 if quick else 1500
    definition = {"event": "pre_tool_use", "handler_type": "command", "name": "script",
                  "config": {"command": command}}
    engine = Engine([definition])
    sandboxed = Engine([definition], settings=Settings(hook_sandbox="bwrap"))
    stdin = json.dumps({"hook_event": "pre_tool_use", **PAYLOAD}).encode()

    async def hook() -> object:
        outcome = await engine.fire("pre_tool_use", PAYLOAD)
        assert outcome.additional_context == ["checked"], outcome.to_dict()
        return outcome

    async def bare() -> object:
        proc = await asyncio.create_subprocess_exec(
            "/bin/sh", "-c", command, stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        )
        out, _ = await proc.communicate(stdin)
        json.loads(out)
        return out

    async def boxed() -> object:
        outcome = await sandboxed.fire("pre_tool_use", PAYLOAD)
        assert outcome.additional_context == ["checked"], outcome.to_dict()
        return outcome

    calls = {"hook": hook, "bare": bare}
    if find_bwrap() is not None:
        calls["sandboxed"] = boxed
    try:
        await interleaved_medians_us(calls, samples=20)  # warm up
        return await interleaved_medians_us(calls, samples=rounds)
    finally:
        await engine.aclose()
        await sandboxed.aclose()


def run(quick: bool = False) -> list[Row]:
    with tempfile.TemporaryDirectory() as directory:
        script = Path(directory) / "hook.sh"
        script.write_text(SCRIPT)
        us = asyncio.run(_measure(quick, script))
    rows = [
        Row("command", "command hook round trip (engine.fire)", us["hook"], "µs",
            "bare create_subprocess_exec of the same sh -c", us["bare"], "<= 1.15x",
            us["hook"] <= 1.15 * us["bare"]),
    ]
    if "sandboxed" in us:
        rows.append(Row("command", "command hook round trip, sandboxed (bubblewrap)",
                        us["sandboxed"], "µs", "the same hook unsandboxed", us["hook"]))
    return rows
