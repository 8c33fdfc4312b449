"""``hookgate mcp-proxy``: one ``tools/call`` through the proxy vs straight to the upstream.

Both clients are real ``mcp.Client`` sessions over stdio in one event loop, taking turns call
by call (so machine noise hits them alike); the median per-call time is reported:

* direct: the client starts the upstream server itself and calls its ``add`` tool;
* proxied: the client starts ``hookgate mcp-proxy --config HOOKS -- <the same server>`` with
  one matching callable ``pre_tool_use`` hook (it reads the arguments and allows), and makes
  the same call (goal: at most 1.3x the direct call).

Afterwards the CPU time each process spends per call is read from ``/proc`` (Linux), for the
direct and the proxied path alike: on a shared machine the wall-clock ratio moves with the load
(every process wake-up waits for a core), the CPU each process spends moves much less, so the
CPU ratio of the two paths (all processes counted) is reported too.
"""

from __future__ import annotations

import asyncio
import os
import sys
import tempfile
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

from bench.harness import Row, interleaved_medians_us

REPO = Path(__file__).resolve().parent.parent
UPSTREAM = str(Path(__file__).parent / "scripts" / "mcp_upstream.py")
HOOKGATE = str(Path(sys.executable).parent / "hookgate")
HOOKS = """\
hooks:
  - name: check-add
    event: pre_tool_use
    handler_type: callable
    matcher: "^add$"
    config: {callable: "bench.mcp_hooks:check_add"}
"""


def _children(pid: int) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as stat:
                    fields = stat.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid:
                found.append(int(entry))
    return found


def _cpu_s(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def _cpu_per_call_us(
    paths: dict[str, tuple[Any, dict[str, int]]], calls: int, *, block: int = 50
) -> dict[str, float]:
    """CPU µs per call of each process, per path; the paths take turns in blocks of calls,
    so a change in the machine's load falls on both alike."""
    spent = {(path, name): 0.0 for path, (_, pids) in paths.items() for name in pids}
    done = 0
    while done < calls:
        for path, (client, pids) in paths.items():
            before = {name: _cpu_s(pid) for name, pid in pids.items()}
            for _ in range(block):
                await client.call_tool("add", {"a": 2, "b": 3})
            for name, pid in pids.items():
                spent[(path, name)] += _cpu_s(pid) - before[name]
        done += block
    return {f"{path}cpu {name}": value / done * 1e6 for (path, name), value in spent.items()}


async def _measure(samples: int) -> dict[str, float]:
    from mcp import Client, StdioServerParameters
    from mcp.client.stdio import stdio_client

    with tempfile.TemporaryDirectory() as folder:
        hooks = Path(folder) / "hooks.yaml"
        hooks.write_text(HOOKS)
        env = {"PYTHONPATH": str(REPO)}
        direct_params = StdioServerParameters(command=sys.executable, args=[UPSTREAM])
        proxied_params = StdioServerParameters(
            command=HOOKGATE,
            args=["mcp-proxy", "--config", str(hooks), "--", sys.executable, UPSTREAM],
            env=env,
            cwd=str(REPO),
        )
        with open(Path(folder) / "stderr.log", "w") as errlog:  # noqa: ASYNC230 - setup
            async with AsyncExitStack() as stack:
                direct = await stack.enter_async_context(
                    Client(stdio_client(direct_params, errlog=errlog))  # type: ignore[arg-type]
                )
                proxied = await stack.enter_async_context(
                    Client(stdio_client(proxied_params, errlog=errlog))  # type: ignore[arg-type]
                )
                for client in (direct, proxied):  # warm both paths (imports, caches)
                    for _ in range(20):
                        await client.call_tool("add", {"a": 2, "b": 3})
                times = await interleaved_medians_us(
                    {
                        "direct": lambda: direct.call_tool("add", {"a": 2, "b": 3}),
                        "proxied": lambda: proxied.call_tool("add", {"a": 2, "b": 3}),
                    },
                    samples=samples,
                )
                if sys.platform == "linux":  # /proc
                    me = os.getpid()
                    children = _children(me)
                    proxy = next(pid for pid in children if _children(pid))  # has a child
                    upstream = next(pid for pid in children if pid != proxy)
                    paths = {
                        "direct ": (direct, {"client": me, "upstream": upstream}),
                        "": (proxied, {"proxy": proxy, "upstream": _children(proxy)[0],
                                       "client": me}),
                    }
                    times.update(await _cpu_per_call_us(paths, samples))
                return times


def run(quick: bool) -> list[Row]:
    times = asyncio.run(_measure(100 if quick else 1000))
    direct, proxied = times["direct"], times["proxied"]
    return [
        Row("mcp", "tools/call straight to the upstream (stdio)", direct, "µs"),
        Row(
            "mcp",
            "tools/call through mcp-proxy, 1 matching callable hook",
            proxied,
            "µs",
            baseline="the same call straight to the upstream over stdio",
            baseline_value=direct,
            goal="<= 1.3x",
            passed=proxied <= 1.3 * direct,
        ),
        *(
            Row("mcp", f"  CPU per direct call: {name[11:]} process", value, "µs")
            for name, value in times.items()
            if name.startswith("direct cpu ")
        ),
        *(
            Row("mcp", f"  CPU per proxied call: {name[4:]} process", value, "µs")
            for name, value in times.items()
            if name.startswith("cpu ")
        ),
        *_cpu_total_rows(times),
    ]


def _cpu_total_rows(times: dict[str, float]) -> list[Row]:
    direct = sum(value for name, value in times.items() if name.startswith("direct cpu "))
    proxied = sum(value for name, value in times.items() if name.startswith("cpu "))
    if not direct or not proxied:
        return []
    return [Row("mcp", "  CPU per call, all processes: proxied vs direct", proxied, "µs",
                baseline="client and upstream processes of the direct call",
                baseline_value=direct)]
