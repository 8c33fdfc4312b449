"""Claude Code: what one hook event costs, the way Claude Code pays it (a new process each).

* ``hookgate claude-code`` with a local hooks file (one command hook that blocks ``rm -rf``),
  a PreToolUse input on stdin, against a bare ``python3 -c pass`` (the interpreter start no
  Python bridge can avoid) and a bare ``sh`` hook script doing the same check (what a plain
  Claude Code command hook costs). Goal: 40 ms median on a machine where ``python3 -c pass``
  takes 10 ms, i.e. at most 4x ``python3 -c pass`` here.
* The ``curl`` transport (the command hook ``install --gateway`` writes) posting the same
  input to a real ``hookgate serve`` with one callable hook, against the bare ``sh`` hook
  script. Goal: under 15 ms added per event. The ``python`` transport beside it.

Each process runs in turn with the others (machine noise hits them alike); medians. Python
writes bytecode here (the bench removes PYTHONDONTWRITEBYTECODE), as on a user's machine.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

from bench.bench_gateway import _start
from bench.harness import Row
from hookgate.integrations.claude_code.settings_file import gateway_hook

EVENT = {"session_id": "bench", "transcript_path": "", "cwd": "/tmp", "permission_mode":
         "default", "hook_event_name": "PreToolUse", "tool_name": "Bash",
         "tool_input": {"command": "ls -la /tmp"}, "tool_use_id": "toolu_1"}
CHECK = "grep -q 'rm -rf' && { echo 'rm -rf is not allowed' >&2; exit 2; }; exit 0"
HOOKS = {"hooks": [{"name": "no-rm-rf", "event": "pre_tool_use", "matcher": "^Bash$",
                    "handler_type": "command", "config": {"command": CHECK}}]}
GATEWAY_HOOK = {"event": "pre_tool_use", "handler_type": "callable", "scope": "global",
                "name": "bench allow", "matcher": "^Bash$",
                "config": {"callable": "bench.gateway_hooks:allow"}}


def _medians_ms(
    commands: dict[str, list[str]], env: dict[str, str], rounds: int
) -> dict[str, float]:
    stdin = json.dumps(EVENT).encode()
    times: dict[str, list[float]] = {name: [] for name in commands}
    names = list(commands)
    for index in range(rounds):
        shift = index % len(names)
        for name in names[shift:] + names[:shift]:
            started = time.perf_counter()
            done = subprocess.run(commands[name], input=stdin, env=env, capture_output=True,
                                  check=False)
            times[name].append((time.perf_counter() - started) * 1000)
            if done.returncode != 0:
                raise RuntimeError(f"{name} failed ({done.returncode}): {done.stderr[-500:]!r}")
    return {name: statistics.median(values) for name, values in times.items()}


def run(quick: bool = False) -> list[Row]:
    rounds = 15 if quick else 60
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    hookgate = str(Path(sys.executable).parent / "hookgate")
    rows: list[Row] = []
    with tempfile.TemporaryDirectory() as tmp:
        hooks = Path(tmp) / "hookgate.json"
        hooks.write_text(json.dumps(HOOKS))
        yaml_hooks = Path(tmp) / "hookgate.yaml"
        yaml_hooks.write_text(f"hooks:\n  - {json.dumps(HOOKS['hooks'][0])}\n")
        local = {
            "bridge": [hookgate, "claude-code", "--config", str(yaml_hooks)],
            "bridge-json": [hookgate, "claude-code", "--config", str(hooks)],
            "python": [sys.executable, "-c", "pass"],
            "sh": ["/bin/sh", "-c", CHECK],
        }
        _medians_ms(local, env, 2)  # warm up: bytecode written, caches filled
        ms = _medians_ms(local, env, rounds)
        goal = 4.0 * ms["python"]
        rows += [
            Row("claude", "hookgate claude-code, local YAML file, 1 command hook", ms["bridge"],
                "ms", "python3 -c pass (interpreter start)", ms["python"],
                "<= 4x python start (40 ms at 10 ms)", ms["bridge"] <= goal),
            Row("claude", "hookgate claude-code, local JSON file, 1 command hook",
                ms["bridge-json"], "ms", "python3 -c pass (interpreter start)", ms["python"],
                "<= 4x python start (40 ms at 10 ms)", ms["bridge-json"] <= goal),
            Row("claude", "bare sh hook script (same check)", ms["sh"], "ms"),
        ]
        proc, port, key = _start(Path(tmp) / "data")
        try:
            url = f"http://127.0.0.1:{port}"
            httpx.post(url + "/api/v1/hooks", json=GATEWAY_HOOK,
                       headers={"Authorization": f"Bearer {key}"}).raise_for_status()
            curl = gateway_hook(url, event="PreToolUse", transport="curl")["command"]
            remote = {"curl": ["/bin/sh", "-c", curl], "sh": ["/bin/sh", "-c", CHECK],
                      "python-transport": [hookgate, "claude-code", "--gateway", url],
                      "curl-healthz": ["curl", "-sS", "-f", "-o", "/dev/null", url + "/healthz"],
                      "python": [sys.executable, "-c", "pass"]}
            gw_env = {**env, "HOOKGATE_API_KEY": key}
            _medians_ms(remote, gw_env, 3)
            ms = _medians_ms(remote, gw_env, rounds)
        finally:
            proc.terminate()
            proc.wait(30)
        added = ms["curl"] - ms["sh"]
        rows.append(Row("claude", "curl transport to a gateway: added per event", added, "ms",
                        "bare sh hook script (same check)", ms["sh"], "< 15 ms", added < 15))
        rows.append(Row("claude", "of which curl's start and a request (GET /healthz)",
                        ms["curl-healthz"] - ms["sh"], "ms", "bare sh hook script (same check)",
                        ms["sh"]))
        rows.append(Row("claude", "python transport (hookgate claude-code --gateway)",
                        ms["python-transport"], "ms", "python3 -c pass (interpreter start)",
                        ms["python"]))
    return rows
