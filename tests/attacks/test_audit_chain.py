"""Attacks on the audit hash chain (``GET /api/v1/audit/verify``, ``audit.verify``) against a
real gateway process: checking or reading another tenant's chain, a payload that tries to
place or hash its own record, a payload that tries to hang its hook rows on another record,
a tenant admin covering up an altered record through the API, and viewers or operators
running the (costly) walk."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from typing import Any

import pytest
from tests.server.conftest import start_gateway
from tests.server.gateway_process import GatewayProcess
from tests.server.wsutil import open_ws, request
from tests.support.waiting import wait_until

from hookgate.store.location import SQLITE_FILE_NAME

pytestmark = pytest.mark.timeout(180)


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    gateway = start_gateway(tmp_path_factory.mktemp("chain-attacks"))
    keys = {
        "a_admin": gateway.create_key("tenant-a", "admin"),
        "a_operator": gateway.create_key("tenant-a", "operator"),
        "a_viewer": gateway.create_key("tenant-a", "viewer"),
        "b_admin": gateway.create_key("tenant-b", "admin"),
        "b_operator": gateway.create_key("tenant-b", "operator"),
        "c_admin": gateway.create_key("tenant-c", "admin"),
        "c_operator": gateway.create_key("tenant-c", "operator"),
        "d_admin": gateway.create_key("tenant-d", "admin"),
        "d_operator": gateway.create_key("tenant-d", "operator"),
    }
    try:
        yield {"gateway": gateway, "keys": keys}
    finally:
        gateway.stop()


def _dispatch(gateway: GatewayProcess, key: str, payload: dict[str, Any]) -> str:
    answer = gateway.rest("POST", "/api/v1/dispatch", key,
                          json={"event": "pre_tool_use", "input": payload})
    assert answer.status_code == 200, answer.text
    return str(answer.json()["dispatch_id"])


def _verify(gateway: GatewayProcess, key: str, **params: str) -> dict[str, Any]:
    answer = gateway.rest("GET", "/api/v1/audit/verify", key, params=params)
    assert answer.status_code == 200, answer.text
    return dict(answer.json())


def _chained(gateway: GatewayProcess, admin: str, tenant: str, count: int) -> dict[str, Any]:
    found: dict[str, Any] = {}

    def written() -> bool:
        for chain in _verify(gateway, admin)["tenants"]:
            if chain["tenant_id"] == tenant and chain["records"] >= count:
                found.update(chain)
        return bool(found)

    wait_until(written, f"{count} chained records of {tenant}")
    return found


def test_tenant_cannot_verify_or_read_another_tenants_chain(served: dict[str, Any]) -> None:
    """tenant: an admin of tenant B names tenant A (REST and WebSocket) to check its chain
    and read its head (how many records, their last hash)."""
    gateway, keys = served["gateway"], served["keys"]
    _dispatch(gateway, keys["a_operator"], {"tool_name": "exec", "session_id": "a1"})
    _dispatch(gateway, keys["b_operator"], {"tool_name": "exec", "session_id": "b1"})
    theirs = _chained(gateway, keys["a_admin"], "tenant-a", 1)
    _chained(gateway, keys["b_admin"], "tenant-b", 1)
    answer = gateway.rest("GET", "/api/v1/audit/verify", keys["b_admin"],
                          params={"tenantId": "tenant-a"})
    assert answer.status_code == 403 and answer.json()["error"]["code"] == "UNAUTHORIZED"
    with open_ws(gateway.ws_url, keys["b_admin"]) as ws:
        reply = request(ws, "audit.verify", {"tenantId": "tenant-a"})
        assert reply["ok"] is False and reply["error"]["code"] == "UNAUTHORIZED"
        own = request(ws, "audit.verify", {})
    mine = gateway.rest("GET", "/api/v1/audit/verify", keys["b_admin"])
    for text in (mine.text, str(own)):
        assert "tenant-a" not in text and theirs["head"]["hash"] not in text


def test_payload_cannot_place_or_hash_its_own_record(served: dict[str, Any]) -> None:
    """tool: the event's payload carries chain fields (a place, a previous hash, a record
    hash, another tenant) to splice a record into a chain where it wants."""
    gateway, keys = served["gateway"], served["keys"]
    _dispatch(gateway, keys["c_operator"], {"tool_name": "exec", "session_id": "c0"})
    start = _chained(gateway, keys["c_admin"], "tenant-c", 1)["head"]["seq"]
    forged = {
        "tool_name": "exec", "session_id": "forger", "tenant_id": "tenant-a",
        "chain_seq": 1, "chainSeq": 1, "prev_hash": "0" * 64, "record_hash": "f" * 64,
        "tool_input": {"chain_seq": 1, "record_hash": "f" * 64},
    }
    _dispatch(gateway, keys["c_operator"], forged)
    chain = _chained(gateway, keys["c_admin"], "tenant-c", start + 1)
    assert chain["intact"] is True and chain["head"]["seq"] == start + 1
    assert chain["head"]["hash"] != "f" * 64
    # Tenant A's chain did not get it.
    a_chain = _verify(gateway, keys["a_admin"])["tenants"][0]
    assert a_chain["intact"] is True and "forger" not in str(a_chain)


def test_tenant_admin_cannot_cover_up_an_altered_record(served: dict[str, Any]) -> None:
    """tenant: one of tenant A's records was changed in the database; tenant A's admin then
    uses every write the API gives it (new dispatches, hooks, keys, writes aimed at the
    records and the verify route) to make the check pass again."""
    gateway, keys = served["gateway"], served["keys"]
    admin = keys["a_admin"]
    known = [c for c in _verify(gateway, admin)["tenants"] if c["tenant_id"] == "tenant-a"]
    start = known[0]["head"]["seq"] if known and known[0]["head"] else 0
    victim = _dispatch(gateway, keys["a_operator"], {"tool_name": "exec", "session_id": "v"})
    _dispatch(gateway, keys["a_operator"], {"tool_name": "exec", "session_id": "after"})
    _chained(gateway, admin, "tenant-a", start + 2)
    with sqlite3.connect(gateway.data_dir / SQLITE_FILE_NAME, timeout=30) as db:
        assert db.execute(
            "UPDATE dispatch_records SET decision = 'block', reason = 'forged' WHERE id = ?",
            (victim,),
        ).rowcount == 1
    broken = _verify(gateway, admin)["tenants"][0]["problem"]
    assert broken["record_id"] == victim and broken["kind"] == "altered"

    attempts = [
        gateway.rest("POST", "/api/v1/hooks", admin, json={
            "event": "pre_tool_use", "handler_type": "callable", "scope": "tenant",
            "name": "cover", "config": {"callable": "tests.server.hookfns:leaky"},
        }),
        gateway.rest("POST", "/api/v1/keys", admin, json={"role": "viewer", "name": "x"}),
        gateway.rest("DELETE", f"/api/v1/dispatches/{victim}", admin),
        gateway.rest("PATCH", f"/api/v1/dispatches/{victim}", admin, json={"decision": "allow"}),
        gateway.rest("POST", "/api/v1/audit/verify", admin, json={"repair": True}),
        gateway.rest("GET", "/api/v1/audit/verify", admin, params={"repair": "true"}),
    ]
    assert all(answer.status_code < 500 for answer in attempts), [a.text for a in attempts]
    _dispatch(gateway, keys["a_operator"], {"tool_name": "exec", "session_id": "more"})
    with open_ws(gateway.ws_url, admin) as ws:
        for method in ("audit.repair", "dispatches.update", "dispatches.delete"):
            reply = request(ws, method, {"dispatchId": victim})
            assert reply["ok"] is False
    after = _verify(gateway, admin)
    assert after["intact"] is False
    assert after["tenants"][0]["problem"] == broken


@pytest.mark.parametrize("role", ["viewer", "operator"])
def test_viewer_or_operator_cannot_run_the_walk(served: dict[str, Any], role: str) -> None:
    """viewer: a viewer (or operator) key runs the chain check, a walk over every record
    of the tenant, over REST and WebSocket (admins only)."""
    gateway, keys = served["gateway"], served["keys"]
    key = keys[f"a_{role}"]
    answer = gateway.rest("GET", "/api/v1/audit/verify", key)
    assert answer.status_code == 403 and answer.json()["error"]["code"] == "UNAUTHORIZED"
    with open_ws(gateway.ws_url, key) as ws:
        reply = request(ws, "audit.verify", {})
        assert reply["ok"] is False and reply["error"]["code"] == "UNAUTHORIZED"


def test_payload_cannot_hang_its_hook_rows_on_another_record(served: dict[str, Any]) -> None:
    """tool: the event's payload names an earlier dispatch's id (every spelling, in the
    input too) so that the hook rows of this dispatch land on that record (padding or
    breaking it); a hook row then altered in the database is named by the API."""
    gateway, keys = served["gateway"], served["keys"]
    created = gateway.rest("POST", "/api/v1/hooks", json={
        "event": "pre_tool_use", "handler_type": "callable", "scope": "tenant",
        "tenant_id": "tenant-d", "name": "guard", "matcher": "^guarded$",
        "config": {"callable": "tests.server.hookfns:block"},
    })
    assert created.status_code == 201, created.text
    victim = _dispatch(gateway, keys["d_operator"], {"tool_name": "guarded", "session_id": "d"})
    _dispatch(gateway, keys["d_operator"], {
        "tool_name": "guarded", "session_id": "d", "dispatch_id": victim,
        "dispatchId": victim, "tool_input": {"dispatch_id": victim},
    })
    chain = _chained(gateway, keys["d_admin"], "tenant-d", 2)
    assert chain["intact"] is True and chain["hook_rows"] == 2
    assert chain["unlisted_hook_rows"] == 0  # nothing hangs on the victim's record
    with sqlite3.connect(gateway.data_dir / SQLITE_FILE_NAME, timeout=30) as db:
        owners = [row[0] for row in db.execute(
            "SELECT dispatch_id FROM hook_executions WHERE tenant_id = 'tenant-d' ORDER BY seq"
        )]
        assert owners[0] == victim and owners[1] != victim
        (row_id,) = db.execute(
            "SELECT id FROM hook_executions WHERE dispatch_id = ?", (victim,)
        ).fetchone()
        db.execute("UPDATE hook_executions SET reason = 'fine' WHERE id = ?", (row_id,))
    problem = _verify(gateway, keys["d_admin"])["tenants"][0]["problem"]
    assert problem["record_id"] == victim and problem["kind"] == "altered"
    assert f"hook row {row_id} of record {victim}" in problem["why"]
