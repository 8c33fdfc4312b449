"""Claude Code, Codex CLI and Gemini CLI: what one hook event costs, the way each agent pays
it, the event's JSON on stdin: a command line through the agent's own shell (Claude Code:
``/bin/sh -c``; Codex and Gemini CLI: ``bash -c``), or, for an exec-form hook (Claude
Code's ``command`` and ``args``), the program started with no shell.

For each agent, beside a bare ``sh`` hook doing the same check (``grep`` for ``rm -rf``) run
through that agent's shell:

* **local**: the hook ``hookgate <agent> install --config F`` writes (the compiled relay,
  ``relay.c``, in exec form for Claude Code, which then starts no shell, and as a command
  line for Codex and Gemini; it hands the event to the warm process, whose resident runs the
  same check as a command hook, in place); for Claude Code also the same relay as a
  shell-form command; an event the hook runs for, and one the file has no hook for; the
  same with ``relay.bash`` (what install writes without a C compiler); and the same through
  a second warm process without a resident
  (``HOOKGATE_CLAUDE_CODE_WARM_RESIDENT=off``: a fork per event, as before the resident);
* **local, a callable hook**: the same check as a Python function (a ``callable`` hook, in a
  module beside its hooks file): the resident hands its events to the worker kept for that
  hooks file and project (the first one forks it), which answers them without a fork;
* **the Python relay**: ``hookgate <agent> --config F`` as the per-event command (the path
  before the shell relay; still the fallback), through the same warm process;
* **gateway**: Claude Code's ``curl`` transport (what ``install --gateway`` writes); for Codex
  and Gemini the shell relay with ``--gateway`` (the warm process asks ``hookgate serve``);
* **the first event with no warm process at all**: the shell relay finds none, hands the
  event to the Python relay, which answers it in its own process and then starts one.

Each command runs in turn with the others (machine noise hits them alike), with a pause
between runs as between an agent's events (the warm process replaces a forked worker an
event used after 0.25 s). Reported: medians of wall clock time, the median of the per-round
ratio to the bare ``sh`` hook (the goal of issue 28: at most 2x), and all the CPU an event
costs: the per-event process tree's (the relay's) plus the warm processes' and the
resident's for it (the hook they ran; for a fork, the worker and the new waiting worker
that replaces it), against the bare hook's.
"""

from __future__ import annotations

import compileall
import json
import os
import resource
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Final

import httpx

import hookgate as hookgate_package
from bench.bench_claude_code import CHECK, EVENT, GATEWAY_HOOK, HOOKS, _stop_warm
from bench.bench_gateway import _start
from bench.harness import Row
from hookgate.integrations.claude_code import compiled_relay, shell_relay
from hookgate.integrations.claude_code import warm_wire as wire
from hookgate.integrations.claude_code.settings_file import gateway_hook

#: One tool event per agent, in its own shape, and one the hooks file has nothing for.
INPUTS: dict[str, dict[str, object]] = {
    "claude-code": {**EVENT},
    "codex": {"session_id": "bench", "cwd": "/tmp", "hook_event_name": "PreToolUse",
              "model": "m", "permission_mode": "bypassPermissions", "turn_id": "t1",
              "tool_name": "Bash", "tool_input": {"command": "ls -la /tmp"},
              "tool_use_id": "call_1"},
    "gemini": {"session_id": "bench", "cwd": "/tmp", "hook_event_name": "BeforeTool",
               "timestamp": "2026-11-27T00:00:00Z", "tool_name": "run_shell_command",
               "tool_input": {"command": "ls -la /tmp"}},
}
#: The same check as a ``callable`` hook: a Python function in a module beside its hooks file.
GUARD_MODULE: Final = """\
def no_rm_rf(event):
    if "rm -rf" in str((event.tool_input or {}).get("command", "")):
        return {"decision": "block", "reason": "rm -rf is not allowed"}
    return None
"""
CALLABLE_HOOKS: Final = {"hooks": [{"name": "no-rm-rf", "event": "pre_tool_use",
                                    "matcher": "^Bash$", "handler_type": "callable",
                                    "config": {"callable": "bench_agents_guard:no_rm_rf"}}]}
NO_HOOK_EVENTS = {"claude-code": "PostToolUse", "codex": "PostToolUse", "gemini": "AfterTool"}
#: How each agent runs a hook's command line (checked with the real CLIs: Claude Code 2.1.330
#: runs a shell-form command with /bin/sh -c and an exec-form one, ``command`` and ``args``,
#: with no shell at all; Codex and Gemini CLI run ``bash -c``; see
#: docs/coding-agents.md).
SHELLS: Final = {"claude-code": ("/bin/sh", "-c"), "codex": ("/bin/bash", "-c"),
                 "gemini": ("/bin/bash", "-c")}
