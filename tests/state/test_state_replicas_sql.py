"""Two gateway replicas on one PostgreSQL database share hook state through the store."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from tests.server.gateway_process import HOOKGATE, REPO, GatewayProcess, gateway_env
from tests.server.test_replicas_redis import database  # noqa: F401 - the fixture
from tests.state.test_state_gateway import ALLOW, HOOK, context, dispatch

pytestmark = pytest.mark.postgres


def create_key(url: str, tenant: str) -> str:
    done = subprocess.run([*HOOKGATE, "keys", "create", "--tenant", tenant, "--database-url",
                           url], capture_output=True, text=True, timeout=60, check=True,
                          cwd=REPO, env=gateway_env())
    return done.stdout.strip().splitlines()[-1]


def test_replicas_share_state_through_postgresql(tmp_path: Path, database: str) -> None:  # noqa: F811
    first = GatewayProcess(tmp_path / "a", args=ALLOW, database_url=database).start()
    second = GatewayProcess(tmp_path / "b", args=ALLOW, database_url=database)
    try:
        assert first.master_key is not None
        first.rest("POST", "/api/v1/hooks", json=HOOK).raise_for_status()
        key = create_key(database, "tenant-a")
        dispatch(first, key, session_id="s1", tool_input={"remember": "in postgres"})
        second.start()
        assert context(dispatch(second, key, session_id="s1", tool_input={})) == [
            "note=in postgres"]
        other = create_key(database, "tenant-b")
        assert context(dispatch(second, other, session_id="s1", tool_input={})) == []
    finally:
        second.stop()
        first.stop()
