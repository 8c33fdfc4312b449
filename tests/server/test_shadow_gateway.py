"""Shadow mode on a real gateway, over SQLite and over PostgreSQL: created over REST and
WebSocket, recorded as would-block in the trace, the execution row, the dispatch record and
the figures, never deciding, and promoted by ``hooks.promote`` / ``hooks.update``."""

from __future__ import annotations

import asyncio
import base64
import os
import uuid
from collections.abc import Iterator
from typing import Any

import asyncpg
import pytest
from tests.server.conftest import ALLOW_TEST_HOOKS
from tests.server.gateway_process import GatewayProcess
from tests.server.wsutil import ok, open_ws
from tests.store.conftest import PG_URL, need_postgres
from tests.support.waiting import wait_until

pytestmark = pytest.mark.timeout(180)


async def _admin_sql(sql: str) -> None:
    conn = await asyncpg.connect(PG_URL)
    try:
        await conn.execute(sql)
    finally:
        await conn.close()


@pytest.fixture(scope="module", params=["sqlite", "postgres"])
def served(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[dict[str, Any]]:
    data_dir = tmp_path_factory.mktemp("shadow") / "data"
    name = None
    if request.param == "sqlite":
        gateway = GatewayProcess(data_dir, args=ALLOW_TEST_HOOKS)
    else:
        need_postgres()
        name = f"hg_shadow_{uuid.uuid4().hex[:10]}"
        asyncio.run(_admin_sql(f'CREATE DATABASE "{name}"'))
        url = PG_URL.rsplit("/", 1)[0] + "/" + name
        secret = base64.b64encode(os.urandom(32)).decode()
        gateway = GatewayProcess(
            data_dir, args=ALLOW_TEST_HOOKS, database_url=url,
            env={"HOOKGATE_SECRET_KEY": secret},
        )
    try:
        gateway.start()
        keys = {
            "admin": gateway.create_key("tenant-a", "admin"),
            "operator": gateway.create_key("tenant-a", "operator"),
            "viewer": gateway.create_key("tenant-a", "viewer"),
            "b_operator": gateway.create_key("tenant-b", "operator"),
        }
        yield {"gateway": gateway, "keys": keys}
    finally:
        gateway.stop()
        if name is not None:
            asyncio.run(_admin_sql(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))


def create(gateway: GatewayProcess, key: str, tool: str, fn: str, **fields: Any) -> str:
    body = {"event": "pre_tool_use", "handler_type": "callable", "scope": "tenant",
            "matcher": f"^{tool}$", "config": {"callable": f"tests.server.hookfns:{fn}"},
            **fields}
    created = gateway.rest("POST", "/api/v1/hooks", key, json=body)
    assert created.status_code == 201, created.text
    hook_id: str = created.json()["hookId"]
    return hook_id


def dispatch(gateway: GatewayProcess, key: str, tool: str, cmd: str = "ls") -> dict[str, Any]:
    answer = gateway.rest(
        "POST", "/api/v1/dispatch", key,
        json={"event": "pre_tool_use", "input": {"tool_name": tool, "tool_input": {"cmd": cmd},
                                                 "session_id": f"s-{tool}"}},
    )
    assert answer.status_code == 200, answer.text
    outcome: dict[str, Any] = answer.json()
    return outcome


def history(gateway: GatewayProcess, key: str, hook_id: str, count: int) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []

    def enough() -> bool:
        nonlocal rows
        answer = gateway.rest("GET", f"/api/v1/executions?hookId={hook_id}", key)
        rows = answer.json()["executions"]
        return len(rows) >= count

    wait_until(enough, f"{count} execution rows of {hook_id}")
    return rows


def test_a_shadow_hook_is_recorded_as_would_block_and_never_decides(
    served: dict[str, Any],
) -> None:
    gateway, keys = served["gateway"], served["keys"]
    hook_id = create(gateway, keys["admin"], "rm_shadow", "block", mode="shadow", name="shadow-rm")
    hook = gateway.rest("GET", f"/api/v1/hooks/{hook_id}", keys["viewer"]).json()["hook"]
    assert hook["mode"] == "shadow"
    outcome = dispatch(gateway, keys["operator"], "rm_shadow")
    assert outcome["decision"] == "allow" and outcome["reason"] is None
    (entry,) = [t for t in outcome["trace"] if t["hook_id"] == hook_id]
    assert entry["mode"] == "shadow" and entry["decision"] == "would_block"
    assert entry["details"]["reason"] == "blocked by test hook on pre_tool_use"

    (row,) = history(gateway, keys["viewer"], hook_id, 1)
    assert row["decision"] == "would_block" and row["metadata"]["mode"] == "shadow"
    assert row["reason"] == "blocked by test hook on pre_tool_use"

    record = gateway.rest(
        "GET", f"/api/v1/dispatches/{outcome['dispatch_id']}", keys["viewer"]
    ).json()["dispatch"]
    assert record["decision"] == "allow"
    (step,) = record["hooks"]
    assert (step["mode"], step["decision"]) == ("shadow", "would_block")

    figures = gateway.rest("GET", "/api/v1/hooks/figures?window=1h", keys["viewer"]).json()
    (mine,) = [f for f in figures["hooks"] if f["hook_id"] == hook_id]
    assert mine["would_blocks"] == 1 and mine["blocks"] == 0


def test_an_operator_promotes_and_the_hook_then_decides(served: dict[str, Any]) -> None:
    gateway, keys = served["gateway"], served["keys"]
    hook_id = create(gateway, keys["admin"], "rm_promote", "block", mode="shadow")
    assert dispatch(gateway, keys["operator"], "rm_promote")["decision"] == "allow"
    with open_ws(gateway.ws_url, keys["operator"]) as ws:
        promoted = ok(ws, "hooks.promote", {"hookId": hook_id})
        assert promoted["hookId"] == hook_id
        assert ok(ws, "hooks.get", {"hookId": hook_id})["hook"]["mode"] == "enforce"
    outcome = dispatch(gateway, keys["operator"], "rm_promote")
    assert outcome["decision"] == "block"
    assert outcome["reason"] == "blocked by test hook on pre_tool_use"
    # Promoting what already enforces is refused, not a silent version bump.
    again = gateway.rest("POST", f"/api/v1/hooks/{hook_id}/promote", keys["operator"])
    assert again.status_code == 400 and "not in shadow mode" in again.text


def test_hooks_update_switches_the_mode_both_ways(served: dict[str, Any]) -> None:
    gateway, keys = served["gateway"], served["keys"]
    hook_id = create(gateway, keys["admin"], "rm_update", "block")
    assert dispatch(gateway, keys["operator"], "rm_update")["decision"] == "block"
    with open_ws(gateway.ws_url, keys["admin"]) as ws:
        ok(ws, "hooks.update", {"hookId": hook_id, "updates": {"mode": "shadow"}})
    assert dispatch(gateway, keys["operator"], "rm_update")["decision"] == "allow"
    patched = gateway.rest(
        "PATCH", f"/api/v1/hooks/{hook_id}", keys["admin"], json={"mode": "enforce"}
    )
    assert patched.status_code == 200, patched.text
    assert dispatch(gateway, keys["operator"], "rm_update")["decision"] == "block"
    bad = gateway.rest(
        "PATCH", f"/api/v1/hooks/{hook_id}", keys["admin"], json={"mode": "audit"}
    )
    assert bad.status_code == 400 and "mode" in bad.text


def test_the_openapi_document_lists_mode_and_promote(served: dict[str, Any]) -> None:
    gateway = served["gateway"]
    document = gateway.rest("GET", "/api/v1/openapi.json").json()
    assert "/api/v1/hooks/{hookId}/promote" in document["paths"] or any(
        path.endswith("/hooks/{hookId}/promote") for path in document["paths"]
    )
    schemas = document["components"]["schemas"]
    mode = schemas["HookDefinition"]["properties"]["mode"]
    assert set(mode.get("enum", [])) == {"enforce", "shadow"} or "shadow" in str(mode)


def test_simulate_and_chain_show_the_mode(served: dict[str, Any]) -> None:
    gateway, keys = served["gateway"], served["keys"]
    shadow = create(gateway, keys["admin"], "sim_tool", "block", mode="shadow", name="sim-shadow")
    guard = create(gateway, keys["admin"], "sim_tool", "allow", name="sim-guard")
    # An admin: dry-running callable (host code) hooks needs that role.
    with open_ws(gateway.ws_url, keys["admin"]) as ws:
        simulated = ok(ws, "hooks.simulate", {
            "event": "pre_tool_use", "sampleEvent": {"tool_name": "sim_tool", "tool_input": {}},
        })
        chains = ok(ws, "hooks.chain", {})
    assert simulated["decision"] == "allow"
    rows = {h["hookId"]: h for h in simulated["hooks"]}
    assert (rows[shadow]["mode"], rows[shadow]["decision"]) == ("shadow", "would_block")
    assert (rows[guard]["mode"], rows[guard]["decision"]) == ("enforce", "allow")
    (pre,) = [e for e in chains["events"] if e["event"] == "pre_tool_use"]
    listed = {h["hookId"]: h["mode"] for h in pre["hooks"]}
    assert listed[shadow] == "shadow" and listed[guard] == "enforce"