#: Seconds between two runs (not timed), as between an agent's events.
PAUSE_S = 0.3


class _Run:
    """One hook as an agent runs it, JSON on stdin: a command line through the agent's shell
    (:data:`SHELLS`), or a program and its arguments (Claude Code's exec form, no shell)."""

    __slots__ = ("argv", "env", "stdin")

    def __init__(self, argv: list[str], stdin: bytes, env: dict[str, str]) -> None:
        self.argv = argv
        self.stdin = stdin
        self.env = env

    @classmethod
    def shell(cls, agent: str, command: str, stdin: bytes, env: dict[str, str]) -> _Run:
        return cls([*SHELLS[agent], command], stdin, env)

    def timed(self) -> tuple[float, float]:
        """(wall, CPU of the process tree) in ms."""
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        started = time.perf_counter()
        done = subprocess.run(self.argv, input=self.stdin,
                              env=self.env, capture_output=True, check=False)
        wall = (time.perf_counter() - started) * 1000
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        if done.returncode not in (0, 2) or b"hookgate:" in done.stderr:
            raise RuntimeError(f"{shlex.join(self.argv)[:80]!r} failed ({done.returncode}): "
                               f"{done.stderr[-500:]!r}")
        cpu = (after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime) * 1000
        return wall, cpu


class _Figures:
    __slots__ = ("cpu", "cpu_ratio", "ratio", "wall")

    def __init__(self, wall: float, cpu: float, ratio: float, cpu_ratio: float) -> None:
        self.wall = wall
        self.cpu = cpu
        self.ratio = ratio
        self.cpu_ratio = cpu_ratio


_TICK_MS: Final = 1000 / os.sysconf("SC_CLK_TCK")


def _warm_cpu_ms(pids: list[int]) -> float:
    """The CPU the warm process and its resident used so far, with every worker and hook
    they reaped (a worker's hooks included: it reaped them). Read from /proc: asking the warm
    process would take one of its waiting workers."""
    total = 0.0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except FileNotFoundError:
            continue  # a file's worker that ended: the warm process reaped it (counted there)
        total += sum(int(value) for value in fields[11:15]) * _TICK_MS
    return total


def _measure(runs: dict[str, _Run], rounds: int, warm_pids: list[int], base: str = "sh"
             ) -> dict[str, _Figures]:
    """Medians per command, each round every command once (in a rotating order). The CPU
    is the per-event process tree's (median) plus the mean of what the warm process used
    from just before the run to just before the next one (its worker, the worker's hook and
    the new spare that replaces the worker, which the pause leaves time for; /proc counts
    it in 10 ms ticks, so only the mean over the rounds means anything)."""
    times: dict[str, list[tuple[float, float]]] = {name: [] for name in runs}
    warm: dict[str, float] = dict.fromkeys(runs, 0.0)
    names = list(runs)
    for index in range(rounds):
        shift = index % len(names)
        for name in names[shift:] + names[:shift]:
            warm_before = _warm_cpu_ms(warm_pids)
            times[name].append(runs[name].timed())
            time.sleep(PAUSE_S)
            warm[name] += _warm_cpu_ms(warm_pids) - warm_before
    cpu = {name: statistics.median(t[1] for t in values) + warm[name] / rounds
           for name, values in times.items()}
    return {name: _Figures(
        statistics.median(t[0] for t in values), cpu[name],
        statistics.median(a[0] / b[0] for a, b in zip(values, times[base], strict=True)),
        cpu[name] / cpu[base])
        for name, values in times.items()}


def _first_event_ms(run: _Run, folder: Path, rounds: int) -> float:
    """Median wall time of an event that finds no warm process (each round stops it first,
    and waits until the one the event started listens)."""
    from tests.support.warm_bridge import warm_pids

    times = []
    for _ in range(rounds):
        _stop_warm(folder)
        times.append(run.timed()[0])
        deadline = time.monotonic() + 60
        while not (warm_pids(folder) and Path(shell_relay.endpoint_path(str(folder))).exists()
                   ) and time.monotonic() < deadline:
            time.sleep(0.02)
    return statistics.median(times)


