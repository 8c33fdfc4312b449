"""``hookgate hooks import`` records itself as the creator and changer of the hooks it writes."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner
from tests.cli.store_cli_support import store_location

from hookgate.cli import main
from hookgate.cli.hooks import IMPORT_ACTOR
from hookgate.store import Caller, HookRecord, create_store

ENV_CLEAN = {"HOOKGATE_DATA_DIR": None, "HOOKGATE_DATABASE_URL": None}
HOOK = """
hooks:
  - name: no-rm
    event: pre_tool_use
    handler_type: callable
    scope: tenant
    tenant_id: acme
    matcher: "{matcher}"
    config: {{callable: "tests.store.conftest:allow"}}
"""


@pytest.fixture(params=["sqlite", "postgres"])
def store_args(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[list[str]]:
    yield from store_location(request.param, tmp_path)


def _stored(store_args: list[str]) -> list[HookRecord]:
    option, value = store_args
    store = (
        create_store(data_dir=value) if option == "--data-dir" else create_store(database_url=value)
    )

    async def read() -> list[HookRecord]:
        await store.open()
        try:
            return await store.list_hooks(Caller.master_scope())
        finally:
            await store.close()

    return asyncio.run(read())


def _import(store_args: list[str], source: Path, matcher: str) -> None:
    source.write_text(HOOK.format(matcher=matcher))
    result = CliRunner().invoke(main, ["hooks", "import", str(source), *store_args], env=ENV_CLEAN)
    assert result.exit_code == 0, result.output


def test_import_records_its_actor(store_args: list[str], tmp_path: Path) -> None:
    source = tmp_path / "hooks.yaml"
    _import(store_args, source, "^exec$")
    (created,) = [r for r in _stored(store_args) if r.definition.source == "user"]
    assert (created.created_by, created.updated_by) == (IMPORT_ACTOR, IMPORT_ACTOR)

    _import(store_args, source, "^(exec|shell)$")
    (updated,) = [r for r in _stored(store_args) if r.definition.source == "user"]
    assert updated.version == 2
    assert (updated.created_by, updated.updated_by) == (IMPORT_ACTOR, IMPORT_ACTOR)
