"""Audit rows say what and why: tool, redacted input summary, redacted reason, agent and
session; on a real gateway over SQLite and over PostgreSQL."""

from __future__ import annotations

import asyncio
import base64
import os
import time
import uuid
from collections.abc import Iterator
from typing import Any

import asyncpg
import pytest
from tests.server.conftest import ALLOW_TEST_HOOKS
from tests.server.gateway_process import GatewayProcess
from tests.server.wsutil import ok, open_ws
from tests.store.conftest import PG_URL, need_postgres

INPUT_SECRET = "sk-INPUTSECRET12345"
PASSWORD = "hunter2-correct-horse"
REASON_SECRET = "REASON-SECRET-42"


async def _admin_sql(sql: str) -> None:
    conn = await asyncpg.connect(PG_URL)
    try:
        await conn.execute(sql)
    finally:
        await conn.close()


@pytest.fixture(scope="module", params=["sqlite", "postgres"])
def served(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[
    GatewayProcess
]:
    data_dir = tmp_path_factory.mktemp("audit") / "data"
    if request.param == "sqlite":
        gateway = GatewayProcess(data_dir, args=ALLOW_TEST_HOOKS).start()
        try:
            yield gateway
        finally:
            gateway.stop()
        return
    need_postgres()
    name = f"hg_audit_{uuid.uuid4().hex[:10]}"
    asyncio.run(_admin_sql(f'CREATE DATABASE "{name}"'))
    url = PG_URL.rsplit("/", 1)[0] + "/" + name
    # PostgreSQL has no data directory for a generated key: the sealing key comes by env.
    secret = base64.b64encode(os.urandom(32)).decode()
    gateway = GatewayProcess(
        data_dir, args=ALLOW_TEST_HOOKS, database_url=url, env={"HOOKGATE_SECRET_KEY": secret}
    )
    try:
        gateway.start()
        yield gateway
    finally:
        gateway.stop()
        asyncio.run(_admin_sql(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))


def _rows(ws: Any, count: int, **query: Any) -> list[dict[str, Any]]:
    deadline = time.monotonic() + 10
    while True:
        rows: list[dict[str, Any]] = ok(ws, "hooks.history", query)["executions"]
        if len(rows) >= count or time.monotonic() > deadline:
            return rows
        time.sleep(0.05)


def test_row_says_tool_input_reason_agent_session(served: GatewayProcess) -> None:
    tenant = f"t-{uuid.uuid4().hex[:6]}"
    admin = served.create_key(tenant, "admin")
    viewer = served.create_key(tenant, "viewer")
    with open_ws(served.ws_url, admin) as ws:
        hook_id = ok(ws, "hooks.create", {
            "event": "pre_tool_use", "handler_type": "callable", "scope": "tenant",
            "name": "leaky", "matcher": "Bash",
            "config": {"callable": "tests.server.hookfns:leaky"},
        })["hookId"]
        outcome = ok(ws, "hooks.dispatch", {"event": "pre_tool_use", "input": {
            "tool_name": "Bash", "agent_id": "agent-7", "session_id": "sess-9",
            "tool_input": {
                "command": f"curl -H 'Authorization: Bearer {INPUT_SECRET}' https://x.test",
                "password": PASSWORD,
            },
        }})
        assert outcome["decision"] == "block"
        admin_row = _rows(ws, 1, hookId=hook_id)[0]
        # The admin sees the full reason, sealed and opened for admins only.
        assert admin_row["error_detail"] and REASON_SECRET in admin_row["error_detail"]
        # The hook is deleted: its history stays reachable by its id.
        ok(ws, "hooks.delete", {"hookId": hook_id})
        gone = _rows(ws, 1, hookId=hook_id)
        assert [r["hook_ref"] for r in gone] == [hook_id] and gone[0]["hook_id"] is None
    with open_ws(served.ws_url, viewer) as ws:
        rows = _rows(ws, 1, toolName="Bash")
        assert len(rows) == 1
        row = rows[0]
        assert row["tool_name"] == "Bash"
        assert row["agent_id"] == "agent-7" and row["session_id"] == "sess-9"
        assert row["reason"].startswith("refused: the call carried [REDACTED]")
        assert len(row["reason"]) <= 256
        assert "curl" in row["input_summary"]
        assert row["error_detail"] is None
        page = str(ok(ws, "hooks.history", {}))
        for secret in (INPUT_SECRET, PASSWORD, REASON_SECRET):
            assert secret not in page
        assert ok(ws, "hooks.history", {"toolName": "Read"})["executions"] == []
    # REST reads the same row.
    body = served.rest("GET", "/api/v1/executions?toolName=Bash", viewer).text
    assert "Bash" in body and REASON_SECRET not in body and PASSWORD not in body


def test_export_streams_the_callers_rows_only(served: GatewayProcess) -> None:
    import csv
    import io
    import json

    tenant, other = f"t-{uuid.uuid4().hex[:6]}", f"o-{uuid.uuid4().hex[:6]}"
    admin = served.create_key(tenant, "admin")
    viewer = served.create_key(tenant, "viewer")
    outsider = served.create_key(other, "admin")
    with open_ws(served.ws_url, admin) as ws:
        ok(ws, "hooks.create", {
            "event": "pre_tool_use", "handler_type": "callable", "scope": "tenant",
            "name": "blocker", "config": {"callable": "tests.server.hookfns:block"},
        })
        for n in range(3):
            ok(ws, "hooks.dispatch", {"event": "pre_tool_use", "input": {
                "tool_name": "=cmd|' /C calc'!A0" if n == 0 else "Write",
                "session_id": f"s-{n}", "tool_input": {"token": PASSWORD},
            }})
        _rows(ws, 3)
    csv_text = served.rest("GET", "/api/v1/executions/export?format=csv", viewer).text
    table = list(csv.DictReader(io.StringIO(csv_text)))
    assert len(table) == 3 and {r["tenant_id"] for r in table} == {tenant}
    # A cell a spreadsheet would run as a formula is defused.
    assert "'=cmd|' /C calc'!A0" in {r["tool_name"] for r in table}
    assert PASSWORD not in csv_text
    response = served.rest("GET", "/api/v1/executions/export?format=json&toolName=Write", viewer)
    assert response.headers["content-disposition"].endswith('hookgate-audit.json"')
    assert [r["session_id"] for r in json.loads(response.text)] == ["s-2", "s-1"]
    # Another tenant's key exports none of these rows, and may not name this tenant.
    theirs = json.loads(served.rest("GET", "/api/v1/executions/export?format=json", outsider).text)
    assert theirs == []
    refused = served.rest("GET", f"/api/v1/executions/export?tenantId={tenant}", outsider)
    assert refused.status_code in (401, 403)
    assert served.rest("GET", "/api/v1/executions/export", headers={}).status_code == 401
    assert served.rest("GET", "/api/v1/executions/export?format=xml", viewer).status_code == 400
