"""A writer process for the crash test: fires events into an AuditWriter until killed.

Usage: python crash_writer.py BACKEND TARGET SCHEMA MODE

Prints ``R <event_id> <epoch>`` when a row is recorded and ``A <event_id>`` once
``wait_durable`` returned (the moment the engine would answer the agent). Output is written
unbuffered so that every line printed before the kill reaches the parent.
"""

from __future__ import annotations

import asyncio
import os
import sys
import time

from hookgate.audit import ExecutionRecord
from hookgate.store.audit_writer import AuditWriter
from hookgate.store.base import Store
from hookgate.store.postgres import PostgresStore
from hookgate.store.sqlite import SqliteStore


def say(line: str) -> None:
    os.write(1, (line + "\n").encode())


async def main() -> None:
    backend, target, schema, mode = sys.argv[1:5]
    store: Store = (
        SqliteStore(target) if backend == "sqlite" else PostgresStore(target, schema=schema)
    )
    await store.open()
    await store.migrate()
    writer = AuditWriter(store, mode=mode, flush_interval_s=0.1)  # type: ignore[arg-type]
    await writer.start()
    say("READY")

    async def agent(lane: int) -> None:
        n = 0
        while True:
            n += 1
            event_id = f"{lane}-{n}"
            writer.record(
                [
                    ExecutionRecord(
                        hook_id="crash-hook",
                        hook_version=1,
                        hook_name="crash",
                        handler_type="callable",
                        event="pre_tool_use",
                        event_id=event_id,
                        decision="allow",
                        duration_ms=0.1,
                        tenant_id="tenant-crash",
                    )
                ]
            )
            say(f"R {event_id} {time.time():.6f}")
            await writer.wait_durable()
            say(f"A {event_id}")
            await asyncio.sleep(0.002)

    await asyncio.gather(*(agent(lane) for lane in range(20)))


asyncio.run(main())
