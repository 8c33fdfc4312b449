"""Codex CLI and Gemini CLI: what one hook event costs, the way each agent pays it (a new
process per event), beside a bare ``sh`` hook doing the same check.

For each agent: ``hookgate codex|gemini --config F`` through the warm process (the relay
started per event; one command hook that the event runs), the first event of a session (no
warm process yet: the relay starts one and runs the event itself), and the bridge asking a
real ``hookgate serve`` (``--gateway``). Goal of issue 28: a local event at most 2x the bare
``sh`` hook. Medians of wall clock and of the per-event process's CPU time (for the warm path
the relay's alone), each command run in turn with the others; see bench_claude_code.
"""

from __future__ import annotations

import compileall
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

import hookgate as hookgate_package
from bench.bench_claude_code import CHECK, GATEWAY_HOOK, HOOKS, _medians_ms, _stop_warm
from bench.bench_gateway import _start
from bench.harness import Row

#: One PreToolUse / BeforeTool input per agent, in its own shape.
INPUTS = {
    "codex": {"session_id": "bench", "cwd": "/tmp", "hook_event_name": "PreToolUse",
              "model": "m", "permission_mode": "bypassPermissions", "turn_id": "t1",
              "tool_name": "Bash", "tool_input": {"command": "ls -la /tmp"},
              "tool_use_id": "call_1"},
    "gemini": {"session_id": "bench", "cwd": "/tmp", "hook_event_name": "BeforeTool",
               "timestamp": "2026-11-27T00:00:00Z", "tool_name": "run_shell_command",
               "tool_input": {"command": "ls -la /tmp"}},
}


def _first_event_ms(command: list[str], stdin: bytes, env: dict[str, str], folder: Path,
                    rounds: int) -> float:
    from tests.support.warm_bridge import warm_pids

    times = []
    for _ in range(rounds):
        _stop_warm(folder)
        started = time.perf_counter()
        subprocess.run(command, input=stdin, env={**env, "HOOKGATE_CLAUDE_CODE_WARM": "on"},
                       capture_output=True, check=True)
        times.append((time.perf_counter() - started) * 1000)
        deadline = time.monotonic() + 60
        while not warm_pids(folder) and time.monotonic() < deadline:
            time.sleep(0.02)
    return statistics.median(times)


def run(quick: bool = False) -> list[Row]:
    rounds = 15 if quick else 60
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    hookgate = str(Path(sys.executable).parent / "hookgate")
    compileall.compile_dir(str(Path(hookgate_package.__file__ or "").parent), quiet=1)
    warm_folder = Path(tempfile.mkdtemp(prefix="hgw-", dir="/tmp"))
    env["HOOKGATE_CLAUDE_CODE_WARM_DIR"] = str(warm_folder)
    env["HOOKGATE_CLAUDE_CODE_WARM"] = "require"
    rows: list[Row] = []
    try:
        with tempfile.TemporaryDirectory() as tmp:
            hooks = Path(tmp) / "hookgate.json"
            hooks.write_text(json.dumps(HOOKS))
            proc, port, key = _start(Path(tmp) / "data")
            try:
                url = f"http://127.0.0.1:{port}"
                httpx.post(url + "/api/v1/hooks", json=GATEWAY_HOOK,
                           headers={"Authorization": f"Bearer {key}"}).raise_for_status()
                for agent, event in INPUTS.items():
                    rows += _agent_rows(agent, event, hookgate, hooks, url, key, env, rounds,
                                        warm_folder)
            finally:
                proc.terminate()
                proc.wait(30)
    finally:
        _stop_warm(warm_folder)
        shutil.rmtree(warm_folder, ignore_errors=True)
    return rows


def _agent_rows(agent: str, event: dict[str, object], hookgate: str, hooks: Path, url: str,
                key: str, env: dict[str, str], rounds: int, warm_folder: Path) -> list[Row]:
    stdin = json.dumps(event).encode()
    commands = {
        "local": [hookgate, agent, "--config", str(hooks)],
        "gateway": [hookgate, agent, "--gateway", url],
        "sh": ["/bin/sh", "-c", CHECK],
    }
    stdins = dict.fromkeys(commands, stdin)
    envs = {"gateway": {**env, "HOOKGATE_API_KEY": key}}
    _medians_ms(commands, env, 2, envs, stdins)  # warm up
    both = _medians_ms(commands, env, rounds, envs, stdins)
    sh_ms = both["sh"][0]
    first = _first_event_ms(commands["local"], stdin, env, warm_folder, max(5, rounds // 6))
    local_ms, local_cpu = both["local"]
    bare = "bare sh hook script (same check)"
    return [
        Row(agent, f"hookgate {agent}, warm process, 1 command hook; the relay's CPU "
            f"{local_cpu:.1f} ms", local_ms, "ms", bare, sh_ms, "<= 2x a bare sh hook",
            local_ms <= 2.0 * sh_ms),
        Row(agent, "the first event: no warm process yet", first, "ms", bare, sh_ms),
        Row(agent, f"hookgate {agent} --gateway (one request to hookgate serve)",
            both["gateway"][0], "ms", bare, sh_ms),
        Row(agent, "bare sh hook script (same check)", sh_ms, "ms"),
    ]
