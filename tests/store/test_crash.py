"""kill -9 a writer process and count the rows that survived against the mode's promise.

``sync``: every event whose answer was given (``wait_durable`` returned) has its row.
``async``: every row recorded more than one flush window (plus commit time) before the
kill has its row; only the last window may be lost.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import time
import uuid
from pathlib import Path

import pytest
from tests.store.conftest import PG_URL, drop_schema

from hookgate.store import Caller, ExecutionQuery
from hookgate.store.base import Store
from hookgate.store.postgres import PostgresStore
from hookgate.store.sqlite import SqliteStore

SCRIPT = Path(__file__).with_name("crash_writer.py")
FLUSH_WINDOW_S = 0.1
# Time for the commit of the last window and scheduling noise on a loaded machine (0.4 s
# was once too little for PostgreSQL with four agents sharing two cores).
COMMIT_SLACK_S = 1.0


async def _read_until_promised(stdout: asyncio.StreamReader) -> bytes:
    """Read the writer's log until the kill can prove something: many events recorded and
    answered, the first ones older than a flush window plus the commit slack."""
    seen = bytearray()
    recorded = answered = 0
    first_at: float | None = None
    while True:
        line = await asyncio.wait_for(stdout.readline(), timeout=30)
        assert line, "the writer exited before the kill"
        seen += line
        if line.startswith(b"R "):
            recorded += 1
            if first_at is None:
                first_at = float(line.split()[2])
        elif line.startswith(b"A "):
            answered += 1
        if (
            recorded > 200
            and answered > 20
            and first_at is not None
            and time.time() - first_at > 2 * (FLUSH_WINDOW_S + COMMIT_SLACK_S)
        ):
            return bytes(seen)


async def _surviving(store: Store) -> set[str]:
    ids: set[str] = set()
    cursor = None
    while True:
        page = await store.query_executions(
            Caller.master_scope(),
            ExecutionQuery(tenant_id="tenant-crash", limit=1000, cursor=cursor),
        )
        ids.update(row.event_id for row in page.items)
        if page.next_cursor is None:
            return ids
        cursor = page.next_cursor


@pytest.mark.parametrize("mode", ["sync", "async"])
async def test_kill_9_keeps_the_mode_promise(backend: str, mode: str, tmp_path: Path) -> None:
    schema = f"hgtest_{uuid.uuid4().hex[:12]}"
    target = str(tmp_path / "data") if backend == "sqlite" else PG_URL
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(Path.cwd()), *sys.path])}
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        str(SCRIPT),
        backend,
        target,
        schema,
        mode,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=env,
    )
    assert proc.stdout is not None
    try:
        ready = await asyncio.wait_for(proc.stdout.readline(), timeout=30)
        assert ready == b"READY\n", (ready, await proc.stderr.read())  # type: ignore[union-attr]
        seen = await _read_until_promised(proc.stdout)
        killed_at = time.time()
        proc.send_signal(signal.SIGKILL)
        rest = seen + await proc.stdout.read()
        await proc.wait()
        assert proc.returncode == -signal.SIGKILL

        recorded: dict[str, float] = {}
        answered: set[str] = set()
        for line in rest.decode(errors="replace").splitlines():
            parts = line.split()
            if len(parts) == 3 and parts[0] == "R":
                recorded[parts[1]] = float(parts[2])
            elif len(parts) == 2 and parts[0] == "A":
                answered.add(parts[1])

        store: Store = (
            SqliteStore(target) if backend == "sqlite" else PostgresStore(target, schema=schema)
        )
        await store.open()
        try:
            surviving = await _surviving(store)
        finally:
            await store.close()

        assert len(recorded) > 100, "the writer barely ran; the test proves nothing"
        assert surviving <= set(recorded)  # nothing invented
        if mode == "sync":
            assert answered, "no event was answered before the kill"
            lost = answered - surviving
            assert not lost, f"{len(lost)} answered events lost their audit row: {sorted(lost)[:5]}"
        else:
            cutoff = killed_at - FLUSH_WINDOW_S - COMMIT_SLACK_S
            promised = {event for event, at in recorded.items() if at < cutoff}
            assert promised, "nothing was recorded early enough to be promised"
            lost = promised - surviving
            assert not lost, f"{len(lost)} rows older than one flush window were lost"
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
        if backend == "postgres":
            await drop_schema(schema)
