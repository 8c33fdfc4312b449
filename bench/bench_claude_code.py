"""Claude Code: what one hook event costs, the way Claude Code pays it (a new process each).

* ``hookgate claude-code`` with a local hooks file (one command hook that blocks ``rm -rf``),
  a PreToolUse input on stdin that the hook runs for, against a bare ``python3 -c pass`` (the
  interpreter start no Python bridge can avoid) and a bare ``sh`` hook script doing the same
  check (what a plain Claude Code command hook costs). Goal: 40 ms median on a machine where
  ``python3 -c pass`` takes 10 ms, i.e. at most 4x ``python3 -c pass`` here.
  By default the event goes through the warm process, as ``install`` sets it up: the hook is
  the compiled relay in Claude Code's exec form, started with no shell (``relay.bash``
  through ``/bin/sh -c`` where no C compiler can build it), which hands the event to the
  warm process's resident, which answers it in place; rows for an event the hook runs for
  and one the file has no hook for, and the first event, which finds no warm process (the
  relay hands it to the Python relay, which starts one and answers the event in its own
  process). Then the event in its own process (``HOOKGATE_CLAUDE_CODE_WARM=off``): a JSON
  and a YAML file, each with the definition cache filled (every run after the file's first)
  and without it (``HOOKGATE_CLAUDE_CODE_CACHE=off``: every run validates, as a first run
  does), and an event the file has no hook for.
* The ``curl`` transport (the command hook ``install --gateway`` writes) posting the same
  input to a real ``hookgate serve`` with one callable hook, against the bare ``sh`` hook
  script. Goal: under 15 ms added per event. The ``python`` transport beside it.

Each process runs in turn with the others (machine noise hits them alike); medians of wall
clock time and of the processes' CPU time (user + system, which load disturbs less; for the
warm path that is the relay's alone: the warm process's worker is not its child). As on a
user's machine (pip writes bytecode when it installs), hookgate's modules are compiled first
(``compileall``) and the runs keep PYTHONDONTWRITEBYTECODE unset; the definition cache lives
in a temporary XDG_CACHE_HOME.
"""

from __future__ import annotations

import compileall
import json
import os
import resource
import shlex
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

import hookgate as hookgate_package
from bench.bench_gateway import _start
from bench.harness import Row
from hookgate.integrations.claude_code import compiled_relay, shell_relay
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
    commands: dict[str, list[str]], env: dict[str, str], rounds: int,
    envs: dict[str, dict[str, str]] | None = None, stdins: dict[str, bytes] | None = None,
) -> dict[str, tuple[float, float]]:
    """(wall, CPU) medians in ms per command."""
    stdin = json.dumps(EVENT).encode()
    times: dict[str, list[tuple[float, float]]] = {name: [] for name in commands}
    names = list(commands)
    for index in range(rounds):
        shift = index % len(names)
        for name in names[shift:] + names[:shift]:
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            started = time.perf_counter()
            done = subprocess.run(commands[name], input=(stdins or {}).get(name, stdin),
                                  env=(envs or {}).get(name, env), capture_output=True,
                                  check=False)
            wall = (time.perf_counter() - started) * 1000
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpu = (after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime) * 1000
            times[name].append((wall, cpu))
            if done.returncode != 0:
                raise RuntimeError(f"{name} failed ({done.returncode}): {done.stderr[-500:]!r}")
    return {name: (statistics.median(t[0] for t in values),
                   statistics.median(t[1] for t in values)) for name, values in times.items()}


def _wall(ms: dict[str, tuple[float, float]]) -> dict[str, float]:
    return {name: value[0] for name, value in ms.items()}


def _stop_warm(folder: Path) -> None:
    """Stop the warm processes in ``folder`` and wait until they are gone."""
    from tests.support.warm_bridge import warm_pids

    for pid in warm_pids(folder).values():
        os.kill(pid, signal.SIGTERM)
        while Path(f"/proc/{pid}").exists() and "Z" not in Path(
                f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0]:
            time.sleep(0.01)


def _first_events_ms(command: list[str], env: dict[str, str], folder: Path,
                     rounds: int) -> float:
    """Median wall time of an event that finds no warm process: it starts one and runs the
    event itself meanwhile (each round waits until that warm process is up, and stops it)."""
    from tests.support.warm_bridge import warm_pids

    times = []
    for _ in range(rounds):
        _stop_warm(folder)
        started = time.perf_counter()
        done = subprocess.run(command, input=json.dumps(EVENT).encode(),
                              env={**env, "HOOKGATE_CLAUDE_CODE_WARM": "on",
                                   "HOOKGATE_SHELL_RELAY": "fallback"},
                              capture_output=True, check=False)
        times.append((time.perf_counter() - started) * 1000)
        if done.returncode != 0:
            raise RuntimeError(f"first event failed: {done.stderr[-500:]!r}")
        deadline = time.monotonic() + 60
        while not (warm_pids(folder) and Path(shell_relay.endpoint_path(str(folder))).exists()
                   ) and time.monotonic() < deadline:
            time.sleep(0.02)
    return statistics.median(times)


def run(quick: bool = False) -> list[Row]:
    rounds = 15 if quick else 60
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    hookgate = str(Path(sys.executable).parent / "hookgate")
    package = Path(hookgate_package.__file__ or "").parent
    # Bytecode as an installed hookgate has it (this environment may forbid writing it).
    compileall.compile_dir(str(package), quiet=1)
    rows: list[Row] = []
    warm_folder = Path(tempfile.mkdtemp(prefix="hgw-", dir="/tmp"))  # a short socket path
    env["HOOKGATE_CLAUDE_CODE_WARM_DIR"] = str(warm_folder)
    try:
        rows += _local_rows(env, hookgate, rounds, warm_folder)
    finally:
        _stop_warm(warm_folder)
        shutil.rmtree(warm_folder, ignore_errors=True)
    return rows


