"""Attacks on the gateway API (hooks, history, keys, secrets), run against a real
``hookgate serve`` process on loopback with ordinary tenant keys.

The gateway runs without ``--tenant-host-code``: host code is the operator's (master scope).
Webhook receivers are real HTTP servers on loopback; 127.0.0.2 plays the attacker's host.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from tests.server.gateway_process import GatewayProcess
from tests.server.panel_support import TEST_SECRET_KEY
from tests.server.test_replicas_redis import database  # noqa: F401 - fixture
from tests.support.waiting import wait_until
from tests.support.webhook_server import Reply, WebhookServer

pytestmark = pytest.mark.timeout(180)

MASTER_SECRET = "Bearer master-set-9f8e7d6c5b4a"


@dataclass
class Served:
    gateway: GatewayProcess
    master: str
    a_viewer: str
    a_operator: str
    a_admin: str
    b_admin: str


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    gateway = GatewayProcess(
        tmp_path_factory.mktemp("attack-api") / "data",
        args=("--allow-callable", "tests.server.hookfns"),
        env={"HOOKGATE_SSRF_ALLOWLIST": "127.0.0.0/8"},
    ).start()
    try:
        assert gateway.master_key is not None
        yield Served(
            gateway=gateway,
            master=gateway.master_key,
            a_viewer=gateway.create_key("tenant-a", "viewer"),
            a_operator=gateway.create_key("tenant-a", "operator"),
            a_admin=gateway.create_key("tenant-a", "admin"),
            b_admin=gateway.create_key("tenant-b", "admin"),
        )
    finally:
        gateway.stop()


def create(gateway: GatewayProcess, key: str | None, hook: dict[str, Any]) -> str:
    answer = gateway.rest("POST", "/api/v1/hooks", key, json=hook)
    assert answer.status_code == 201, answer.text
    return str(answer.json()["hookId"])


def dispatch(gateway: GatewayProcess, key: str, tool: str, **payload: Any) -> dict[str, Any]:
    answer = gateway.rest(
        "POST",
        "/api/v1/dispatch",
        key,
        json={"event": "pre_tool_use", "input": {"tool_name": tool, **payload}},
    )
    assert answer.status_code == 200, answer.text
    return dict(answer.json())


def webhook(url: str, tool: str, tenant: str = "tenant-a") -> dict[str, Any]:
    """A tenant-a http hook the master makes, carrying the master's secret."""
    return {
        "event": "pre_tool_use",
        "handler_type": "http",
        "scope": "tenant",
        "tenant_id": tenant,
        "name": f"policy service {tool}",
        "matcher": f"^{tool}$",
        "config": {"url": url, "headers": {"Authorization": MASTER_SECRET}},
    }


def got_the_secret(server: WebhookServer) -> bool:
    return any(MASTER_SECRET in str(request.headers) for request in server.requests)


# -- item 15: a tenant admin re-points a master-made http hook ------------------------------------


def test_repointing_a_master_hook_to_a_path_of_a_shared_host_sends_no_secret(
    served: Served,
) -> None:
    """tenant (admin): the master made an http hook with a secret ``Authorization``; the
    tenant admin changes its URL to a path of their own on the same (shared) host, sending
    the header back as ``null`` ("keep"), and reads the secret at that path."""
    gateway = served.gateway
    with WebhookServer(Reply(200, {"decision": "allow"})) as shared_host:
        hook_id = create(gateway, served.master, webhook(shared_host.url("/tenants/ops"), "p1"))
        changed = gateway.rest(
            "PATCH",
            f"/api/v1/hooks/{hook_id}",
            served.a_admin,
            json={"config": {"url": shared_host.url("/attacker/inbox"),
                             "headers": {"Authorization": None}}},
        )
        assert changed.status_code == 200, changed.text
        dispatch(gateway, served.a_operator, "p1")
        inbox = [r for r in shared_host.requests if r.path == "/attacker/inbox"]
        assert inbox, "the hook now posts to the tenant admin's path"
        assert all(MASTER_SECRET not in str(r.headers) for r in inbox)
        assert changed.json()["droppedSecretHeaders"] == ["Authorization"]


def test_repointing_a_master_hook_to_another_host_sends_no_secret(served: Served) -> None:
    """tenant (admin): re-points the master-made http hook to a host of their own, keeping
    the sealed ``Authorization`` (``null``), then with ``headers`` left out. (Held before:
    refused; now applied with the secret dropped.)"""
    gateway = served.gateway
    with (
        WebhookServer(Reply(200, {"decision": "allow"})) as home,
        WebhookServer(Reply(200, {"decision": "allow"}), host="127.0.0.2") as attacker,
    ):
        hook_id = create(gateway, served.master, webhook(home.url("/hook"), "p2"))
        for config in (
            {"url": attacker.url("/steal"), "headers": {"Authorization": None}},
            {"url": attacker.url("/steal")},
        ):
            gateway.rest(
                "PATCH", f"/api/v1/hooks/{hook_id}", served.a_admin,
                json={"config": config},
            )
            dispatch(gateway, served.a_operator, "p2")
        assert not got_the_secret(attacker)


