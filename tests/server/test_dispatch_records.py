"""Dispatch records on a real gateway: REST and WebSocket, filters, the approval a person
decided (approve, deny, expiry told apart), REST waits as long as the approval lives, the
late answer's trace, and the export."""

from __future__ import annotations

import csv
import io
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from tests.server.conftest import start_gateway
from tests.server.gateway_process import GatewayProcess
from tests.server.wsutil import ok, open_ws
from tests.support.waiting import wait_until

pytestmark = pytest.mark.timeout(180)

SECRET = "sk-live-dispatch-0a1b2c3d4e5f"


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    gateway = start_gateway(tmp_path_factory.mktemp("dispatch-records"))
    keys = {
        "a_operator": gateway.create_key("tenant-a", "operator"),
        "a_viewer": gateway.create_key("tenant-a", "viewer"),
        # A person's key decides approvals; an agent's (operator) key cannot.
        "a_approver": gateway.create_key("tenant-a", "approver"),
        "b_admin": gateway.create_key("tenant-b", "admin"),
    }
    hooks = [
        {"name": "blocker", "matcher": "^rm$",
         "config": {"callable": "tests.server.hookfns:block"}},
        {
            "name": "asker",
            "matcher": "^deploy$",
            "approval": {"timeout_ms": 1500},
            "config": {"callable": "tests.server.hookfns:ask"},
        },
    ]
    for hook in hooks:
        created = gateway.rest(
            "POST",
            "/api/v1/hooks",
            json={"event": "pre_tool_use", "handler_type": "callable", "scope": "tenant",
                  "tenant_id": "tenant-a", **hook},
        )
        assert created.status_code == 201, created.text
    try:
        yield {"gateway": gateway, "keys": keys}
    finally:
        gateway.stop()


def dispatch(gateway: GatewayProcess, key: str, tool: str, **fields: Any) -> dict[str, Any]:
    body = {"event": "pre_tool_use", "input": {"tool_name": tool, **fields.pop("input", {})},
            **fields}
    answer = gateway.rest("POST", "/api/v1/dispatch", key, json=body)
    assert answer.status_code == 200, answer.text
    return dict(answer.json())


def record(gateway: GatewayProcess, key: str, dispatch_id: str) -> dict[str, Any]:
    """The dispatch's record once the (asynchronous) audit writer committed it."""
    found: dict[str, Any] = {}

    def committed() -> bool:
        answer = gateway.rest("GET", f"/api/v1/dispatches/{dispatch_id}", key)
        if answer.status_code == 200:
            found.update(answer.json()["dispatch"])
        return bool(found)

    wait_until(committed, f"dispatch record {dispatch_id}")
    return found


def test_every_dispatch_is_one_record_over_rest_and_ws(served: dict[str, Any]) -> None:
    gateway, key = served["gateway"], served["keys"]["a_operator"]
    blocked = dispatch(gateway, key, "rm", input={"session_id": "s-rest", "agent_id": "bot",
                                                  "tool_input": {"path": "/"}})
    unmatched = dispatch(gateway, key, "ls", input={"session_id": "s-rest"})
    assert blocked["decision"] == "block" and blocked["dispatch_id"]
    shown = record(gateway, key, blocked["dispatch_id"])
    assert shown["decision"] == "block" and shown["tool_name"] == "rm"
    assert shown["agent_id"] == "bot" and shown["tenant_id"] == "tenant-a"
    assert [(h["hook_name"], h["decision"]) for h in shown["hooks"]] == [("blocker", "block")]
    assert shown["created_at"].endswith("Z") and shown["input_size"] > 0
    # No hook matched: still a record.
    quiet = record(gateway, key, unmatched["dispatch_id"])
    assert quiet["matched"] == 0 and quiet["decision"] == "allow"
    listed = gateway.rest("GET", "/api/v1/dispatches", key,
                          params={"sessionId": "s-rest", "decision": "block"}).json()
    assert [d["id"] for d in listed["dispatches"]] == [blocked["dispatch_id"]]
    by_agent = gateway.rest("GET", "/api/v1/dispatches", key,
                            params={"agentId": "bot", "toolName": "rm", "since": "2020-01-01"})
    assert [d["id"] for d in by_agent.json()["dispatches"]] == [blocked["dispatch_id"]]
    # The hook rows name their dispatch.
    rows = gateway.rest("GET", "/api/v1/executions", key, params={"sessionId": "s-rest"}).json()
    assert [r["dispatch_id"] for r in rows["executions"]] == [blocked["dispatch_id"]]
    with open_ws(gateway.ws_url, served["keys"]["a_viewer"]) as ws:
        page = ok(ws, "dispatches.list", {"sessionId": "s-rest"})
        assert {d["id"] for d in page["dispatches"]} == {
            blocked["dispatch_id"], unmatched["dispatch_id"]
        }
        one = ok(ws, "dispatches.get", {"dispatchId": blocked["dispatch_id"]})["dispatch"]
        assert one["hooks"] == shown["hooks"]


