"""``hookgate audit verify|head`` as a real subprocess against real stores: rows changed behind
hookgate's back (sqlite3 UPDATE, a PostgreSQL DELETE) are found and named; retention does not
break the chain; an exported head anchors it."""

from __future__ import annotations

import asyncio
import os
import sqlite3
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import asyncpg
import orjson
import pytest
from tests.cli.store_cli_support import store_location
from tests.store.test_audit_chain import record

from hookgate import Engine
from hookgate.settings import Settings
from hookgate.store import Caller, DispatchRow, open_store
from hookgate.store.audit_writer import AuditWriter
from hookgate.store.base import ExecutionQuery, ExecutionRow
from hookgate.store.location import SQLITE_FILE_NAME
from hookgate.store.retention import prune, prune_dispatches

DAY = 86_400.0
SRC = str(Path(__file__).resolve().parents[2] / "src")


def hookgate(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": SRC}
    env.pop("HOOKGATE_DATA_DIR", None)
    env.pop("HOOKGATE_DATABASE_URL", None)
    return subprocess.run(
        [sys.executable, "-m", "hookgate", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )


@pytest.fixture(params=["sqlite", "postgres"])
def store_args(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[list[str]]:
    yield from store_location(request.param, tmp_path)


def _options(store_args: list[str]) -> dict[str, str]:
    kind, where = store_args
    return {"data_dir": where} if kind == "--data-dir" else {"database_url": where}


def seed(store_args: list[str], rows: list[DispatchRow], *, prune_days: float = 0) -> None:
    async def main() -> None:
        store = await open_store(**_options(store_args))
        try:
            for start in range(0, len(rows), 7):  # several batches
                await store.write_dispatches(rows[start : start + 7])
            if prune_days:
                await prune_dispatches(store, prune_days)
        finally:
            await store.close()

    asyncio.run(main())


def test_an_intact_log_verifies_on_both_backends(store_args: list[str]) -> None:
    rows = [record("acme", time.time()) for _ in range(20)]
    rows += [record("other", time.time()) for _ in range(5)]
    seed(store_args, rows)
    done = hookgate("audit", "verify", *store_args)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "tenant acme: intact, 20 records" in done.stdout
    assert "tenant other: intact, 5 records" in done.stdout
    assert done.stdout.strip().splitlines()[-1].startswith("intact: 2 chain(s), 25 records")
    only = hookgate("audit", "verify", *store_args, "--tenant", "other", "--format", "json")
    assert only.returncode == 0, only.stderr
    report = orjson.loads(only.stdout)
    assert report["intact"] is True and [t["tenant_id"] for t in report["tenants"]] == ["other"]


def test_a_sqlite_row_updated_behind_hookgates_back_is_named(tmp_path: Path) -> None:
    store_args = ["--data-dir", str(tmp_path / "data")]
    (tmp_path / "data").mkdir()
    rows = [record("acme", time.time()) for _ in range(12)]
    seed(store_args, rows)
    assert hookgate("audit", "verify", *store_args).returncode == 0
    victim = rows[6].id
    with sqlite3.connect(tmp_path / "data" / SQLITE_FILE_NAME) as db:
        changed = db.execute(
            "UPDATE dispatch_records SET decision = 'block' WHERE id = ?", (victim,)
        ).rowcount
    assert changed == 1
    done = hookgate("audit", "verify", *store_args)
    assert done.returncode == 1, done.stdout
    assert f"tenant acme: BROKEN at place 7: altered: record {victim} (place 7)" in done.stdout
    assert done.stdout.strip().splitlines()[-1].startswith("BROKEN")


def test_a_sqlite_row_rehashed_by_hand_is_still_caught_at_the_next_link(tmp_path: Path) -> None:
    """Someone who alters a row and recomputes its hash breaks the next record's link."""
    store_args = ["--data-dir", str(tmp_path / "data")]
    (tmp_path / "data").mkdir()
    rows = [record("acme", time.time()) for _ in range(5)]
    seed(store_args, rows)
    with sqlite3.connect(tmp_path / "data" / SQLITE_FILE_NAME) as db:
        db.execute(
            "UPDATE dispatch_records SET record_hash = ? WHERE id = ?", ("f" * 64, rows[2].id)
        )
    done = hookgate("audit", "verify", *store_args)
    assert done.returncode == 1
    # Its own content no longer gives the (forged) hash: named first.
    assert f"BROKEN at place 3: altered: record {rows[2].id}" in done.stdout


def test_sqlite_rows_swapped_in_the_chain_are_reported_reordered(tmp_path: Path) -> None:
    store_args = ["--data-dir", str(tmp_path / "data")]
    (tmp_path / "data").mkdir()
    rows = [record("acme", time.time()) for _ in range(6)]
    seed(store_args, rows)
    with sqlite3.connect(tmp_path / "data" / SQLITE_FILE_NAME) as db:
        db.execute("UPDATE dispatch_records SET chain_seq = -chain_seq WHERE chain_seq IN (2, 4)")
        db.execute("UPDATE dispatch_records SET chain_seq = 4 WHERE chain_seq = -2")
        db.execute("UPDATE dispatch_records SET chain_seq = 2 WHERE chain_seq = -4")
    done = hookgate("audit", "verify", *store_args)
    assert done.returncode == 1
    assert f"BROKEN at place 2: reordered: record {rows[3].id} (place 2) does not follow" in (
        done.stdout
    )


def test_a_postgres_row_deleted_behind_hookgates_back_is_named(tmp_path: Path) -> None:
    locations = store_location("postgres", tmp_path)
    store_args = next(locations)
    try:
        rows = [record("acme", time.time()) for _ in range(15)]
        seed(store_args, rows)
        assert hookgate("audit", "verify", *store_args).returncode == 0

        async def delete(where: str, *args: object) -> None:
            conn = await asyncpg.connect(store_args[1])
            try:
                assert await conn.execute(f"DELETE FROM dispatch_records WHERE {where}", *args)
            finally:
                await conn.close()

        asyncio.run(delete("id = $1", rows[9].id))
        done = hookgate("audit", "verify", *store_args)
        assert done.returncode == 1, done.stdout
        assert (
            f"BROKEN at place 11: removed: place 10 is missing before record {rows[10].id}"
            in done.stdout
        )
        # The last record removed too: the head still says 15.
        asyncio.run(delete("chain_seq >= 10"))
        done = hookgate("audit", "verify", *store_args)
        assert done.returncode == 1
        assert "removed: place 10–15 is missing at the end" in done.stdout
    finally:
        locations.close()


def test_retention_then_verify_passes(store_args: list[str]) -> None:
    now = time.time()
    rows = [record("acme", now - 40 * DAY) for _ in range(10)]
    rows += [record("acme", now) for _ in range(5)]
    seed(store_args, rows, prune_days=30)
    done = hookgate("audit", "verify", *store_args)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "tenant acme: intact, 5 records (places 11–15)" in done.stdout


def test_an_exported_head_anchors_the_chain(tmp_path: Path) -> None:
    """Rewriting the whole chain from some place on (every hash recomputed) passes the plain
    verify, but not one anchored to a head exported before."""
    store_args = ["--data-dir", str(tmp_path / "data")]
    (tmp_path / "data").mkdir()
    rows = [record("acme", time.time()) for _ in range(4)]
    seed(store_args, rows)
    exported = hookgate("audit", "head", *store_args)
    assert exported.returncode == 0, exported.stderr
    anchor = tmp_path / "head.json"
    anchor.write_text(exported.stdout)
    assert orjson.loads(exported.stdout)["heads"][0]["seq"] == 4
    assert hookgate("audit", "verify", *store_args, "--anchor", str(anchor)).returncode == 0
    # The operator rewrites record 2 and relinks everything after it, head included.
    from hookgate.store.chain import chain_content, record_hash

    db = sqlite3.connect(tmp_path / "data" / SQLITE_FILE_NAME)
    db.row_factory = sqlite3.Row
    with db:
        db.execute("UPDATE dispatch_records SET decision = 'block' WHERE chain_seq = 2")
        from hookgate.store.chain import CHAIN_COLUMNS

        previous = db.execute("SELECT record_hash FROM dispatch_records WHERE chain_seq = 1")
        prev = previous.fetchone()[0]
        for place in (2, 3, 4):
            row = db.execute(
                f"SELECT hook_rows, {CHAIN_COLUMNS} FROM dispatch_records WHERE chain_seq = ?",
                (place,),
            ).fetchone()
            new = record_hash(prev, place, chain_content(list(row)[1:], row[0]))
            db.execute(
                "UPDATE dispatch_records SET prev_hash = ?, record_hash = ? WHERE chain_seq = ?",
                (prev, new, place),
            )
            prev = new
        db.execute("UPDATE audit_chain_heads SET hash = ?", (prev,))
    db.close()
    assert hookgate("audit", "verify", *store_args).returncode == 0  # what the chain alone shows
    done = hookgate("audit", "verify", *store_args, "--anchor", str(anchor))
    assert done.returncode == 1
    assert "anchor: tenant acme: place 4 no longer holds the anchored hash" in done.stdout


# -- hook rows ---------------------------------------------------------------------------


def hook_row(tenant: str, dispatch_id: str, name: str, created_at: float) -> ExecutionRow:
    event_id = str(uuid.uuid4())
    return ExecutionRow(
        id=str(uuid.uuid4()),
        hook_id=None,
        hook_version=1,
        hook_name=name,
        handler_type="callable",
        event="pre_tool_use",
        event_id=event_id,
        decision="block" if name == "second" else "allow",
        duration_ms=0.5,
        tenant_id=tenant,
        agent_id=None,
        session_id="s1",
        input_hash="ab" * 32,
        dedup_key=f"{name}:{event_id}",
        error=None,
        error_detail=b"\x01sealed",
        metadata={"n": 1, "why": "x"},
        created_at=created_at,
        tool_name="exec",
        reason="no" if name == "second" else None,
        hook_ref=f"hook-{name}",
        dispatch_id=dispatch_id,
    )


def seed_with_hooks(store_args: list[str], count: int) -> list[tuple[str, list[str]]]:
    """Dispatches through a real engine and audit writer, each running two hooks: the
    dispatch ids with their hook rows' ids, in write order."""

    async def main() -> list[tuple[str, list[str]]]:
        store = await open_store(**_options(store_args))
        try:
            async with AuditWriter(store, mode="sync") as writer:
                engine = Engine(audit=writer, settings=Settings())

                @engine.hook("pre_tool_use", matcher="^exec$", name="first")
                def first(event: Any) -> None:
                    return None

                @engine.hook("pre_tool_use", matcher="^exec$", name="second")
                def second(event: Any) -> dict[str, str]:
                    return {"decision": "block", "reason": "not today"}

                for n in range(count):
                    await engine.fire(
                        "pre_tool_use", tool_name="exec", tool_input={"n": n}, tenant_id="acme"
                    )
                await writer.flush()
            page = await store.query_executions(Caller.system(), ExecutionQuery(limit=1000))
        finally:
            await store.close()
        owners: dict[str, list[str]] = {}
        for row in sorted(page.items, key=lambda r: r.seq or 0):
            owners.setdefault(str(row.dispatch_id), []).append(row.id)
        return list(owners.items())

    return asyncio.run(main())


def test_hook_rows_of_an_intact_log_verify_on_both_backends(store_args: list[str]) -> None:
    dispatched = seed_with_hooks(store_args, 6)
    assert len(dispatched) == 6 and all(len(rows) == 2 for _, rows in dispatched)
    done = hookgate("audit", "verify", *store_args, "--format", "json")
    assert done.returncode == 0, done.stdout + done.stderr
    (chain,) = orjson.loads(done.stdout)["tenants"]
    assert (chain["records"], chain["hook_rows"]) == (6, 12)


def test_a_sqlite_hook_row_altered_behind_hookgates_back_is_named(tmp_path: Path) -> None:
    store_args = ["--data-dir", str(tmp_path / "data")]
    (tmp_path / "data").mkdir()
    dispatched = seed_with_hooks(store_args, 5)
    dispatch_id, (first, second) = dispatched[2]
    with sqlite3.connect(tmp_path / "data" / SQLITE_FILE_NAME) as db:
        # The block that happened becomes an allow, its reason gone.
        assert db.execute(
            "UPDATE hook_executions SET decision = 'allow', reason = NULL WHERE id = ?", (second,)
        ).rowcount == 1
    done = hookgate("audit", "verify", *store_args)
    assert done.returncode == 1, done.stdout
    assert (
        f"BROKEN at place 3: altered: hook row {second} of record {dispatch_id} (place 3): "
        "its content no longer gives its digest" in done.stdout
    )


def test_sqlite_columns_rewritten_as_text_are_named_not_a_crash(tmp_path: Path) -> None:
    """SQLite keeps any type in any column: text where a record's sealed detail or a hook
    row's error detail (bytes) belongs is an altered record or hook row, not a crash of the
    verifier (the hash covers bytes; text never hashes)."""
    store_args = ["--data-dir", str(tmp_path / "data")]
    (tmp_path / "data").mkdir()
    dispatched = seed_with_hooks(store_args, 5)
    dispatch_id, (first, _) = dispatched[1]
    db_path = tmp_path / "data" / SQLITE_FILE_NAME
    with sqlite3.connect(db_path) as db:
        text = db.execute("UPDATE hook_executions SET error_detail = 'x' WHERE id = ?", (first,))
        assert text.rowcount == 1
    done = hookgate("audit", "verify", *store_args)
    assert done.returncode == 1, done.stdout + done.stderr
    assert (
        f"BROKEN at place 2: altered: hook row {first} of record {dispatch_id} (place 2)"
        in done.stdout
    )
    victim = dispatched[3][0]
    with sqlite3.connect(db_path) as db:
        db.execute("UPDATE hook_executions SET error_detail = NULL")
        text = db.execute("UPDATE dispatch_records SET detail = 'sealed' WHERE id = ?", (victim,))
        assert text.rowcount == 1
    done = hookgate("audit", "verify", *store_args)
    assert done.returncode == 1, done.stdout + done.stderr
    assert f"BROKEN at place 4: altered: record {victim} (place 4)" in done.stdout


def test_a_postgres_hook_row_deleted_behind_hookgates_back_is_named(tmp_path: Path) -> None:
    locations = store_location("postgres", tmp_path)
    store_args = next(locations)
    try:
        dispatched = seed_with_hooks(store_args, 5)
        assert hookgate("audit", "verify", *store_args).returncode == 0
        dispatch_id, (first, _) = dispatched[3]

        async def delete() -> None:
            conn = await asyncpg.connect(store_args[1])
            try:
                await conn.execute("DELETE FROM hook_executions WHERE id = $1", first)
            finally:
                await conn.close()

        asyncio.run(delete())
        done = hookgate("audit", "verify", *store_args)
        assert done.returncode == 1, done.stdout
        assert (
            f"BROKEN at place 4: removed: hook row {first} of record {dispatch_id} (place 4) "
            "is missing" in done.stdout
        )
    finally:
        locations.close()


def test_sqlite_hook_rows_reordered_or_moved_are_named(tmp_path: Path) -> None:
    store_args = ["--data-dir", str(tmp_path / "data")]
    (tmp_path / "data").mkdir()
    dispatched = seed_with_hooks(store_args, 4)
    path = tmp_path / "data" / SQLITE_FILE_NAME
    dispatch_id, (first, second) = dispatched[1]
    with sqlite3.connect(path) as db:  # the second hook's row now comes first
        seqs = dict(db.execute(
            "SELECT id, seq FROM hook_executions WHERE id IN (?, ?)", (first, second)
        ).fetchall())
        db.execute("UPDATE hook_executions SET seq = -1 WHERE id = ?", (first,))
        db.execute("UPDATE hook_executions SET seq = ? WHERE id = ?", (seqs[first], second))
        db.execute("UPDATE hook_executions SET seq = ? WHERE id = ?", (seqs[second], first))
    done = hookgate("audit", "verify", *store_args)
    assert done.returncode == 1, done.stdout
    assert (
        f"BROKEN at place 2: reordered: the hook rows of record {dispatch_id} (place 2) are "
        "not in the order they were written" in done.stdout
    )
    with sqlite3.connect(path) as db:  # put back
        db.execute("UPDATE hook_executions SET seq = -1 WHERE id = ?", (first,))
        db.execute("UPDATE hook_executions SET seq = ? WHERE id = ?", (seqs[second], second))
        db.execute("UPDATE hook_executions SET seq = ? WHERE id = ?", (seqs[first], first))
    assert hookgate("audit", "verify", *store_args).returncode == 0
    other, _ = dispatched[3]
    with sqlite3.connect(path) as db:  # then move a row to another record
        db.execute("UPDATE hook_executions SET dispatch_id = ? WHERE id = ?", (other, second))
    done = hookgate("audit", "verify", *store_args)
    assert done.returncode == 1, done.stdout
    assert f"removed: hook row {second} of record {dispatch_id} (place 2) is missing" in (
        done.stdout
    )


def test_retention_takes_hook_rows_with_their_records(store_args: list[str]) -> None:
    """Records go by whole prefixes and their hook rows with them; a kept record's hook rows
    stay even when older than the window (they are in its hash)."""
    now = time.time()
    rows = [record("acme", now - 40 * DAY) for _ in range(4)]
    rows += [record("acme", now) for _ in range(3)]
    # The first kept record's hook row was written before the cutoff.
    hooks = [hook_row("acme", row.id, "first", row.created_at) for row in rows]
    hooks[4] = hook_row("acme", rows[4].id, "first", now - 31 * DAY)

    async def main() -> tuple[int, list[str]]:
        store = await open_store(**_options(store_args))
        try:
            await store.write_executions(hooks)
            await store.write_dispatches(rows)
            pruned = await prune(store, 30)
            await prune_dispatches(store, 30)
            page = await store.query_executions(Caller.system(), ExecutionQuery(limit=100))
        finally:
            await store.close()
        return pruned, sorted(str(row.dispatch_id) for row in page.items)

    pruned, left = asyncio.run(main())
    assert pruned == 0  # by age alone, every one is still in a kept record's hash
    assert left == sorted(row.id for row in rows[4:])
    done = hookgate("audit", "verify", *store_args, "--format", "json")
    assert done.returncode == 0, done.stdout + done.stderr
    (chain,) = orjson.loads(done.stdout)["tenants"]
    assert (chain["records"], chain["hook_rows"]) == (3, 3)


def test_records_from_before_schema_17_keep_their_hash_and_cannot_be_passed_off_as_such(
    tmp_path: Path,
) -> None:
    """Records chained under schemas 11 to 16 (hook_rows NULL, the first hash form) verify
    beside newer ones; a newer record whose hook_rows is set NULL (to pass it off as older
    and drop its hook rows from the check) is caught."""
    from hookgate.store.chain import CHAIN_COLUMNS, GENESIS, legacy_record_hash

    store_args = ["--data-dir", str(tmp_path / "data")]
    (tmp_path / "data").mkdir()
    rows = [record("acme", time.time()) for _ in range(3)]
    seed(store_args, rows)
    path = tmp_path / "data" / SQLITE_FILE_NAME
    with sqlite3.connect(path) as db:  # as schema 11 wrote them
        prev = GENESIS
        for place in (1, 2, 3):
            values = db.execute(
                f"SELECT {CHAIN_COLUMNS} FROM dispatch_records WHERE chain_seq = ?", (place,)
            ).fetchone()
            new = legacy_record_hash(prev, place, values)
            db.execute(
                "UPDATE dispatch_records SET hook_rows = NULL, prev_hash = ?, record_hash = ? "
                "WHERE chain_seq = ?",
                (prev, new, place),
            )
            prev = new
        db.execute("UPDATE audit_chain_heads SET hash = ?", (prev,))
    later = [record("acme", time.time()) for _ in range(2)]
    seed(store_args, later)
    done = hookgate("audit", "verify", *store_args)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "tenant acme: intact, 5 records (places 1–5)" in done.stdout
    with sqlite3.connect(path) as db:
        db.execute("UPDATE dispatch_records SET hook_rows = NULL WHERE id = ?", (later[0].id,))
    done = hookgate("audit", "verify", *store_args)
    assert done.returncode == 1
    assert f"BROKEN at place 4: altered: record {later[0].id} (place 4)" in done.stdout


def test_hook_rows_written_after_their_record_are_counted_not_checked(tmp_path: Path) -> None:
    """An edited input's rerun answered after its dispatch was (the agent waited again) writes
    hook rows under a record already chained: outside its hash, counted apart, no break."""
    store_args = ["--data-dir", str(tmp_path / "data")]
    (tmp_path / "data").mkdir()
    dispatched = seed_with_hooks(store_args, 3)
    dispatch_id, _ = dispatched[1]

    async def rerun() -> None:
        store = await open_store(**_options(store_args))
        try:
            await store.write_executions([hook_row("acme", dispatch_id, "second", time.time())])
        finally:
            await store.close()

    asyncio.run(rerun())
    done = hookgate("audit", "verify", *store_args)
    assert done.returncode == 0, done.stdout + done.stderr
    assert (
        "tenant acme: intact, 3 records (places 1–3), 6 hook rows, 1 hook rows written after "
        "their record (unchecked)" in done.stdout
    )


def test_a_sqlite_head_row_deleted_behind_hookgates_back_is_named(tmp_path: Path) -> None:
    store_args = ["--data-dir", str(tmp_path / "data")]
    (tmp_path / "data").mkdir()
    seed(store_args, [record("acme", time.time()) for _ in range(4)])
    with sqlite3.connect(tmp_path / "data" / SQLITE_FILE_NAME) as db:
        assert db.execute("DELETE FROM audit_chain_heads").rowcount == 1
    done = hookgate("audit", "verify", *store_args)
    assert done.returncode == 1, done.stdout
    assert "tenant acme: BROKEN at place 1: removed: the tenant has chained records" in (
        done.stdout
    )