def test_repointing_through_a_hooks_file_import_sends_no_secret(served: Served) -> None:
    """tenant (admin): exports the tenant's hooks, edits the master-made hook's URL to a path
    of their own in the file (the secret reads as ``null``) and imports it back."""
    gateway = served.gateway
    with WebhookServer(Reply(200, {"decision": "allow"})) as shared_host:
        create(gateway, served.master, webhook(shared_host.url("/tenants/ops"), "p3"))
        exported = gateway.rest("GET", "/api/v1/hooks/export?format=json", served.a_admin)
        assert exported.status_code == 200, exported.text
        content = exported.json()["content"]
        assert MASTER_SECRET not in content and "master-set" not in content
        edited = content.replace("/tenants/ops", "/attacker/inbox")
        gateway.rest(
            "POST", "/api/v1/hooks/import", served.a_admin,
            json={"content": edited},
        )
        dispatch(gateway, served.a_operator, "p3")
        stolen = [r for r in shared_host.requests if r.path == "/attacker/inbox"]
        assert all(MASTER_SECRET not in str(r.headers) for r in stolen)


def test_a_master_repointing_a_hook_also_drops_the_secret(served: Served) -> None:
    """tenant (a master key's holder, tricked or careless): changes the URL of an http hook
    keeping the secret; whatever the updater's role the secret stays with its URL."""
    gateway = served.gateway
    with WebhookServer(Reply(200, {"decision": "allow"})) as shared_host:
        hook_id = create(gateway, served.master, webhook(shared_host.url("/tenants/ops"), "p4"))
        changed = gateway.rest(
            "PATCH", f"/api/v1/hooks/{hook_id}", served.master,
            json={"config": {"url": shared_host.url("/elsewhere"),
                             "headers": {"Authorization": None}}},
        )
        assert changed.status_code == 200, changed.text
        assert changed.json()["droppedSecretHeaders"] == ["Authorization"]
        dispatch(gateway, served.a_operator, "p4")
        assert shared_host.requests and shared_host.requests[-1].path == "/elsewhere"
        assert not got_the_secret(shared_host)


# -- tenants, roles and reads (held before the issue: regression guards) --------------------------


def test_a_tenant_key_cannot_reach_another_tenants_hooks(served: Served) -> None:
    """tenant (tenant-b's admin): reads, changes, toggles, deletes or dry-runs a hook of
    tenant-a by its id."""
    gateway = served.gateway
    hook_id = create(gateway, served.a_admin, {
        "event": "pre_tool_use", "handler_type": "http", "scope": "tenant",
        "name": "a private", "matcher": "^a_only$",
        "config": {"url": "http://127.0.0.1:9/never"},
    })
    b = served.b_admin
    assert gateway.rest("GET", f"/api/v1/hooks/{hook_id}", b).status_code == 404
    assert gateway.rest("PATCH", f"/api/v1/hooks/{hook_id}", b,
                        json={"enabled": False}).status_code == 404
    assert gateway.rest("POST", f"/api/v1/hooks/{hook_id}/toggle", b,
                        json={"enabled": False}).status_code == 404
    assert gateway.rest("DELETE", f"/api/v1/hooks/{hook_id}", b).status_code == 404
    tested = gateway.rest("POST", "/api/v1/hooks/test", b,
                          json={"hookId": hook_id, "sampleEvent": {"tool_name": "a_only"}})
    assert tested.status_code == 404
    listed = gateway.rest("GET", "/api/v1/hooks", b).json()
    assert hook_id not in str(listed)
    assert gateway.rest("GET", f"/api/v1/hooks/{hook_id}", served.a_viewer).status_code == 200


def test_a_tenant_key_cannot_read_another_tenants_audit(served: Served) -> None:
    """tenant (tenant-b's admin): reads tenant-a's dispatch history by session, by hook id,
    or by naming tenant-a, and exports it."""
    gateway = served.gateway
    session = f"a-secret-session-{time.monotonic_ns()}"
    hook_id = create(gateway, served.master, {
        "event": "pre_tool_use", "handler_type": "callable", "scope": "tenant",
        "tenant_id": "tenant-a",
        "name": "a audited", "matcher": "^audited$",
        "config": {"callable": "tests.server.hookfns:allow"},
    })
    dispatch(gateway, served.a_operator, "audited", session_id=session)
    wait_until(lambda: gateway.rest("GET", f"/api/v1/executions?sessionId={session}",
                                    served.a_viewer).json()["executions"],
               "tenant a's audit row")
    b = served.b_admin
    assert gateway.rest("GET", f"/api/v1/executions?sessionId={session}", b).json()[
        "executions"] == []
    by_hook = gateway.rest("GET", f"/api/v1/executions?hookId={hook_id}", b)
    assert by_hook.status_code == 404 or by_hook.json()["executions"] == []
    assert gateway.rest("GET", "/api/v1/executions?tenantId=tenant-a", b).status_code == 403
    exported = gateway.rest("GET", "/api/v1/executions/export?format=json", b)
    assert session not in exported.text


