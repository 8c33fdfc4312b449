"""``GET /api/v1/audit/verify`` (and ``audit.verify`` over WebSocket) on a real gateway
process: a tenant admin checks its own chain, master scope every tenant's; a row changed in
the SQLite file behind the gateway's back shows up in the answer; viewers and operators are
refused."""

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

pytestmark = pytest.mark.timeout(120)


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    gateway = start_gateway(tmp_path_factory.mktemp("audit-verify"))
    keys = {
        f"{tenant}_{role}": gateway.create_key(tenant, role)
        for tenant in ("tenant-a", "tenant-b")
        for role in ("viewer", "operator", "admin")
    }
    try:
        yield {"gateway": gateway, "keys": keys}
    finally:
        gateway.stop()


def dispatch_some(gateway: GatewayProcess, key: str, count: int, session: str) -> list[str]:
    ids = []
    for n in range(count):
        answer = gateway.rest("POST", "/api/v1/dispatch", key, json={
            "event": "pre_tool_use",
            "input": {"tool_name": "exec", "tool_input": {"n": n}, "session_id": session},
        })
        assert answer.status_code == 200, answer.text
        ids.append(str(answer.json()["dispatch_id"]))
    return ids


def chain_of(gateway: GatewayProcess, key: str, **params: str) -> dict[str, Any]:
    answer = gateway.rest("GET", "/api/v1/audit/verify", key, params=params)
    assert answer.status_code == 200, answer.text
    return dict(answer.json())


def wait_for_records(gateway: GatewayProcess, key: str, tenant: str, count: int) -> None:
    def written() -> bool:
        tenants = chain_of(gateway, key)["tenants"]
        return any(t["tenant_id"] == tenant and t["records"] >= count for t in tenants)

    wait_until(written, f"{count} chained records of {tenant}")


def test_admins_verify_their_chains_and_see_a_tampered_row(served: dict[str, Any]) -> None:
    gateway, keys = served["gateway"], served["keys"]
    ids = dispatch_some(gateway, keys["tenant-a_operator"], 6, "api-a")
    dispatch_some(gateway, keys["tenant-b_operator"], 3, "api-b")
    wait_for_records(gateway, keys["tenant-a_admin"], "tenant-a", 6)
    wait_for_records(gateway, keys["tenant-b_admin"], "tenant-b", 3)

    mine = chain_of(gateway, keys["tenant-a_admin"])
    assert mine["intact"] is True
    assert [t["tenant_id"] for t in mine["tenants"]] == ["tenant-a"]
    (chain,) = mine["tenants"]
    assert chain["records"] == 6 and chain["head"]["seq"] == 6 and chain["problem"] is None
    everyone = chain_of(gateway, str(gateway.master_key))
    assert {"tenant-a", "tenant-b"} <= {t["tenant_id"] for t in everyone["tenants"]}
    assert everyone["intact"] is True
    with open_ws(gateway.ws_url, keys["tenant-b_admin"]) as ws:
        reply = request(ws, "audit.verify", {})
        assert reply["ok"] is True, reply
        assert [t["tenant_id"] for t in reply["payload"]["tenants"]] == ["tenant-b"]

    # Someone with the database file changes one of tenant A's records.
    with sqlite3.connect(gateway.data_dir / SQLITE_FILE_NAME, timeout=30) as db:
        changed = db.execute(
            "UPDATE dispatch_records SET decision = 'block', reason = 'edited' WHERE id = ?",
            (ids[3],),
        ).rowcount
    assert changed == 1
    broken = chain_of(gateway, keys["tenant-a_admin"])
    assert broken["intact"] is False
    problem = broken["tenants"][0]["problem"]
    assert (problem["record_id"], problem["chain_seq"], problem["kind"]) == (ids[3], 4, "altered")
    # Tenant B's chain is not touched by it.
    assert chain_of(gateway, keys["tenant-b_admin"])["intact"] is True


@pytest.mark.parametrize("role", ["viewer", "operator"])
def test_viewers_and_operators_are_refused(served: dict[str, Any], role: str) -> None:
    gateway, keys = served["gateway"], served["keys"]
    answer = gateway.rest("GET", "/api/v1/audit/verify", keys[f"tenant-a_{role}"])
    assert answer.status_code == 403, answer.text
    assert answer.json()["error"]["code"] == "UNAUTHORIZED"