def test_approve_deny_and_expiry_are_told_apart(served: dict[str, Any]) -> None:
    gateway, key = served["gateway"], served["keys"]["a_operator"]
    pending = [dispatch(gateway, key, "deploy", approvalWaitS=0,
                        input={"session_id": f"s-appr-{n}"}) for n in range(3)]
    ids = [p["approval"]["id"] for p in pending]
    assert all(p["approval"]["status"] == "pending" for p in pending)
    # The pending answer names the REST route to wait on.
    assert f"/api/v1/approvals/{ids[0]}/outcome" in pending[0]["reason"]
    person = served["keys"]["a_approver"]
    approved = gateway.rest("POST", f"/api/v1/approvals/{ids[0]}/approve", person,
                            json={"comment": "fine"})
    denied = gateway.rest("POST", f"/api/v1/approvals/{ids[1]}/deny", person, json={})
    assert approved.status_code == denied.status_code == 200
    # The late answer has the dispatch's id and its trace.
    late = gateway.rest("GET", f"/api/v1/approvals/{ids[0]}/outcome", key).json()
    assert late["decision"] == "allow" and late["dispatch_id"] == pending[0]["dispatch_id"]
    assert [entry["name"] for entry in late["trace"] if entry["matched"]] == ["asker"]
    expired = gateway.rest("GET", f"/api/v1/approvals/{ids[2]}/outcome", key).json()
    assert expired["decision"] == "block" and expired["approval"]["status"] == "expired"
    shown = [record(gateway, key, p["dispatch_id"])["approval"] for p in pending]
    assert [a["id"] for a in shown] == ids
    assert [a["status"] for a in shown] == ["approved", "denied", "expired"]
    assert shown[0]["decided_by"] and shown[0]["decided_at"].endswith("Z")
    assert shown[0]["comment"] == "fine" and shown[2]["decided_by"] is None
    asked = gateway.rest("GET", "/api/v1/dispatches", key, params={"decision": "ask"}).json()
    assert set(ids) <= {d["approval"]["id"] for d in asked["dispatches"]}


def test_rest_waits_the_approvals_whole_lifetime(served: dict[str, Any]) -> None:
    """No approvalWaitS: the REST call waits until a person decides (past the old 25 s
    cap it would have needed), and its record says who."""
    gateway, key = served["gateway"], served["keys"]["a_operator"]
    answers: list[dict[str, Any]] = []
    caller = threading.Thread(
        target=lambda: answers.append(
            dispatch(gateway, key, "deploy", input={"session_id": "s-wait"})
        )
    )
    caller.start()

    def pending_id() -> str | None:
        rows = gateway.rest("GET", "/api/v1/approvals", key).json()["approvals"]
        return next((r["id"] for r in rows if r["session_id"] == "s-wait"), None)

    wait_until(pending_id, "the approval to be created")
    approval_id = pending_id()
    person = served["keys"]["a_approver"]
    gateway.rest("POST", f"/api/v1/approvals/{approval_id}/approve", person, json={})
    caller.join(30)
    (answer,) = answers
    assert answer["decision"] == "allow" and answer["approval"]["status"] == "approved"
    assert record(gateway, key, answer["dispatch_id"])["approval"]["status"] == "approved"


def test_records_are_exported_like_executions(served: dict[str, Any]) -> None:
    gateway, key = served["gateway"], served["keys"]["a_operator"]
    made = dispatch(gateway, key, "rm", input={"session_id": "s-export",
                                               "tool_input": {"token": SECRET, "cmd": SECRET}})
    record(gateway, key, made["dispatch_id"])
    viewer = served["keys"]["a_viewer"]
    answer = gateway.rest("GET", "/api/v1/dispatches/export", viewer,
                          params={"format": "csv", "sessionId": "s-export"})
    assert answer.status_code == 200 and SECRET not in answer.text
    (row,) = list(csv.DictReader(io.StringIO(answer.text)))
    assert row["id"] == made["dispatch_id"] and row["hooks"] == "blocker: block"
    as_json = gateway.rest("GET", "/api/v1/dispatches/export", viewer,
                           params={"format": "json", "sessionId": "s-export"}).json()
    assert [r["id"] for r in as_json] == [made["dispatch_id"]]


def test_refused_input_leaves_a_named_record(served: dict[str, Any]) -> None:
    gateway, key = served["gateway"], served["keys"]["a_operator"]
    deep: Any = 1
    for _ in range(300):
        deep = [deep]
    answer = gateway.rest("POST", "/api/v1/dispatch", key, json={
        "event": "pre_tool_use", "input": {"tool_name": "rm", "session_id": "s-deep",
                                           "tool_input": {"v": deep}}})
    assert answer.status_code == 400, answer.text
    dispatch_id = answer.json()["error"]["details"]["dispatchId"]
    shown = record(gateway, key, dispatch_id)
    assert shown["decision"] == "block" and "deeper" in shown["refused"]
    rows = gateway.rest("GET", "/api/v1/executions", key, params={"sessionId": "s-deep"}).json()
    assert [r["hook_name"] for r in rows["executions"]] == ["hookgate input limits"]
