"""``hookgate db``: upgrade, status, prune, on both backends and from the environment."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner
from tests.cli.store_cli_support import store_location
from tests.store.helpers import row

from hookgate.cli import main
from hookgate.store import Caller, ExecutionQuery, open_store
from hookgate.store.migrations import load_migrations

ENV_CLEAN = {"HOOKGATE_DATA_DIR": None, "HOOKGATE_DATABASE_URL": None}


@pytest.fixture(params=["sqlite", "postgres"])
def store_args(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[list[str]]:
    yield from store_location(request.param, tmp_path)


def run(*args: str, env: dict[str, str | None] | None = None) -> tuple[int, str]:
    result = CliRunner().invoke(main, list(args), env={**ENV_CLEAN, **(env or {})})
    return result.exit_code, result.output


def test_upgrade_from_empty_then_current(store_args: list[str]) -> None:
    backend = "sqlite" if store_args[0] == "--data-dir" else "postgres"
    latest = load_migrations(backend)[-1].version
    assert latest >= 2  # 0002 added created_by/updated_by
    code, out = run("db", "upgrade", *store_args)
    assert code == 0, out
    assert f"schema upgraded from version 0 to {latest}" in out
    code, out = run("db", "upgrade", *store_args)
    assert code == 0 and f"schema is current (version {latest})" in out
    code, out = run("db", "status", *store_args)
    assert code == 0, out
    assert f"schema version: {latest}" in out and "hooks: 0 (0 enabled)" in out
    assert "latest execution: none recorded" in out


def test_prune_deletes_only_old_rows(store_args: list[str]) -> None:
    assert run("db", "upgrade", *store_args)[0] == 0
    kind, where = store_args
    options = {"data_dir": where} if kind == "--data-dir" else {"database_url": where}
    now = time.time()

    async def seed() -> None:
        store = await open_store(**options)
        try:
            await store.write_executions([row(1, created_at=now - 10 * 86_400), row(2)])
        finally:
            await store.close()

    async def left() -> list[str]:
        store = await open_store(**options)
        try:
            page = await store.query_executions(Caller.master_scope(), ExecutionQuery())
            return [r.event_id for r in page.items]
        finally:
            await store.close()

    asyncio.run(seed())
    code, out = run("db", "prune", "--days", "7", *store_args)
    assert code == 0 and "pruned 1 execution row(s) older than 7 day(s)" in out
    assert asyncio.run(left()) == ["ev-2"]
    code, out = run("db", "prune", *store_args, env={"HOOKGATE_RETENTION_DAYS": "soon"})
    assert code != 0 and "HOOKGATE_RETENTION_DAYS must be a number" in out


def test_environment_variables_choose_the_store(tmp_path: Path) -> None:
    code, out = run("db", "upgrade", env={"HOOKGATE_DATA_DIR": str(tmp_path / "from-env")})
    assert code == 0, out
    assert (tmp_path / "from-env" / "hookgate.db").exists()


def test_default_is_the_per_user_data_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    code, out = run("db", "upgrade", env={"XDG_DATA_HOME": str(tmp_path / "xdg")})
    assert code == 0, out
    assert (tmp_path / "xdg" / "hookgate" / "hookgate.db").exists()


def test_bad_locations_are_clear_errors(tmp_path: Path) -> None:
    code, out = run("db", "status", "--database-url", "mysql://x/y")
    assert code != 0 and "unsupported database URL scheme" in out
    code, out = run("db", "status", "--database-url", "postgresql://postgres@127.0.0.1:1/none")
    assert code != 0 and "cannot connect to PostgreSQL" in out
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    code, out = run("db", "upgrade", "--data-dir", str(blocker / "sub"))
    assert code != 0 and "cannot create data directory" in out
