"""The audit writer: batching, modes, shutdown, overflow, failures, redaction, encryption."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Sequence

import pytest
from tests.store.helpers import record
from tests.support.waiting import wait_until_async

from hookgate.audit import ERROR_MAX_CHARS
from hookgate.secrets.keyring import Keyring, SecretError, generate_key_text
from hookgate.store import Caller, ExecutionQuery, StoreError
from hookgate.store.audit_writer import AuditUnavailable, AuditWriter, open_error_detail
from hookgate.store.base import ExecutionRow, Store

MASTER = Caller.master_scope()


async def _all_rows(store: Store) -> list[ExecutionRow]:
    rows: list[ExecutionRow] = []
    cursor = None
    while True:
        page = await store.query_executions(MASTER, ExecutionQuery(limit=1000, cursor=cursor))
        rows.extend(page.items)
        if page.next_cursor is None:
            return rows
        cursor = page.next_cursor


async def test_async_mode_returns_at_once_and_flushes_within_the_window(store: Store) -> None:
    # With an hour-long window nothing commits during the test: wait_durable returning
    # with the rows uncommitted shows it did not wait for them.
    patient = AuditWriter(store, mode="async", flush_interval_s=3600)
    await patient.start()
    try:
        patient.record([record(n) for n in range(3)])
        await patient.wait_durable()
        assert patient.stats.committed == 0
    finally:
        await patient.close()
    assert patient.stats.committed == 3  # close commits what was queued
    writer = AuditWriter(store, mode="async", flush_interval_s=0.05)
    await writer.start()
    try:
        writer.record([record(n) for n in range(3, 6)])
        await writer.wait_durable()
        # Nothing else wakes the writer: only its flush window can commit these rows.
        await wait_until_async(lambda: writer.stats.committed >= 3)
        assert writer.stats.committed == 3
        assert len(await _all_rows(store)) == 6
    finally:
        await writer.close()


async def test_sync_mode_commits_before_answering(store: Store) -> None:
    writer = AuditWriter(store, mode="sync")
    async with writer:

        async def one_event(n: int) -> int:
            writer.record([record(n), record(n, hook_id="hook-y")])
            await writer.wait_durable()
            rows = await store.query_executions(MASTER, ExecutionQuery(limit=1000))
            return sum(1 for r in rows.items if r.event_id == f"ev-{n}")

        counts = await asyncio.gather(*(one_event(n) for n in range(50)))
    assert counts == [2] * 50
    # concurrent events shared commits (group commit)
    assert writer.stats.batches < 100
    assert writer.stats.committed == 100


async def test_graceful_close_loses_nothing(store: Store) -> None:
    writer = AuditWriter(store, mode="async", flush_interval_s=10, max_batch=300)
    await writer.start()
    for n in range(2000):
        writer.record([record(n)])
    await writer.close()
    assert writer.stats.committed == 2000
    assert len(await _all_rows(store)) == 2000
    assert writer.stats.largest_batch <= 300


async def test_records_before_start_are_kept(store: Store) -> None:
    writer = AuditWriter(store, mode="sync")
    writer.record([record(1)])
    await writer.start()
    await writer.wait_durable()
    await writer.close()
    assert [r.event_id for r in await _all_rows(store)] == ["ev-1"]


async def test_record_and_wait_from_another_thread_and_loop(store: Store) -> None:
    writer = AuditWriter(store, mode="sync")
    await writer.start()
    failure: list[BaseException] = []

    def agent_thread() -> None:
        async def run() -> None:
            for n in range(20):
                writer.record([record(n)])
                await writer.wait_durable()

        try:
            asyncio.run(run())
        except BaseException as exc:
            failure.append(exc)

    thread = threading.Thread(target=agent_thread)
    thread.start()
    await asyncio.to_thread(thread.join)
    await writer.close()
    assert not failure
    assert len(await _all_rows(store)) == 20


async def test_duplicate_records_count_as_committed_not_inserted(store: Store) -> None:
    async with AuditWriter(store, mode="sync") as writer:
        writer.record([record(1), record(2)])
        await writer.wait_durable()
        writer.record([record(1)])  # the engine retried an event
        await writer.wait_durable()
    assert writer.stats.duplicates == 1
    assert len(await _all_rows(store)) == 2


async def test_error_is_redacted_truncated_and_sealed(store: Store) -> None:
    keyring = Keyring.from_text(generate_key_text())
    secret = "Authorization: Bearer abc.def-ghi token=hunter2 mail ops@example.com "
    long_error = secret + "é" * 400 + "🙂" * 10
    async with AuditWriter(store, mode="sync", keyring=keyring) as writer:
        writer.record([record(1, error=long_error), record(2, error="short"), record(3)])
        await writer.wait_durable()
    by_event = {r.event_id: r for r in await _all_rows(store)}
    stored = by_event["ev-1"]
    assert stored.error is not None
    assert len(stored.error) == ERROR_MAX_CHARS
    for leaked in ("abc.def-ghi", "hunter2", "ops@example.com"):
        assert leaked not in stored.error
    assert "[REDACTED]" in stored.error
    assert stored.error.endswith("…")
    # the full error is only in error_detail, encrypted and bound to this row
    assert stored.error_detail is not None and b"hunter2" not in stored.error_detail
    assert open_error_detail(keyring, stored) == long_error
    moved = ExecutionRow(**{**_fields(stored), "id": by_event["ev-2"].id})
    with pytest.raises(SecretError):
        open_error_detail(keyring, moved)
    with pytest.raises(SecretError):
        open_error_detail(Keyring.from_text(generate_key_text("k2")), stored)
    assert (by_event["ev-2"].error, open_error_detail(keyring, by_event["ev-2"])) == (
        "short",
        "short",
    )
    assert by_event["ev-3"].error is None and by_event["ev-3"].error_detail is None
    assert by_event["ev-1"].to_dict()["has_error_detail"] is True
    assert "error_detail" not in by_event["ev-1"].to_dict()


def _fields(row: ExecutionRow) -> dict[str, object]:
    return {name: getattr(row, name) for name in ExecutionRow.__slots__}  # type: ignore[attr-defined]


async def test_metadata_and_odd_text_are_stored(store: Store) -> None:
    metadata = {
        "matcher_matched": True,
        "cel_eval_result": False,
        "stdout_len": 12,
        "http_status": 200,
        "prompt_model": "m",
        "prompt_tokens": 42,
        "trace_id": "0af7651916cd43dd8448eb211c80319c",
        "odd": {1, 2},  # not JSON: stored as text rather than refusing the row
        "nul": "a\x00b",
    }
    async with AuditWriter(store, mode="sync") as writer:
        writer.record([record(1, metadata=metadata, error="bad\x00byte", session_id="s\x00")])
        await writer.wait_durable()
    (stored,) = await _all_rows(store)
    assert stored.metadata["prompt_tokens"] == 42 and stored.metadata["http_status"] == 200
    assert stored.metadata["odd"] == "{1, 2}"
    assert "\x00" not in stored.metadata["nul"] and stored.error == "bad\\0byte"


class FlakyStore:
    """A real store that refuses the first ``failures`` batch writes (a database outage)."""

    def __init__(self, store: Store, failures: int) -> None:
        self.store = store
        self.failures = failures
        self.calls = 0

    async def write_executions(self, rows: Sequence[ExecutionRow]) -> int:
        self.calls += 1
        if self.calls <= self.failures:
            raise ConnectionError("database went away")
        return await self.store.write_executions(rows)


async def test_failed_writes_are_retried_and_logged(
    store: Store, caplog: pytest.LogCaptureFixture
) -> None:
    flaky = FlakyStore(store, failures=3)
    writer = AuditWriter(flaky, mode="sync")  # type: ignore[arg-type]
    async with writer:
        writer.record([record(n) for n in range(5)])
        await writer.wait_durable()
    assert writer.stats.failures == 3
    assert len(await _all_rows(store)) == 5
    assert "security.hook.audit_write_failed" in caplog.text


async def test_sync_mode_raises_when_the_store_stays_down(store: Store) -> None:
    flaky = FlakyStore(store, failures=10**9)
    writer = AuditWriter(flaky, mode="sync", sync_timeout_s=0.2)  # type: ignore[arg-type]
    await writer.start()
    writer.record([record(1)])
    with pytest.raises(AuditUnavailable, match="not committed within"):
        await writer.wait_durable()
    with pytest.raises(AuditUnavailable, match="1 rows not committed"):
        await writer.close(timeout_s=0.2)


async def test_overflow_is_counted_and_applies_backpressure(
    store: Store, caplog: pytest.LogCaptureFixture
) -> None:
    writer = AuditWriter(store, mode="async", flush_interval_s=5, max_queue=100, max_batch=50)
    await writer.start()
    writer.record([record(n) for n in range(80)])
    await writer.wait_durable()  # under the bound: async returns at once
    writer.record([record(n) for n in range(80, 150)])
    assert writer.stats.overflowed == 70
    assert "security.hook.audit_backpressure" in caplog.text
    await writer.wait_durable()  # over the bound: waits for the writer, even in async mode
    assert writer.stats.committed == 150
    await writer.close()
    assert len(await _all_rows(store)) == 150  # nothing dropped


async def test_wait_durable_without_start_is_a_clear_error(store: Store) -> None:
    writer = AuditWriter(store, mode="sync")
    writer.record([record(1)])
    with pytest.raises(StoreError, match="not running"):
        await writer.wait_durable()


def test_unknown_mode_is_refused(tmp_path: object) -> None:
    with pytest.raises(ValueError, match="'async' or 'sync'"):
        AuditWriter(None, mode="eventually")  # type: ignore[arg-type]