def _warm_and_resident(folder: Path) -> list[int]:
    """The warm process's pid and its resident's (which answers the shell relay's events
    in place; it lives on, so the warm process never reaps its CPU)."""
    from tests.support.warm_bridge import ask

    (sock,) = folder.glob("*.sock")
    status = dict(line.split(": ", 1) for line in ask(sock, wire.STATUS).decode().splitlines()
                  if ": " in line)
    return [int(status["pid"])] + ([int(status["resident"])]
                                   if status.get("resident", "-") != "-" else [])


def _file_workers(folder: Path) -> list[int]:
    """The pids of the workers kept for a hooks file with ``callable`` hooks (their sockets'
    peers): they live on, so the warm process never reaps their CPU either."""
    import socket
    import struct

    pids = []
    for path in folder.glob("*.file-*"):
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
            probe.connect(str(path))
            credentials = probe.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED,
                                           struct.calcsize("3i"))
            pids.append(struct.unpack("3i", credentials)[0])
    return pids


def run(quick: bool = False) -> list[Row]:
    if not shell_relay.available():
        return [Row("agents", "the shell relay needs Linux and /bin/bash", 0, "-")]
    rounds = 15 if quick else 40
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    hookgate = str(Path(sys.executable).parent / "hookgate")
    compileall.compile_dir(str(Path(hookgate_package.__file__ or "").parent), quiet=1)
    warm_folder = Path(tempfile.mkdtemp(prefix="hgw-", dir="/tmp"))
    # a second warm process without a resident (a fork per event, as before it), to compare
    forked_folder = Path(tempfile.mkdtemp(prefix="hgw-", dir="/tmp"))
    env["HOOKGATE_CLAUDE_CODE_WARM_DIR"] = str(warm_folder)
    rows: list[Row] = []
    try:
        with tempfile.TemporaryDirectory() as tmp:
            env["XDG_CACHE_HOME"] = str(Path(tmp) / "cache")
            hooks = Path(tmp) / "hookgate.json"
            hooks.write_text(json.dumps(HOOKS))
            (Path(tmp) / "bench_agents_guard.py").write_text(GUARD_MODULE)
            callable_hooks = Path(tmp) / "hookgate-callable.json"
            callable_hooks.write_text(json.dumps(CALLABLE_HOOKS))
            _start_forked(hookgate, hooks, env, forked_folder)
            proc, port, key = _start(Path(tmp) / "data")
            try:
                url = f"http://127.0.0.1:{port}"
                httpx.post(url + "/api/v1/hooks", json=GATEWAY_HOOK,
                           headers={"Authorization": f"Bearer {key}"}).raise_for_status()
                for agent in INPUTS:
                    rows += _agent_rows(agent, hookgate, hooks, callable_hooks, url, key, env,
                                        rounds, warm_folder, forked_folder)
            finally:
                proc.terminate()
                proc.wait(30)
    finally:
        for folder in (warm_folder, forked_folder):
            _stop_warm(folder)
            shutil.rmtree(folder, ignore_errors=True)
    return rows


def _forked_env(env: dict[str, str], folder: Path) -> dict[str, str]:
    return {**env, "HOOKGATE_CLAUDE_CODE_WARM_DIR": str(folder),
            "HOOKGATE_CLAUDE_CODE_WARM_RESIDENT": "off"}


def _start_forked(hookgate: str, hooks: Path, env: dict[str, str], folder: Path) -> None:
    """The warm process without a resident, started by an event of the Python relay (which
    waits for it with ``require``); back once its shell endpoint is written."""
    subprocess.run([hookgate, "claude-code", "--config", str(hooks)],
                   input=json.dumps(EVENT).encode(), capture_output=True, check=True,
                   env={**_forked_env(env, folder), "HOOKGATE_CLAUDE_CODE_WARM": "require"})
    deadline = time.monotonic() + 60
    while not Path(shell_relay.endpoint_path(str(folder))).exists():
        if time.monotonic() > deadline:
            raise RuntimeError("the warm process without a resident did not start")
        time.sleep(0.05)


