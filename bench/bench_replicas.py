"""Replicas: 1 and 3 ``hookgate serve`` processes on one PostgreSQL database.

``hooks.dispatch`` over the WebSocket API with 20 concurrent clients spread over the replicas
(the same client count for 1 and 3 replicas), one fast matching ``callable`` hook, audit on;
then, with 3 replicas, how long a hook change made on one replica and a key revoked on one
take to be served by the two others (the median of 5, each measured from the answer to the
change until a kept-alive client of the other replica sees it, so one request is included).
Uses the multi-replica harness of the tests (``tests/support/replicas.py``).
Goals: a hook change and a revocation reach every replica within 100 ms.
"""

from __future__ import annotations

import asyncio
import statistics
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

import httpx

from bench.bench_gateway import HOOK, _client
from bench.harness import Row, percentiles

ARGS = ("--allow-callable", "bench.gateway_hooks")
CLIENTS = 20
EXEC = {"event": "pre_tool_use", "input": {"tool_name": "exec", "tool_input": {"cmd": "ls"}}}


async def _spread(urls: list[str], key: str, per_client: int) -> tuple[float, list[float]]:
    """CLIENTS clients, client i on replica i mod len(urls)."""
    targets = [urls[i % len(urls)] for i in range(CLIENTS)]
    await asyncio.gather(*(_client(url, key, 20, []) for url in targets))  # warm-up
    latencies: list[float] = []
    started = time.perf_counter()
    await asyncio.gather(*(_client(url, key, per_client, latencies) for url in targets))
    return CLIENTS * per_client / (time.perf_counter() - started), latencies


def _delay(
    urls: list[str], change: Callable[[], None], seen: Callable[[httpx.Client], bool]
) -> float:
    """Seconds from ``change()`` until ``seen`` holds on every replica in ``urls`` (the
    slowest of them), each watched by a thread with a connection opened before."""
    began: list[float] = []
    delays: list[float] = []
    ready = threading.Barrier(len(urls) + 1)

    def watch(url: str) -> None:
        with httpx.Client(base_url=url, timeout=10) as client:
            client.get("/healthz")
            ready.wait()
            while time.monotonic() - began[0] < 10:
                if seen(client):
                    delays.append(time.monotonic() - began[0])
                    return

    threads = [threading.Thread(target=watch, args=(url,), daemon=True) for url in urls]
    for thread in threads:
        thread.start()
    change()
    began.append(time.monotonic())
    ready.wait()
    for thread in threads:
        thread.join(15)
    if len(delays) != len(urls):
        raise RuntimeError("a change was not seen by every replica within 10 s")
    return max(delays)


def _propagation(urls: list[str], key: str, rounds: int) -> tuple[float, float]:
    """Median delays (s) of a hook change and of a revocation, made on the first replica."""
    first, others = urls[0], urls[1:]
    auth = {"Authorization": f"Bearer {key}"}
    created = httpx.post(f"{first}/api/v1/hooks", headers=auth, timeout=30, json={
        **HOOK, "name": "bench gate", "scope": "global", "matcher": "^never$",
        "config": {"callable": "bench.gateway_hooks:block"},
    })
    created.raise_for_status()
    hook = f"{first}/api/v1/hooks/{created.json()['hookId']}"
    hook_delays, revoke_delays = [], []
    for round_ in range(rounds):
        blocked = round_ % 2 == 0  # alternate: the matcher starts blocking, then stops

        def patch(matcher: str = "^exec$" if blocked else "^never$") -> None:
            answer = httpx.patch(hook, headers=auth, json={"matcher": matcher}, timeout=30)
            answer.raise_for_status()

        def decided(client: httpx.Client, want: str = "block" if blocked else "allow") -> bool:
            answer = client.post("/api/v1/dispatch", json=EXEC, headers=auth)
            return bool(answer.json()["decision"] == want)

        hook_delays.append(_delay(others, patch, decided))

        made = httpx.post(f"{first}/api/v1/keys", headers=auth, timeout=30,
                          json={"role": "viewer", "name": f"bench {round_}"})
        made.raise_for_status()
        secret, key_id = made.json()["secret"], made.json()["key"]["id"]
        for url in urls:  # cached everywhere before it is revoked
            httpx.get(f"{url}/api/v1/info", headers={"Authorization": f"Bearer {secret}"})

        def revoke(key_id: str = key_id) -> None:
            httpx.post(f"{first}/api/v1/keys/{key_id}/revoke", headers=auth,
                       timeout=30).raise_for_status()

        def refused(client: httpx.Client, secret: str = secret) -> bool:
            answer = client.get("/api/v1/info", headers={"Authorization": f"Bearer {secret}"})
            return answer.status_code == 401

        revoke_delays.append(_delay(others, revoke, refused))
    return statistics.median(hook_delays), statistics.median(revoke_delays)


def run(quick: bool) -> list[Row]:
    from tests.support.replicas import ReplicaSet, fresh_database

    rows: list[Row] = []
    per_client = 50 if quick else 300
    with tempfile.TemporaryDirectory() as tmp:
        for count in (1, 3):
            with fresh_database("hg_bench") as url, ReplicaSet(
                Path(tmp) / str(count), url, count=count, args=ARGS
            ) as replicas:
                replicas.start_all()
                key = replicas.master_key
                urls = [replica.url for replica in replicas]
                httpx.post(f"{urls[0]}/api/v1/hooks", json=HOOK,
                           headers={"Authorization": f"Bearer {key}"},
                           timeout=30).raise_for_status()
                ws = [replica.ws_url for replica in replicas]
                rate, latencies = asyncio.run(_spread(ws, key, per_client))
                p99 = percentiles(latencies, 99)[0]
                label = f"{count} replica{'s' if count > 1 else ''}, {CLIENTS} clients"
                rows.append(Row("replicas", f"dispatch over WS, {label}: throughput", rate,
                                "req/s"))
                rows.append(Row("replicas", f"dispatch over WS, {label}: p99", p99, "ms"))
                if count == 3:
                    hook_s, revoke_s = _propagation(urls, key, 3 if quick else 5)
                    for what, seconds in (("hook change", hook_s), ("key revocation", revoke_s)):
                        rows.append(Row("replicas", f"{what} seen by 2 other replicas (median)",
                                        seconds * 1000, "ms", goal="<= 100 ms",
                                        passed=seconds <= 0.1))
    return rows
