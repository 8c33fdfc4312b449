"""approvals.* over REST against a real gateway: the attacks a tenant key can try, and the
input sealed at rest."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.server.conftest import start_gateway
from tests.server.gateway_process import GatewayProcess

pytestmark = pytest.mark.timeout(120)

SECRET = "sk-live-approval-9c8b7a6f5e4d"


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    gateway = start_gateway(tmp_path_factory.mktemp("approvals-api"))
    keys = {
        "a_operator": gateway.create_key("tenant-a", "operator"),
        # People decide with keys of their own: the key that asked may not (issue 24).
        "a_approver": gateway.create_key("tenant-a", "approver"),
        "a_viewer": gateway.create_key("tenant-a", "viewer"),
        "b_admin": gateway.create_key("tenant-b", "admin"),
    }
    for tenant in ("tenant-a", "tenant-b"):
        created = gateway.rest(
            "POST",
            "/api/v1/hooks",
            json={
                "event": "pre_tool_use",
                "handler_type": "callable",
                "scope": "tenant",
                "tenant_id": tenant,
                "name": "exec guard",
                "config": {"callable": "tests.server.hookfns:ask"},
            },
        )
        assert created.status_code == 201, created.text
    try:
        yield {"gateway": gateway, "keys": keys}
    finally:
        gateway.stop()


def ask(gateway: GatewayProcess, key: str, tool_input: Any) -> str:
    answer = gateway.rest(
        "POST",
        "/api/v1/dispatch",
        key,
        json={
            "event": "pre_tool_use",
            "input": {"tool_name": "exec", "tool_input": tool_input},
            "approvalWaitS": 0,
        },
    )
    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert body["decision"] == "block" and body["approval"]["status"] == "pending"
    return str(body["approval"]["id"])


def test_bad_decisions_are_refused_with_their_reason(served: dict[str, Any]) -> None:
    gateway: GatewayProcess = served["gateway"]
    key = served["keys"]["a_operator"]
    approval_id = ask(gateway, key, {"cmd": "ls"})
    key = served["keys"]["a_approver"]
    base = f"/api/v1/approvals/{approval_id}"
    too_long = gateway.rest("POST", base + "/approve", key, json={"comment": "x" * 2001})
    assert too_long.status_code == 400 and "comment" in too_long.text
    edit_on_deny = gateway.rest("POST", base + "/deny", key, json={"updatedInput": {"cmd": "x"}})
    assert edit_on_deny.status_code == 400 and "only an approval" in edit_on_deny.text
    not_json = gateway.rest(
        "POST", base + "/approve", key, content=b"{nope", headers={
            **gateway.headers(key), "Content-Type": "application/json"}
    )
    assert not_json.status_code == 400
    unknown = gateway.rest("POST", "/api/v1/approvals/apr_nope/approve", key, json={})
    assert unknown.status_code == 404
    huge = gateway.rest(
        "POST", base + "/approve", key, json={"updatedInput": {"blob": "y" * (2 << 20)}}
    )
    assert huge.status_code == 413
    assert gateway.rest("GET", base, key).json()["approval"]["status"] == "pending"

    first = gateway.rest("POST", base + "/approve", key, json={"updatedInput": None})
    assert first.status_code == 200, first.text
    assert first.json()["approval"]["input_edited"] is True  # null is an edit too
    again = gateway.rest("POST", base + "/deny", key, json={})
    assert again.status_code == 409 and "already approved" in again.text
    agent = served["keys"]["a_operator"]  # the agent waits on the outcome
    outcome = gateway.rest("GET", base + "/outcome?timeoutS=0", agent).json()
    assert outcome["decision"] == "allow" and outcome["updated_input"] is None


def test_tenants_are_isolated_and_master_scope_filters(served: dict[str, Any]) -> None:
    gateway: GatewayProcess = served["gateway"]
    keys = served["keys"]
    mine = ask(gateway, keys["a_operator"], {"cmd": "a"})
    theirs = ask(gateway, keys["b_admin"], {"cmd": "b"})
    listed = gateway.rest("GET", "/api/v1/approvals?status=all", keys["a_operator"]).json()
    ids = {row["id"] for row in listed["approvals"]}
    assert mine in ids and theirs not in ids
    for method, path in (
        ("GET", f"/api/v1/approvals/{theirs}"),
        ("POST", f"/api/v1/approvals/{theirs}/deny"),
        ("GET", f"/api/v1/approvals/{theirs}/outcome?timeoutS=0"),
    ):
        assert gateway.rest(method, path, keys["a_operator"]).status_code == 404
    forbidden = gateway.rest("GET", "/api/v1/approvals?tenantId=tenant-b", keys["a_operator"])
    assert forbidden.status_code == 403
    only_b = gateway.rest("GET", "/api/v1/approvals?status=all&tenantId=tenant-b").json()
    assert {row["tenant_id"] for row in only_b["approvals"]} == {"tenant-b"}
    viewer = gateway.rest("POST", f"/api/v1/approvals/{mine}/approve", keys["a_viewer"], json={})
    assert viewer.status_code == 403


def test_watch_is_not_woken_by_another_tenants_approvals(served: dict[str, Any]) -> None:
    gateway: GatewayProcess = served["gateway"]
    keys = served["keys"]
    start = gateway.rest("GET", "/api/v1/approvals/watch", keys["a_viewer"]).json()
    answers: list[dict[str, Any]] = []

    def watch() -> None:
        answers.append(
            gateway.rest(
                "GET",
                f"/api/v1/approvals/watch?revision={start['revision']}&timeoutS=2",
                keys["a_viewer"],
            ).json()
        )

    waiter = threading.Thread(target=watch)
    waiter.start()
    ask(gateway, keys["b_admin"], {"cmd": "other tenant"})
    waiter.join(timeout=30)
    assert answers[0]["changed"] is False and answers[0]["revision"] == start["revision"]
    ask(gateway, keys["a_operator"], {"cmd": "mine"})
    woke = gateway.rest(
        "GET", f"/api/v1/approvals/watch?revision={start['revision']}&timeoutS=5",
        keys["a_viewer"],
    ).json()
    assert woke["changed"] is True and woke["pendingCount"] >= 1


def test_the_tool_input_is_sealed_at_rest(served: dict[str, Any]) -> None:
    gateway: GatewayProcess = served["gateway"]
    key = served["keys"]["a_operator"]
    approval_id = ask(gateway, key, {"cmd": f"deploy --token {SECRET}"})
    approved = gateway.rest(
        "POST",
        f"/api/v1/approvals/{approval_id}/approve",
        served["keys"]["a_approver"],
        json={"updatedInput": {"cmd": f"deploy --dry-run --token {SECRET}"}},
    )
    assert approved.status_code == 200
    # The API shows it to the tenant …
    view = gateway.rest("GET", f"/api/v1/approvals/{approval_id}", key).json()["approval"]
    assert SECRET in view["tool_input"]["cmd"] and SECRET in view["edited_input"]["cmd"]
    # … the database file and the log never hold it in plain text.
    database = next(Path(gateway.data_dir).glob("*.db"))
    with sqlite3.connect(database) as conn:
        conn.execute("PRAGMA wal_checkpoint(FULL)")
        row = conn.execute(
            "SELECT tool_input, edited_input, outcome FROM approvals WHERE id = ?",
            (approval_id,),
        ).fetchone()
    assert row is not None and all(SECRET not in (value or "") for value in row)
    for path in Path(gateway.data_dir).iterdir():
        if path.is_file():
            assert SECRET.encode() not in path.read_bytes(), path
    assert SECRET not in gateway.log()
