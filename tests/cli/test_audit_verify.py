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
from collections.abc import Iterator
from pathlib import Path

import asyncpg
import orjson
import pytest
from tests.cli.store_cli_support import store_location
from tests.store.test_audit_chain import record

from hookgate.store import DispatchRow, open_store
from hookgate.store.location import SQLITE_FILE_NAME
from hookgate.store.retention import prune_dispatches

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
    from hookgate.store.chain import content_digest, link_hash

    db = sqlite3.connect(tmp_path / "data" / SQLITE_FILE_NAME)
    db.row_factory = sqlite3.Row
    with db:
        db.execute("UPDATE dispatch_records SET decision = 'block' WHERE chain_seq = 2")
        from hookgate.store.chain import CHAIN_COLUMNS

        previous = db.execute("SELECT record_hash FROM dispatch_records WHERE chain_seq = 1")
        prev = previous.fetchone()[0]
        for place in (2, 3, 4):
            row = db.execute(
                f"SELECT {CHAIN_COLUMNS} FROM dispatch_records WHERE chain_seq = ?", (place,)
            ).fetchone()
            new = link_hash(prev, place, content_digest(list(row)))
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