def test_a_tenant_admin_cannot_reach_another_tenants_keys(served: Served) -> None:
    """tenant (tenant-b's admin): lists or revokes tenant-a's keys, or creates a key in
    tenant-a or with master scope."""
    gateway = served.gateway
    a_keys = gateway.rest("GET", "/api/v1/keys", served.a_admin).json()["keys"]
    a_key_id = a_keys[0]["id"]
    b = served.b_admin
    listed = gateway.rest("GET", "/api/v1/keys", b).json()["keys"]
    assert {key["tenant_id"] for key in listed} == {"tenant-b"}
    assert gateway.rest("GET", "/api/v1/keys?tenantId=tenant-a", b).status_code == 403
    assert gateway.rest("POST", f"/api/v1/keys/{a_key_id}/revoke", b).status_code == 404
    for params in ({"role": "admin", "tenantId": "tenant-a"}, {"role": "admin", "master": True}):
        assert gateway.rest("POST", "/api/v1/keys", b, json=params).status_code == 403
    assert gateway.rest("GET", "/api/v1/keys", served.a_admin).json()["keys"] == a_keys


def test_a_viewer_cannot_write(served: Served) -> None:
    """viewer: creates, changes, toggles or deletes a hook, creates a key, or dispatches."""
    gateway = served.gateway
    hook_id = create(gateway, served.master, {
        "event": "pre_tool_use", "handler_type": "callable", "scope": "tenant",
        "tenant_id": "tenant-a",
        "name": "viewer target", "matcher": "^vt$",
        "config": {"callable": "tests.server.hookfns:block"},
    })
    v = served.a_viewer
    attempts = [
        ("POST", "/api/v1/hooks", {"event": "pre_tool_use", "handler_type": "callable",
                                   "config": {"callable": "tests.server.hookfns:allow"}}),
        ("PATCH", f"/api/v1/hooks/{hook_id}", {"enabled": False}),
        ("POST", f"/api/v1/hooks/{hook_id}/toggle", {"enabled": False}),
        ("DELETE", f"/api/v1/hooks/{hook_id}", None),
        ("POST", "/api/v1/keys", {"role": "viewer"}),
        ("POST", "/api/v1/dispatch", {"event": "pre_tool_use", "input": {"tool_name": "vt"}}),
    ]
    for method, path, body in attempts:
        answer = gateway.rest(method, path, v, json=body)
        assert answer.status_code == 403, (method, path, answer.text)
    assert dispatch(gateway, served.a_operator, "vt")["decision"] == "block"


def test_a_tenant_admin_cannot_create_host_code_without_opt_in(served: Served) -> None:
    """tenant (admin), gateway without ``--tenant-host-code``: defines a command, process or
    callable hook (code on the gateway host), or turns an http hook into one."""
    gateway = served.gateway
    for handler_type, config in (
        ("command", {"command": "id > /tmp/owned"}),
        ("process", {"command": ["python3", "-c", "print(1)"]}),
        ("callable", {"callable": "tests.server.hookfns:allow"}),
    ):
        answer = gateway.rest("POST", "/api/v1/hooks", served.a_admin, json={
            "event": "pre_tool_use", "handler_type": handler_type, "scope": "tenant",
            "config": config,
        })
        assert answer.status_code == 403, (handler_type, answer.text)
    hook_id = create(gateway, served.a_admin, {
        "event": "pre_tool_use", "handler_type": "http", "scope": "tenant",
        "name": "to be turned", "config": {"url": "http://127.0.0.1:9/x"},
    })
    turned = gateway.rest("PATCH", f"/api/v1/hooks/{hook_id}", served.a_admin, json={
        "handler_type": "command", "config": {"command": "id"}})
    assert turned.status_code == 403, turned.text