def _agent_rows(agent: str, hookgate: str, hooks: Path, callable_hooks: Path, url: str,
                key: str, env: dict[str, str], rounds: int, warm_folder: Path,
                forked_folder: Path) -> list[Row]:
    event = INPUTS[agent]
    stdin = json.dumps(event).encode()
    no_hook = json.dumps({**event, "hook_event_name": NO_HOOK_EVENTS[agent],
                          "tool_response": "ok"}).encode()
    folder = str(warm_folder)
    binary = compiled_relay.build()
    if binary is None:
        raise RuntimeError("the compiled relay cannot be built here (no C compiler?)")
    def relay(options: list[str], where: str = folder, program: str | None = binary
              ) -> list[str]:
        return shell_relay.relay_argv(hookgate, agent, options, 30, where, program)

    def installed(argv: list[str], data: bytes, run_env: dict[str, str]) -> _Run:
        """The compiled relay as install writes it for this agent: Claude Code's exec form
        (no shell), a command line for Codex and Gemini (bash -c)."""
        if agent == "claude-code":
            return _Run(argv, data, run_env)
        return _Run.shell(agent, shlex.join(argv), data, run_env)

    config = ["--config", str(hooks)]
    local = relay(config)
    if agent == "claude-code":
        gateway = gateway_hook(url, event="PreToolUse", transport="curl")["command"]
        gateway_name = "curl transport (install --gateway)"
    else:
        gateway = shlex.join(relay(["--gateway", url]))
        gateway_name = "shell relay --gateway (the warm process asks hookgate serve)"
    # measured: the shell relay's own path, or a failure (never the Python fallback)
    fast = {**env, "HOOKGATE_SHELL_RELAY": "require", "HOOKGATE_CLAUDE_CODE_WARM": "require"}
    runs = {
        "sh": _Run.shell(agent, CHECK, stdin, env),
        "local": installed(local, stdin, fast),
        "local-bash": _Run.shell(agent, shlex.join(relay(config, program=None)), stdin, fast),
        "forked": installed(relay(config, str(forked_folder)), stdin,
                            _forked_env(fast, forked_folder)),
        "no-hook": installed(local, no_hook, fast),
        "callable": installed(relay(["--config", str(callable_hooks)]), stdin, fast),
        "python-relay": _Run.shell(agent, f"{hookgate} {agent} --config {hooks}", stdin, fast),
        "gateway": _Run.shell(agent, gateway, stdin, {**fast, "HOOKGATE_API_KEY": key}),
    }
    if agent == "claude-code":  # what exec form saves: the same relay as a command line
        runs["shell-form"] = _Run.shell(agent, shlex.join(local), stdin, fast)
    # first: it leaves the warm process running, with its endpoint written
    first = _first_event_ms(installed(local, stdin, {**env, "HOOKGATE_CLAUDE_CODE_WARM": "on"}),
                            warm_folder, max(5, rounds // 5))
    pids = _warm_and_resident(warm_folder) + _warm_and_resident(forked_folder)
    _measure(runs, 2, pids)  # warm up: the definition cache, the OS's caches
    pids += _file_workers(warm_folder)  # kept for the callable hooks file: it lives on
    figures = _measure(runs, rounds, pids)
    shell = " ".join(SHELLS[agent])
    bare = f"bare sh hook script (same check, {shell})"
    sh_ms = figures["sh"].wall
    how = "exec form, no shell" if agent == "claude-code" else shell

    def row(name: str, text: str, goal: str | None = None) -> Row:
        found = figures[name]
        return Row(agent, f"{text}; wall {found.ratio:.2f}x sh per round; all its CPU "
                   f"{found.cpu:.1f} ms = {found.cpu_ratio:.2f}x sh's", found.wall, "ms", bare,
                   sh_ms, goal, None if goal is None else found.ratio <= 2.0)

    extra = ([row("shell-form", "the same relay as a shell-form command (/bin/sh -c), the "
                  "hook runs")] if "shell-form" in figures else [])
    return [
        row("local", f"local (installed compiled relay, {how}, warm process), the hook runs",
            "<= 2x a bare sh hook"),
        *extra,
        row("local-bash", "the same through relay.bash (install without a C compiler)"),
        row("no-hook", "local, an event the hooks file has no hook for",
            "<= 2x a bare sh hook"),
        row("callable", "local, a callable hook doing the same check (a Python function; "
            "its file's worker, no fork per event)", "<= 2x a bare sh hook"),
        row("forked", "the same, a fork per event (HOOKGATE_CLAUDE_CODE_WARM_RESIDENT=off), "
            "the hook runs"),
        row("python-relay", f"hookgate {agent} --config (the Python relay, warm process)"),
        row("gateway", gateway_name),
        Row(agent, "the first event with no warm process (Python relay, starts one)", first,
            "ms", bare, sh_ms),
        Row(agent, f"{bare}; CPU {figures['sh'].cpu:.1f} ms", sh_ms, "ms"),
    ]
