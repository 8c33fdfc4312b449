"""Gateway: ``hooks.dispatch`` over the WebSocket API, 1 and 20 concurrent clients, and over
REST by one client that keeps its connection (as httpx, requests and browsers do).

A real ``hookgate serve`` (SQLite store, audit log on, async mode) with one fast matching
``callable`` hook. Each client sends one dispatch at a time and waits for its answer.
Reports throughput and p50/p99 round-trip latency, and checks that every execution row was
written (counted in the store after a graceful shutdown).
Goal: at least 5,000 dispatches/s with 20 clients, p99 under 10 ms.
"""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
import orjson
from websockets.asyncio.client import connect

from bench.harness import Row, percentiles
from hookgate.store import Caller, DispatchQuery, ExecutionQuery, open_store

REPO = Path(__file__).resolve().parent.parent
HOOK = {
    "event": "pre_tool_use",
    "handler_type": "callable",
    "scope": "tenant",
    "name": "bench allow",
    "matcher": "^exec$",
    "config": {"callable": "bench.gateway_hooks:allow"},
}


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _start(data_dir: Path) -> tuple[subprocess.Popen[str], int, str]:
    port = _free_port()
    env = dict(os.environ, PYTHONPATH=str(REPO))
    proc = subprocess.Popen(
        [str(Path(sys.executable).parent / "hookgate"), "serve", "--port", str(port),
         "--data-dir", str(data_dir), "--allow-callable", "bench.gateway_hooks"],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, cwd=REPO, env=env,
    )
    assert proc.stdout is not None
    key = ""
    for line in proc.stdout:
        if line.startswith("  hg-"):
            key = line.strip()
        if "listening on" in line:
            break
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=1).status_code == 200:
                return proc, port, key
        except httpx.HTTPError:
            time.sleep(0.05)
    proc.kill()
    raise RuntimeError("hookgate serve did not start")


async def _client(url: str, key: str, count: int, latencies: list[float]) -> None:
    headers = {"Authorization": f"Bearer {key}"}
    async with connect(url, additional_headers=headers, compression=None) as ws:
        for n in range(count):
            frame = orjson.dumps({
                "type": "req", "id": str(n), "method": "hooks.dispatch",
                "params": {"event": "pre_tool_use",
                           "input": {"tool_name": "exec", "tool_input": {"cmd": "ls"},
                                     "session_id": "bench"}},
            })
            started = time.perf_counter()
            await ws.send(frame)
            answer = orjson.loads(await ws.recv())
            latencies.append((time.perf_counter() - started) * 1000)
            if not answer.get("ok") or answer["payload"]["decision"] != "allow":
                raise RuntimeError(f"unexpected answer: {answer}")


def _rest_latencies(port: int, key: str, count: int) -> list[float]:
    """Milliseconds per ``POST /api/v1/dispatch`` on one kept-alive connection."""
    body = {"event": "pre_tool_use", "input": {"tool_name": "exec", "tool_input": {"cmd": "ls"},
                                               "session_id": "bench"}}
    latencies: list[float] = []
    with httpx.Client(base_url=f"http://127.0.0.1:{port}",
                      headers={"Authorization": f"Bearer {key}"}) as client:
        for n in range(count + 20):
            started = time.perf_counter()
            answer = client.post("/api/v1/dispatch", json=body)
            if n >= 20:  # the first ones warm up
                latencies.append((time.perf_counter() - started) * 1000)
            if answer.status_code != 200 or answer.json()["decision"] != "allow":
                raise RuntimeError(f"unexpected answer: {answer.status_code} {answer.text}")
    return latencies


async def _run_clients(
    url: str, key: str, clients: int, per_client: int
) -> tuple[float, list[float]]:
    await asyncio.gather(*(_client(url, key, 20, []) for _ in range(clients)))  # warm-up
    latencies: list[float] = []
    started = time.perf_counter()
    await asyncio.gather(*(_client(url, key, per_client, latencies) for _ in range(clients)))
    elapsed = time.perf_counter() - started
    return clients * per_client / elapsed, latencies


async def _count_rows(data_dir: Path) -> tuple[int, int]:
    """The bench session's execution rows and dispatch records."""
    store = await open_store(data_dir=data_dir)
    try:
        master = Caller.master_scope()
        rows, cursor = 0, None
        while True:
            page = await store.query_executions(
                master, ExecutionQuery(session_id="bench", limit=500, cursor=cursor)
            )
            rows, cursor = rows + len(page.items), page.next_cursor
            if not cursor:
                break
        records = 0
        while True:
            found = await store.query_dispatches(
                master, DispatchQuery(session_id="bench", limit=500, cursor=cursor)
            )
            records, cursor = records + len(found.items), found.next_cursor
            if not cursor:
                return rows, records
    finally:
        await store.close()


def run(quick: bool) -> list[Row]:
    rows: list[Row] = []
    with tempfile.TemporaryDirectory() as tmp:
        data_dir = Path(tmp) / "data"
        proc, port, key = _start(data_dir)
        sent = 0
        try:
            headers = {"Authorization": f"Bearer {key}"}
            created = httpx.post(f"http://127.0.0.1:{port}/api/v1/hooks", json=HOOK,
                                 headers=headers)
            created.raise_for_status()
            url = f"ws://127.0.0.1:{port}/ws"
            for clients, per_client in ((1, 500 if quick else 3000), (20, 100 if quick else 1000)):
                rate, latencies = asyncio.run(_run_clients(url, key, clients, per_client))
                sent += clients * (per_client + 20)
                p50, p99 = percentiles(latencies, 50, 99)
                label = f"{clients} client{'s' if clients > 1 else ''}"
                goal = clients == 20
                rows.append(Row("gateway", f"dispatch over WS, {label}: throughput", rate,
                                "req/s", goal=">= 5000/s" if goal else None,
                                passed=rate >= 5000 if goal else None))
                rows.append(Row("gateway", f"dispatch over WS, {label}: p50", p50, "ms"))
                rows.append(Row("gateway", f"dispatch over WS, {label}: p99", p99, "ms",
                                goal="< 10 ms" if goal else None,
                                passed=p99 < 10 if goal else None))
            count = 200 if quick else 1000
            p50, p99 = percentiles(_rest_latencies(port, key, count), 50, 99)
            sent += count + 20
            rows.append(Row("gateway", "dispatch over REST, 1 kept-alive client: p50", p50, "ms",
                            goal="< 5 ms", passed=p50 < 5))
            rows.append(Row("gateway", "dispatch over REST, 1 kept-alive client: p99", p99, "ms"))
        finally:
            proc.send_signal(signal.SIGTERM)
            proc.wait(timeout=60)
        written, records = asyncio.run(_count_rows(data_dir))
        rows.append(Row("gateway", f"execution rows written / dispatches ({sent})", written,
                        "rows", goal=f"= {sent}", passed=written == sent))
        rows.append(Row("gateway", f"dispatch records written / dispatches ({sent})", records,
                        "rows", goal=f"= {sent}", passed=records == sent))
    return rows