def test_secret_headers_are_never_read_back(served: Served) -> None:
    """tenant (viewer and admin): reads a hook's secret header through hooks.get, hooks.list,
    the export and the history rows of a failing call."""
    gateway = served.gateway
    with WebhookServer(Reply(500, {"error": f"echo {MASTER_SECRET}"})) as failing:
        hook_id = create(gateway, served.master, webhook(failing.url("/x"), "rb"))
        session = f"readback-{time.monotonic_ns()}"
        dispatch(gateway, served.a_operator, "rb", session_id=session)
        reads = [
            gateway.rest("GET", f"/api/v1/hooks/{hook_id}", served.a_viewer).text,
            gateway.rest("GET", "/api/v1/hooks", served.a_admin).text,
            gateway.rest("GET", "/api/v1/hooks/export?format=yaml", served.a_admin).text,
        ]
        deadline = time.monotonic() + 10
        while True:
            history = gateway.rest("GET", f"/api/v1/executions?sessionId={session}",
                                   served.a_admin)
            if history.json()["executions"] or time.monotonic() > deadline:
                break
            time.sleep(0.05)
        reads.append(history.text)
        assert history.json()["executions"], "the failing call has a history row"
    for text in reads:
        assert "master-set-9f8e7d6c5b4a" not in text
    assert "enc:" not in reads[0]  # no ciphertext either: null


def test_a_config_problem_never_quotes_a_secret(served: Served) -> None:
    """tenant (admin): sends a hook whose config breaks its model with a secret inside (a
    header value with a line break, a key of the wrong type beside it) and reads the answer:
    every problem names the field, none quotes the value (create, dry run, import)."""
    gateway = served.gateway
    secret = "Bearer sk-live-0b1c2d3e4f"
    hook = {**webhook("http://127.0.0.1:9/x", "quoted"),
            "config": {"url": "http://127.0.0.1:9/x",
                       "headers": {"Authorization": secret + "\r\nX-Injected: 1"},
                       "secret_headers": secret}}
    answers = [
        gateway.rest("POST", "/api/v1/hooks", served.a_admin, json=hook),
        gateway.rest("POST", "/api/v1/hooks/test", served.a_admin,
                     json={"config": hook, "sampleEvent": {"toolName": "quoted"}}),
        gateway.rest("POST", "/api/v1/hooks/import", served.a_admin,
                     json={"content": json.dumps({"hooks": [hook]})}),
    ]
    for answer in answers:
        assert "headers.Authorization" in answer.text, answer.text
        assert "sk-live" not in answer.text and "X-Injected" not in answer.text
    assert answers[0].status_code == 400


def test_a_tenant_key_cannot_dispatch_into_another_tenant(served: Served) -> None:
    """tenant (tenant-b's admin): dispatches with ``tenant_id: tenant-a`` in the event to
    run tenant-a's hooks (and their state and approvals) as tenant-a."""
    gateway = served.gateway
    create(gateway, served.master, {
        "event": "pre_tool_use", "handler_type": "callable", "scope": "tenant",
        "tenant_id": "tenant-a",
        "name": "a blocks spoof", "matcher": "^spoof$",
        "config": {"callable": "tests.server.hookfns:block"},
    })
    assert dispatch(gateway, served.a_operator, "spoof")["decision"] == "block"
    spoofed = dispatch(gateway, served.b_admin, "spoof", tenant_id="tenant-a")
    assert spoofed["decision"] == "allow" and not spoofed.get("trace")


def test_repointing_and_cross_tenant_reads_on_postgresql(
    tmp_path: Path,
    database: str,  # noqa: F811 - the fixture
) -> None:
    """tenant (admin), gateway on PostgreSQL: re-points the master-made http hook to a path
    of its own keeping the secret, and reads another tenant's hook by id."""
    gateway = GatewayProcess(
        tmp_path / "data",
        env={"HOOKGATE_SSRF_ALLOWLIST": "127.0.0.0/8", "HOOKGATE_SECRET_KEY": TEST_SECRET_KEY},
        database_url=database,
    ).start()
    try:
        assert gateway.master_key is not None
        a_admin = gateway.create_key("tenant-a", "admin")
        a_operator = gateway.create_key("tenant-a", "operator")
        b_admin = gateway.create_key("tenant-b", "admin")
        with WebhookServer(Reply(200, {"decision": "allow"})) as shared_host:
            hook_id = create(gateway, gateway.master_key,
                             webhook(shared_host.url("/tenants/ops"), "pg"))
            assert gateway.rest("GET", f"/api/v1/hooks/{hook_id}", b_admin).status_code == 404
            changed = gateway.rest(
                "PATCH", f"/api/v1/hooks/{hook_id}", a_admin,
                json={"config": {"url": shared_host.url("/attacker/inbox"),
                                 "headers": {"Authorization": None}}},
            )
            assert changed.status_code == 200, changed.text
            dispatch(gateway, a_operator, "pg")
            inbox = [r for r in shared_host.requests if r.path == "/attacker/inbox"]
            assert inbox and all(MASTER_SECRET not in str(r.headers) for r in inbox)
    finally:
        gateway.stop()