def _local_rows(env: dict[str, str], hookgate: str, rounds: int, warm_folder: Path
                ) -> list[Row]:
    rows: list[Row] = []
    with tempfile.TemporaryDirectory() as tmp:
        env["XDG_CACHE_HOME"] = str(Path(tmp) / "cache")
        env["HOOKGATE_CLAUDE_CODE_WARM"] = "require"  # measured: the warm path, or a failure
        own = {**env, "HOOKGATE_CLAUDE_CODE_WARM": "off"}
        no_cache = {**own, "HOOKGATE_CLAUDE_CODE_CACHE": "off"}
        hooks = Path(tmp) / "hookgate.json"
        hooks.write_text(json.dumps(HOOKS))
        yaml_hooks = Path(tmp) / "hookgate.yaml"
        yaml_hooks.write_text(f"hooks:\n  - {json.dumps(HOOKS['hooks'][0])}\n")
        # the installed hook: the compiled relay in Claude Code's exec form (Claude Code starts
        # it with no shell), relay.bash through /bin/sh -c where it cannot be built
        binary = compiled_relay.build()
        relay = shell_relay.relay_argv(hookgate, "claude-code", ["--config", str(hooks)], 30,
                                       str(warm_folder), binary)
        installed = relay if binary else ["/bin/sh", "-c", shlex.join(relay)]
        installed_name = ("compiled relay, exec form" if binary
                          else "relay.bash, no C compiler")
        env["HOOKGATE_SHELL_RELAY"] = "require"  # measured: the shell relay's path, or a failure
        local = {
            "warm": installed,
            "warm-no-hook": installed,
            "yaml": [hookgate, "claude-code", "--config", str(yaml_hooks)],
            "json": [hookgate, "claude-code", "--config", str(hooks)],
            "yaml-validated": [hookgate, "claude-code", "--config", str(yaml_hooks)],
            "json-validated": [hookgate, "claude-code", "--config", str(hooks)],
            "no-hook": [hookgate, "claude-code", "--config", str(hooks)],
            "python": [sys.executable, "-c", "pass"],
            # the floor of any first event with nothing warm: a Python and the event path's
            # imports, no event
            "imports": [sys.executable, "-c",
                        "import hookgate.integrations.claude_code.local_run"],
            "sh": ["/bin/sh", "-c", CHECK],
        }
        envs = {"yaml-validated": no_cache, "json-validated": no_cache, "yaml": own,
                "json": own, "no-hook": own}
        post = json.dumps({**EVENT, "hook_event_name": "PostToolUse", "tool_response": "ok"})
        stdins = {"no-hook": post.encode(), "warm-no-hook": post.encode()}
        # first: it leaves the warm process running, its endpoint written
        first = _first_events_ms(local["warm"], env, warm_folder, max(5, rounds // 6))
        _medians_ms(local, env, 2, envs, stdins)  # warm up: the cache filled, the OS caches
        both = _medians_ms(local, env, rounds, envs, stdins)
        ms = _wall(both)
        python_ms, python_cpu = both["python"]
        goal = "<= 40 ms, i.e. <= 4x python start (10 ms)"
        compiled = ("python3 -c pass (interpreter start); hookgate's bytecode compiled, "
                    "PYTHONDONTWRITEBYTECODE unset")
        runs = "the hook runs"
        for name, text in (
            ("warm", f"installed hook ({installed_name}, warm process), JSON file, 1 command "
                     f"hook ({runs})"),
            ("warm-no-hook", "warm process, an event the file has no hook for (PostToolUse)"),
        ):
            wall, cpu = both[name]
            text += f"; {wall / ms['sh']:.2f}x the bare sh hook"
            rows.append(Row("claude", f"{text}; the relay's own CPU {cpu:.1f} ms", wall, "ms",
                            compiled, python_ms, goal, wall <= 4.0 * python_ms))
        rows.append(Row("claude", "the first event: no warm process, the Python relay starts one "
                        f"and runs the event itself ({runs})", first, "ms", compiled, python_ms))
        own_process = "in its own process (HOOKGATE_CLAUDE_CODE_WARM=off)"
        for name, text in (
            ("json", f"{own_process}: JSON file, 1 command hook, cached ({runs})"),
            ("yaml", f"{own_process}: YAML file, 1 command hook, cached ({runs})"),
            ("json-validated", f"the same JSON file validated (cache off / first run; {runs})"),
            ("yaml-validated", f"the same YAML file validated (cache off / first run; {runs})"),
            ("no-hook", f"{own_process}: an event the cached file has no hook for"),
        ):
            wall, cpu = both[name]
            rows.append(Row("claude", f"{text}; CPU {cpu:.1f} ms = {cpu / python_cpu:.1f}x "
                            f"python's {python_cpu:.1f} ms", wall, "ms", compiled, python_ms))
        wall, cpu = both["imports"]
        rows.append(Row("claude", "the first event's floor with nothing warm: python importing "
                        f"the event path (local_run), no event; CPU {cpu:.1f} ms", wall, "ms",
                        compiled, python_ms))
        rows.append(Row("claude", "bare sh hook script (same check)", ms["sh"], "ms"))
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
            gw_env = {**own, "HOOKGATE_API_KEY": key}
            _medians_ms(remote, gw_env, 3)
            ms = _wall(_medians_ms(remote, gw_env, rounds))
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
