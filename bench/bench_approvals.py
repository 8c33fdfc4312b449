"""Approvals: what asking a person costs the machine (the person's own time aside).

* In process: ``fire`` where one callable hook answers ``ask`` and a callback approver
  approves at once, against the same hook answering ``allow`` (the chain, the request, the
  decision folded into the outcome).
* Through the store (SQLite, as the gateway does it): create the approval, a second task
  approves it, the waiting dispatch wakes up and rebuilds the outcome, against the bare store
  writes (insert + conditional update) the round trip is made of.
"""

from __future__ import annotations

import asyncio
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable
from typing import Any

from bench.harness import Row, per_call_us_async
from hookgate import Engine
from hookgate.approvals import ApprovalRequest, CallbackApprover, new_approval_id
from hookgate.outcome import Outcome
from hookgate.server.approvals import GatewayApprovals
from hookgate.store import Caller
from hookgate.store.approvals import ApprovalRow
from hookgate.store.sqlite import SqliteStore

PAYLOAD = {"tool_name": "exec", "tool_input": {"cmd": "ls"}}
TENANT = Caller.for_tenant("bench")


def _ask(event: Any) -> dict[str, str]:
    return {"decision": "ask", "reason": "bench"}


def _allow(event: Any) -> dict[str, str]:
    return {"decision": "allow"}


async def _median_us(op: Callable[[], Awaitable[object]], count: int, repeats: int = 5) -> float:
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(count):
            await op()
        samples.append((time.perf_counter() - start) / count * 1e6)
    return statistics.median(samples)


async def _store_rows(count: int) -> tuple[float, float]:
    with tempfile.TemporaryDirectory() as data:
        store = SqliteStore(data)
        await store.open()
        await store.migrate()
        approvals = GatewayApprovals(store)
        await approvals.start()
        try:

            async def round_trip() -> None:
                request = ApprovalRequest(
                    id=new_approval_id(), event="pre_tool_use", kind="ask", hook_id="h",
                    hook_name="bench", reason=None, tool_name="exec",
                    tool_input={"cmd": "ls"}, tenant_id="bench", timeout_s=60,
                    outcome=Outcome(),
                )

                async def person() -> None:
                    while True:  # the row is committed before the waiter registers
                        try:
                            await approvals.decide_by_person(
                                TENANT, request.id, approve=True, actor="bench",
                                comment=None,
                            )
                            return
                        except Exception:
                            await asyncio.sleep(0)

                deciding = asyncio.ensure_future(person())
                decision = await approvals.decide(request)
                await deciding
                assert decision.status == "approved"

            async def bare_writes() -> None:
                now = time.time()
                row = ApprovalRow(id=new_approval_id(), tenant_id="bench", event="pre_tool_use",
                                  created_at=now, expires_at=now + 60, tool_input="{}")
                await store.create_approval(row)
                await store.decide_approval(TENANT, row.id, status="approved",
                                            decided_by="bench", now=now)

            trip = await _median_us(round_trip, count)
            bare = await _median_us(bare_writes, count)
            return trip, bare
        finally:
            await approvals.close()
            await store.close()


def run(quick: bool = False) -> list[Row]:
    min_time = 0.05 if quick else 0.2
    asking = Engine(approver=CallbackApprover(lambda request: True))
    asking.hook("pre_tool_use", name="asker")(_ask)
    allowing = Engine()
    allowing.hook("pre_tool_use", name="allower")(_allow)
    ask_us = per_call_us_async(lambda: asking.fire("pre_tool_use", PAYLOAD), min_time=min_time)
    allow_us = per_call_us_async(
        lambda: allowing.fire("pre_tool_use", PAYLOAD), min_time=min_time
    )
    trip_us, bare_us = asyncio.run(_store_rows(20 if quick else 100))
    asking.close()
    allowing.close()
    return [
        Row("approvals", "await fire, hook asks, callback approver approves", ask_us, "µs",
            "the same hook answering allow", allow_us),
        Row("approvals", "approval round trip through SQLite (create, decide, wake)", trip_us,
            "µs", "the bare insert + conditional update", bare_us),
    ]


if __name__ == "__main__":
    for row in run(quick=True):
        print(row)
