"""Attacks on the reads the web panel added (``hooks.figures`` / ``GET /api/v1/hooks/figures``,
the history's ``hookName`` filter, ``hooks.revisions`` / ``GET /api/v1/hooks/{id}/revisions``),
against a real gateway process: another tenant's key (viewer or admin) reading tenant A's
per-hook figures, executions or definition history through them, and a viewer reading a
sealed secret back out of a definition history."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from tests.server.conftest import start_gateway
from tests.server.gateway_process import GatewayProcess
from tests.server.panel_support import TEST_SECRET_KEY
from tests.server.wsutil import open_ws, request

pytestmark = pytest.mark.timeout(120)


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    gateway = start_gateway(tmp_path_factory.mktemp("panel-attacks"), "--audit-mode", "sync",
                            HOOKGATE_SECRET_KEY=TEST_SECRET_KEY)
    keys = {
        "a_operator": gateway.create_key("tenant-a", "operator"),
        "a_viewer": gateway.create_key("tenant-a", "viewer"),
        "b_viewer": gateway.create_key("tenant-b", "viewer"),
        "b_admin": gateway.create_key("tenant-b", "admin"),
    }
    created = gateway.rest("POST", "/api/v1/hooks", json={
        "event": "pre_tool_use", "handler_type": "callable", "scope": "tenant",
        "tenant_id": "tenant-a", "name": "a-guard", "matcher": "^exec$",
        "config": {"callable": "tests.server.hookfns:block"},
    })
    assert created.status_code == 201, created.text
    for n in range(3):
        answer = gateway.rest("POST", "/api/v1/dispatch", keys["a_operator"], json={
            "event": "pre_tool_use", "input": {"tool_name": "exec", "session_id": f"a-{n}"},
        })
        assert answer.status_code == 200, answer.text
    try:
        yield {"gateway": gateway, "keys": keys, "hook_id": created.json()["hookId"]}
    finally:
        gateway.stop()


def _figures(gateway: GatewayProcess, key: str, query: str = "") -> Any:
    return gateway.rest("GET", f"/api/v1/hooks/figures{query}", key)


def test_the_owning_viewer_reads_its_figures(served: dict[str, Any]) -> None:
    """Baseline for the attacks below: tenant A's viewer sees A's figures (so an empty
    answer to tenant B means scoping, not a route that counts nothing)."""
    answer = _figures(served["gateway"], served["keys"]["a_viewer"])
    assert answer.status_code == 200, answer.text
    figures = {f["hook_id"]: f for f in answer.json()["hooks"]}
    assert figures[served["hook_id"]]["fires"] == 3
    assert figures[served["hook_id"]]["block_rate"] == 1.0


@pytest.mark.parametrize("role", ["b_viewer", "b_admin"])
def test_another_tenant_cannot_read_figures(served: dict[str, Any], role: str) -> None:
    """tenant (another tenant's viewer or admin): reads the per-hook figures, over REST and
    the WebSocket, hoping to see tenant A's hooks, fire counts and block rates."""
    gateway, keys = served["gateway"], served["keys"]
    answer = _figures(gateway, keys[role])
    assert answer.status_code == 200, answer.text  # the route serves the caller's own tenant
    assert answer.json()["hooks"] == []
    assert answer.json()["rows"] == 0
    with open_ws(gateway.ws_url, keys[role]) as ws:
        reply = request(ws, "hooks.figures", {"window": "30d"})
        assert reply["ok"] is True and reply["payload"]["hooks"] == []


@pytest.mark.parametrize("role", ["b_viewer", "b_admin"])
def test_another_tenant_cannot_name_tenant_a_for_figures(served: dict[str, Any], role: str) -> None:
    """tenant (another tenant's viewer or admin): names tenant A in ``tenantId`` to read its
    figures."""
    gateway, keys = served["gateway"], served["keys"]
    answer = _figures(gateway, keys[role], "?tenantId=tenant-a")
    assert answer.status_code in (401, 403), answer.text
    assert answer.json()["error"]["code"] == "UNAUTHORIZED"
    assert "a-guard" not in answer.text


@pytest.mark.parametrize("role", ["b_viewer", "b_admin"])
def test_another_tenant_cannot_read_executions_by_hook_name(
    served: dict[str, Any], role: str
) -> None:
    """tenant (another tenant's viewer or admin): filters the history and its export by
    tenant A's hook name (``hookName``), the new Audit filter, to read A's rows."""
    gateway, keys = served["gateway"], served["keys"]
    mine = gateway.rest("GET", "/api/v1/executions?hookName=a-guard", keys["a_viewer"])
    assert mine.status_code == 200 and len(mine.json()["executions"]) == 3  # the filter works
    theirs = gateway.rest("GET", "/api/v1/executions?hookName=a-guard", keys[role])
    assert theirs.status_code == 200 and theirs.json()["executions"] == []
    export = gateway.rest("GET", "/api/v1/executions/export?format=json&hookName=a-guard",
                          keys[role])
    assert export.status_code == 200 and "a-guard" not in export.text


SECRET = "Bearer panel-attack-5e4d3c2b1a"


def test_another_tenant_cannot_read_a_hooks_definition_history(served: dict[str, Any]) -> None:
    """tenant (another tenant's viewer or admin): reads the definition history (who changed
    what) of tenant A's hook by its id, live and after it was deleted."""
    gateway, keys = served["gateway"], served["keys"]
    created = gateway.rest("POST", "/api/v1/hooks", json={
        "event": "pre_tool_use", "handler_type": "callable", "scope": "tenant",
        "tenant_id": "tenant-a", "name": "a-doomed", "matcher": "^never$",
        "config": {"callable": "tests.server.hookfns:allow"},
    })
    assert created.status_code == 201, created.text
    hook_id = created.json()["hookId"]
    path = f"/api/v1/hooks/{hook_id}/revisions"
    assert gateway.rest("GET", path, keys["a_viewer"]).json()["revisions"]  # A reads its own
    for deleted in (False, True):
        if deleted:
            assert gateway.rest("DELETE", f"/api/v1/hooks/{hook_id}").status_code == 200
            assert len(gateway.rest("GET", path, keys["a_viewer"]).json()["revisions"]) == 2
        for role in ("b_viewer", "b_admin"):
            answer = gateway.rest("GET", path, keys[role])
            assert answer.status_code == 200 and answer.json()["revisions"] == [], answer.text
            with open_ws(gateway.ws_url, keys[role]) as ws:
                reply = request(ws, "hooks.revisions", {"hookId": hook_id})
                assert reply["ok"] is True and reply["payload"]["revisions"] == []


def test_a_viewer_cannot_read_a_secret_header_out_of_the_definition_history(
    served: dict[str, Any],
) -> None:
    """viewer (tenant A's own): reads the history of an http hook whose secret
    ``Authorization`` header was set and then changed, hoping an old version keeps it."""
    gateway, keys = served["gateway"], served["keys"]
    created = gateway.rest("POST", "/api/v1/hooks", json={
        "event": "pre_tool_use", "handler_type": "http", "scope": "tenant",
        "tenant_id": "tenant-a", "name": "a-webhook", "matcher": "^nothing$",
        "config": {"url": "https://policy.example/check", "headers": {"Authorization": SECRET}},
    })
    assert created.status_code == 201, created.text
    hook_id = created.json()["hookId"]
    patched = gateway.rest("PATCH", f"/api/v1/hooks/{hook_id}", json={
        "config": {"url": "https://policy.example/check",
                   "headers": {"Authorization": SECRET + "-2"}},
    })
    assert patched.status_code == 200, patched.text
    answer = gateway.rest("GET", f"/api/v1/hooks/{hook_id}/revisions", keys["a_viewer"])
    assert answer.status_code == 200 and len(answer.json()["revisions"]) == 2, answer.text
    assert "panel-attack-5e4d3c2b1a" not in answer.text
    assert "enc:" not in answer.text  # no ciphertext either
    for revision in answer.json()["revisions"]:
        assert revision["definition"]["config"]["headers"]["Authorization"] is None
