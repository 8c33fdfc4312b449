"""The audit writer: execution records into the store in batches, off the hot path.

:meth:`AuditWriter.record` only appends to an in-memory queue (safe from any thread). One
writer task drains the queue into :meth:`Store.write_executions`, one transaction per batch
(group commit: rows of many concurrent events share one commit).

Modes
    ``async`` (default): ``wait_durable`` returns at once; the queue is flushed at least every
    ``flush_interval_s`` (100 ms), whenever ``max_batch`` rows are waiting, and on
    :meth:`close`. A ``kill -9`` loses at most the rows of the last flush window.
    ``sync``: ``wait_durable`` returns only once every row recorded before it is committed;
    rows arriving while a commit is in flight share the next one. A ``kill -9`` loses nothing
    that was answered. If the store stays unavailable for ``sync_timeout_s``,
    ``wait_durable`` raises :class:`AuditUnavailable` (the engine then fails the event
    instead of answering without its audit row); the rows stay queued and are retried.

Overflow
    The queue is bounded by ``max_queue`` rows but never drops a row. When it is over the
    bound, :meth:`record` still accepts (counting the rows in ``stats.overflowed`` and logging
    ``security.hook.audit_backpressure`` once per episode), and ``wait_durable`` waits, in
    either mode, until the writer has committed everything recorded so far: the agent slows
    down to the store's pace instead of losing its audit trail.

Failed writes are logged (``security.hook.audit_write_failed``), counted and retried with
backoff; the dedup key makes a retried batch harmless. Before storage ``error`` and every
text in ``metadata`` (a command's stderr, a webhook's body…) are redacted, then cut to 256
characters; the full error, and the full metadata when anything in it was hidden, are
sealed with AES-256-GCM into ``error_detail`` (bound to the execution id), readable with
:func:`open_error_detail` (admins only, through the gateway).

Dispatch records (:class:`~hookgate.audit.DispatchRecord`, one per dispatch) share the
queue, the batches and the modes; each batch's records go to ``write_dispatches`` after its
execution rows. Their reason is redacted and cut like a hook's; the full reason and the event
payload are sealed into ``detail`` (bound to the dispatch id), and only with a key: without
one the payload is not kept at all.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Final, Literal

import orjson

from hookgate.audit import (
    DispatchRecord,
    ExecutionRecord,
    canonical_json,
    redact,
    scrub_metadata,
    truncate,
)
from hookgate.definition import GLOBAL_TENANT
from hookgate.log import log_event
from hookgate.reply_recording import answers_json
from hookgate.secrets.keyring import Keyring
from hookgate.store.base import DispatchRow, ExecutionRow, Store, StoreError

__all__ = [
    "AuditMode",
    "AuditStats",
    "AuditUnavailable",
    "AuditWriter",
    "open_dispatch_detail",
    "open_error_detail",
]

_Record = ExecutionRecord | DispatchRecord
_Row = ExecutionRow | DispatchRow

AuditMode = Literal["async", "sync"]
_BACKOFF_START_S: Final = 0.05
_BACKOFF_MAX_S: Final = 2.0


class AuditUnavailable(StoreError):
    """``sync`` mode could not commit an execution row in time; the event must not pass."""


@dataclass(slots=True)
class AuditStats:
    recorded: int = 0
    committed: int = 0
    #: Rows the store already had (a retried write): committed, not inserted twice.
    duplicates: int = 0
    batches: int = 0
    failures: int = 0
    #: Rows recorded while the queue was over ``max_queue`` (accepted, with backpressure).
    overflowed: int = 0
    largest_batch: int = 0

    @property
    def queued(self) -> int:
        return self.recorded - self.committed

    def to_dict(self) -> dict[str, int]:
        return {**asdict(self), "queued": self.queued}


def _aad(execution_id: str) -> bytes:
    return f"hook_executions:{execution_id}:error_detail".encode()


def open_error_detail(keyring: Keyring, row: ExecutionRow) -> str | None:
    """The full, unredacted error of a stored row (for master-scope diagnostics only)."""
    if row.error_detail is None:
        return None
    return keyring.open(row.error_detail, _aad(row.id)).decode()


def _dispatch_aad(dispatch_id: str) -> bytes:
    return f"dispatch_records:{dispatch_id}:detail".encode()


def open_dispatch_detail(keyring: Keyring, row: DispatchRow) -> dict[str, object] | None:
    """A dispatch record's sealed ``{"reason", "payload", "blocking", "answers"}`` (admins
    only; replay reads it; see :mod:`hookgate.reply_recording`)."""
    if row.detail is None:
        return None
    detail: dict[str, object] = orjson.loads(keyring.open(row.detail, _dispatch_aad(row.id)))
    return detail


def _clean(text: str | None) -> str | None:
    # PostgreSQL text cannot hold NUL; a handler's stderr can.
    if text is None or "\x00" not in text:
        return text
    return text.replace("\x00", "\\0")


class AuditWriter:
    """:class:`hookgate.audit.AuditSink` backed by a :class:`~hookgate.store.base.Store`."""

    def __init__(
        self,
        store: Store,
        *,
        keyring: Keyring | None = None,
        mode: AuditMode = "async",
        flush_interval_s: float = 0.1,
        max_batch: int = 5000,
        max_queue: int = 100_000,
        sync_timeout_s: float = 10.0,
    ) -> None:
        if mode not in ("async", "sync"):
            raise ValueError(f"audit mode must be 'async' or 'sync', got {mode!r}")
        self.store = store
        self.keyring = keyring
        self.mode: AuditMode = mode
        self.flush_interval_s = flush_interval_s
        self.max_batch = max_batch
        self.max_queue = max_queue
        self.sync_timeout_s = sync_timeout_s
        self.stats = AuditStats()
        self._lock = threading.Lock()
        self._pending: list[_Record] = []
        self._waiters: list[tuple[int, asyncio.Future[None]]] = []
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread_id: int | None = None
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._closing = False
        self._over_bound = False

    # -- lifecycle --------------------------------------------------------------------------

    async def start(self) -> None:
        """Start the writer task on the running loop."""
        if self._task is not None:
            return
        self._loop = asyncio.get_running_loop()
        self._thread_id = threading.get_ident()
        self._wake = asyncio.Event()
        self._closing = False
        self._task = self._loop.create_task(self._run(), name="hookgate-audit-writer")
        if self._pending:
            self._wake.set()

    async def close(self, timeout_s: float | None = None) -> None:
        """Commit every queued row, then stop (a graceful shutdown loses nothing).

        With ``timeout_s``, give up after that long if the store stays unavailable and raise
        :class:`AuditUnavailable` naming how many rows were left uncommitted."""
        if self._task is None:
            if self._pending:
                raise StoreError("audit writer closed with rows queued but was never started")
            return
        self._closing = True
        self._wake.set()
        task = self._task
        try:
            async with asyncio.timeout(timeout_s):
                await asyncio.shield(task)
        except TimeoutError:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
            self._task = None
            raise AuditUnavailable(
                f"audit writer stopped with {self.stats.queued} rows not committed "
                f"after {timeout_s:g} s ({self.stats.failures} failed writes)"
            ) from None
        self._task = None

    async def __aenter__(self) -> AuditWriter:
        await self.start()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    # -- the sink ---------------------------------------------------------------------------

    def record_dispatch(self, record: DispatchRecord) -> None:
        """Queue a dispatch record, like :meth:`record`."""
        self.record((record,))

    def record(self, records: Sequence[_Record]) -> None:
        """Queue records; never blocks and never drops (see the module notes on overflow)."""
        if not records:
            return
        with self._lock:
            self._pending.extend(records)
            self.stats.recorded += len(records)
            queued = self.stats.recorded - self.stats.committed
            over = queued > self.max_queue
            if over:
                self.stats.overflowed += len(records)
            entering = over and not self._over_bound
            self._over_bound = over
            urgent = self.mode == "sync" or over or len(self._pending) >= self.max_batch
        if entering:
            log_event(
                "security.hook.audit_backpressure",
                queued=queued,
                max_queue=self.max_queue,
                overflowed_total=self.stats.overflowed,
            )
        if urgent:
            self._signal()

    async def wait_durable(self) -> None:
        """``sync`` mode (or a full queue): return once everything recorded so far is
        committed. ``async`` mode: return at once."""
        if self.mode == "async" and not self._over_bound:
            return
        with self._lock:
            ticket = self.stats.recorded
            if self.stats.committed >= ticket:
                return
            if self._task is None:
                raise StoreError("the audit writer is not running: call await writer.start()")
            loop = asyncio.get_running_loop()
            future: asyncio.Future[None] = loop.create_future()
            self._waiters.append((ticket, future))
        self._signal()
        # A bare timer on the future, not asyncio.timeout(): in sync mode every event waits
        # here, and the context manager's task-cancelling machinery costs several times more.
        expiry = loop.call_later(self.sync_timeout_s, _expire, future)
        try:
            await future
        except _Expired:
            raise AuditUnavailable(
                f"audit rows not committed within {self.sync_timeout_s:g} s "
                f"({self.stats.queued} queued, {self.stats.failures} failed writes); "
                "they stay queued and are retried"
            ) from None
        finally:
            expiry.cancel()

    async def flush(self) -> None:
        """Wait until everything recorded so far is committed (any mode)."""
        with self._lock:
            ticket = self.stats.recorded
            if self.stats.committed >= ticket:
                return
            future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            self._waiters.append((ticket, future))
        self._signal()
        await future

    # -- the writer task --------------------------------------------------------------------

    def _signal(self) -> None:
        loop = self._loop
        if loop is None or self._wake.is_set():
            return
        if threading.get_ident() == self._thread_id:
            self._wake.set()
        else:
            with contextlib.suppress(RuntimeError):  # the loop is closed: nothing to wake
                loop.call_soon_threadsafe(self._wake.set)

    def _take(self, offset: int) -> list[_Record]:
        with self._lock:
            return self._pending[offset : offset + self.max_batch]

    def _write(self, rows: list[_Row]) -> asyncio.Task[int]:
        return asyncio.get_running_loop().create_task(self._store_rows(rows))

    async def _store_rows(self, rows: list[_Row]) -> int:
        executions = [row for row in rows if type(row) is ExecutionRow]
        if len(executions) == len(rows):
            return await self.store.write_executions(executions)
        dispatches = [row for row in rows if type(row) is DispatchRow]
        inserted = await self.store.write_executions(executions) if executions else 0
        return inserted + await self.store.write_dispatches(dispatches)

    async def _run(self) -> None:
        backoff = _BACKOFF_START_S
        # The batch being written, its rows, and the write; while it is in flight the next
        # batch is converted, so conversion and the database overlap.
        inflight: tuple[list[_Record], list[_Row], asyncio.Task[int]] | None
        inflight = None
        while True:
            if inflight is None:
                if not self._pending and not self._closing:
                    if self.mode == "sync":
                        await self._wake.wait()
                    else:
                        with contextlib.suppress(TimeoutError):
                            async with asyncio.timeout(self.flush_interval_s):
                                await self._wake.wait()
                # Clear before taking the batch: a record() after this point sets it again.
                self._wake.clear()
                batch = self._take(0)
                if not batch:
                    if self._closing:
                        return
                    continue
                rows = [self._row(r) for r in batch]
                inflight = (batch, rows, self._write(rows))
            batch, rows, task = inflight
            await asyncio.sleep(0)  # let the write reach its thread or socket
            self._wake.clear()
            following = self._take(len(batch))
            prepared = [self._row(r) for r in following]
            try:
                inserted = await task
            except Exception as exc:
                self.stats.failures += 1
                log_event(
                    "security.hook.audit_write_failed",
                    error=f"{type(exc).__name__}: {exc}",
                    rows=len(batch),
                    queued=self.stats.queued,
                    retry_in_s=backoff,
                )
                await asyncio.sleep(backoff)
                backoff = min(backoff * 2, _BACKOFF_MAX_S)
                inflight = (batch, rows, self._write(rows))
                continue
            backoff = _BACKOFF_START_S
            self._committed(batch, inserted)
            inflight = (following, prepared, self._write(prepared)) if following else None

    def _committed(self, batch: list[_Record], inserted: int) -> None:
        with self._lock:
            del self._pending[: len(batch)]
            self.stats.committed += len(batch)
            self.stats.duplicates += len(batch) - inserted
            self.stats.batches += 1
            self.stats.largest_batch = max(self.stats.largest_batch, len(batch))
            committed = self.stats.committed
            if self._over_bound and committed >= self.stats.recorded - self.max_queue:
                self._over_bound = False
            ready = [f for ticket, f in self._waiters if ticket <= committed]
            self._waiters = [(t, f) for t, f in self._waiters if t > committed]
        for future in ready:
            _resolve(future)

    def _row(self, record: _Record) -> _Row:
        if type(record) is DispatchRecord:
            return self._dispatch_row(record)
        assert type(record) is ExecutionRecord
        # On the hot path of every execution: one NUL test over the free-text fields, and
        # positional construction.
        error = record.error
        hook_name: str | None = record.hook_name
        event_id: str | None = record.event_id
        tenant_id, agent_id, session_id = record.tenant_id, record.agent_id, record.session_id
        tool_name = record.tool_name
        if "\x00" in f"{error}{hook_name}{event_id}{tenant_id}{agent_id}{session_id}{tool_name}":
            error, hook_name, event_id = _clean(error), _clean(hook_name), _clean(event_id)
            tool_name = _clean(tool_name)
            tenant_id, agent_id, session_id = (
                _clean(tenant_id),
                _clean(agent_id),
                _clean(session_id),
            )
        detail: bytes | None = None
        short: str | None = None
        metadata = record.metadata
        full = error
        if metadata:
            metadata, hidden = scrub_metadata(metadata)
            if hidden:
                dump = f"metadata: {canonical_json(record.metadata)}"
                full = f"{error}\n\n{dump}" if error else dump
        if error:
            short = truncate(redact(error))
        reason = record.reason
        if reason:
            if "\x00" in reason:
                reason = _clean(reason) or ""
            shown = truncate(redact(reason))
            if shown != reason:  # the full reason is kept only sealed, like a long error
                full = f"{full}\n\nreason: {reason}" if full else f"reason: {reason}"
            reason = shown
        if full and self.keyring is not None:
            detail = self.keyring.seal(full.encode(), _aad(record.id))
        return ExecutionRow(
            record.id,
            record.hook_id,
            record.hook_version,
            hook_name or "",
            record.handler_type,
            record.event,
            event_id or "",
            record.decision,
            record.duration_ms,
            tenant_id or GLOBAL_TENANT,
            agent_id,
            session_id,
            record.input_hash,
            f"{record.hook_id}:{event_id}",
            short,
            detail,
            metadata,
            record.created_at,
            tool_name,
            record.input_summary,
            reason or None,
            dispatch_id=record.dispatch_id,
        )

    def _dispatch_row(self, record: DispatchRecord) -> DispatchRow:
        reason = _clean(record.reason)
        shown = truncate(redact(reason)) if reason else None
        size: int | None = None
        sealed: bytes | None = None
        payload = None
        if record.payload is not None:
            try:
                payload = orjson.dumps(
                    record.payload, default=str, option=orjson.OPT_NON_STR_KEYS
                )
            except TypeError:  # nested past orjson's bound: size unknown, nothing kept
                payload = None
            size = len(payload) if payload is not None else None
        if self.keyring is not None and (payload is not None or shown != reason):
            detail = b'{"reason":' + orjson.dumps(reason) + b',"payload":'
            detail += payload if payload is not None else b"null"
            if payload is not None:  # what replay needs beside the input
                detail += b',"blocking":' + orjson.dumps(record.blocking)
                if record.answers:
                    answers = answers_json(record.answers)
                    detail += b',"answers":' + orjson.dumps(
                        answers, default=str, option=orjson.OPT_NON_STR_KEYS
                    )
            sealed = self.keyring.seal(detail + b"}", _dispatch_aad(record.id))
        approval = record.approval_view()
        summary = record.input_summary()
        return DispatchRow(
            id=record.id,
            tenant_id=_clean(record.tenant_id) or GLOBAL_TENANT,
            event=record.event,
            event_id=_clean(record.event_id) or "",
            decision=record.decision,
            duration_ms=record.duration_ms,
            created_at=record.created_at,
            tool_name=_clean(record.tool_name),
            agent_id=_clean(record.agent_id),
            session_id=_clean(record.session_id),
            reason=shown,
            hooks=[_clean_entry(execution.hook_entry()) for execution in record.executions],
            approval_id=str(approval["id"]) if approval and approval.get("id") else None,
            approval=approval,
            refused=truncate(redact(_clean(record.refused) or "")) or None,
            input_size=size,
            input_hash=record.input_hash() if payload is not None else "",
            input_summary=_clean(summary),
            trace_id=_clean(record.trace_id),
            detail=sealed,
        )


def _clean_entry(entry: dict[str, object]) -> dict[str, object]:
    return {k: _clean(v) if isinstance(v, str) else v for k, v in entry.items()}


class _Expired(Exception):
    """A ``sync`` waiter's time ran out (turned into :class:`AuditUnavailable`)."""


def _expire(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_exception(_Expired())


def _resolve(future: asyncio.Future[None]) -> None:
    loop = future.get_loop()

    def settle() -> None:
        if not future.done():
            future.set_result(None)

    try:
        running = asyncio.get_running_loop()
    except RuntimeError:
        running = None
    if running is loop:
        settle()
    else:
        with contextlib.suppress(RuntimeError):  # that loop is gone: nobody is waiting
            loop.call_soon_threadsafe(settle)
