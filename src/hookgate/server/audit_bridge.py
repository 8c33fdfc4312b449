"""A batching audit sink that writes execution records into the store.

Interim: the persistence work (issue #5) owns the real audit writer (sync mode, bounded
queue, encrypted ``error_detail``); :func:`hookgate.server.gateway.open_audit` prefers it
when it exists. This one batches records off the hot path and commits them at least every
``flush_interval_s``; ``aclose()`` commits everything accepted.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Sequence
from typing import Final

from hookgate.audit import ExecutionRecord, redact, truncate
from hookgate.definition import GLOBAL_TENANT
from hookgate.log import log_event
from hookgate.store import ExecutionRow, Store

__all__ = ["StoreAudit", "row_from_record"]

FLUSH_INTERVAL_S: Final = 0.05
BATCH_ROWS: Final = 2000


def row_from_record(record: ExecutionRecord) -> ExecutionRow:
    return ExecutionRow(
        id=record.id,
        hook_id=record.hook_id,
        hook_version=record.hook_version,
        hook_name=record.hook_name,
        handler_type=record.handler_type,
        event=record.event,
        event_id=record.event_id,
        decision=record.decision,
        duration_ms=record.duration_ms,
        tenant_id=record.tenant_id or GLOBAL_TENANT,
        agent_id=record.agent_id,
        session_id=record.session_id,
        input_hash=record.input_hash,
        dedup_key=record.dedup_key,
        error=truncate(redact(record.error)) if record.error else None,
        error_detail=None,
        metadata=record.metadata,
        created_at=record.created_at,
    )


class StoreAudit:
    def __init__(self, store: Store, *, sync: bool = False) -> None:
        self._store = store
        self._sync = sync
        self._pending: list[ExecutionRecord] = []
        self._oldest: float | None = None
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._committed = asyncio.Event()
        self._written = 0
        self._failed = 0
        self._closed = False

    def record(self, records: Sequence[ExecutionRecord]) -> None:
        if not self._pending:
            self._oldest = time.monotonic()
        self._pending.extend(records)
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._run(), name="hookgate-audit")
        if self._sync or len(self._pending) >= BATCH_ROWS:
            self._wake.set()

    async def wait_durable(self) -> None:
        if not self._sync:
            return
        while self._pending or self._flushing:
            self._committed.clear()
            await self._committed.wait()

    _flushing = False

    async def _run(self) -> None:
        while True:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(FLUSH_INTERVAL_S):
                    await self._wake.wait()
            self._wake.clear()
            await self._flush()
            if self._closed and not self._pending:
                return

    async def _flush(self) -> None:
        if not self._pending:
            return
        batch, self._pending = self._pending, []
        self._oldest = None
        self._flushing = True
        try:
            await self._store.write_executions([row_from_record(r) for r in batch])
            self._written += len(batch)
        except Exception as exc:
            self._failed += len(batch)
            log_event("security.hook.audit_write_failed", rows=len(batch), error=str(exc))
        finally:
            self._flushing = False
            self._committed.set()

    def stats(self) -> dict[str, float]:
        lag = 0.0 if self._oldest is None else time.monotonic() - self._oldest
        return {
            "pending": float(len(self._pending)),
            "lag_seconds": lag,
            "written": float(self._written),
            "dropped": float(self._failed),
        }

    async def aclose(self) -> None:
        self._closed = True
        self._wake.set()
        if self._task is not None:
            await self._task
        await self._flush()
