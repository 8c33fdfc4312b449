"""Attacks on hook state (per-session and per-run key-value state with a TTL), run against a
real ``hookgate serve`` process on loopback.

Stateful hooks here are http hooks: each request carries the state the hook may read
(``state``), and the hook's answer may write it. The webhook receiver is a real HTTP server.
Every attack here held before issue 24; the tests guard it.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from tests.server.gateway_process import GatewayProcess
from tests.support.waiting import wait_until
from tests.support.webhook_server import Reply, WebhookServer

pytestmark = pytest.mark.timeout(180)


@dataclass
class Served:
    gateway: GatewayProcess
    web: WebhookServer
    a_admin: str
    a_operator: str
    b_admin: str


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    with WebhookServer(Reply(200, {"decision": "allow"})) as web:
        gateway = GatewayProcess(
            tmp_path_factory.mktemp("attack-state") / "data",
            env={"HOOKGATE_SSRF_ALLOWLIST": "127.0.0.1/32"},
        ).start()
        try:
            yield Served(
                gateway=gateway,
                web=web,
                a_admin=gateway.create_key("tenant-a", "admin"),
                a_operator=gateway.create_key("tenant-a", "operator"),
                b_admin=gateway.create_key("tenant-b", "admin"),
            )
        finally:
            gateway.stop()


def stateful_hook(
    gateway: GatewayProcess, key: str, web: WebhookServer, tool: str, **state: Any
) -> str:
    answer = gateway.rest("POST", "/api/v1/hooks", key, json={
        "event": "pre_tool_use", "handler_type": "http", "scope": "tenant",
        "name": f"memo {tool}", "matcher": f"^{tool}$",
        "config": {"url": web.url(f"/{tool}"), "state": {"namespace": "memo", **state}},
    })
    assert answer.status_code == 201, answer.text
    return str(answer.json()["hookId"])


def dispatch(gateway: GatewayProcess, key: str, tool: str, session: str, **extra: Any) -> Any:
    answer = gateway.rest("POST", "/api/v1/dispatch", key, json={
        "event": "pre_tool_use",
        "input": {"tool_name": tool, "session_id": session, "tool_input": {}, **extra},
    })
    assert answer.status_code == 200, answer.text
    return answer.json()


def seen_state(web: WebhookServer, tool: str) -> dict[str, Any]:
    """The state the hook was shown on its latest call."""
    request = [r for r in web.requests if r.path == f"/{tool}"][-1]
    return dict(request.json["state"])


def test_another_tenant_cannot_read_or_write_state_of_the_same_session(served: Served) -> None:
    """tenant (tenant-b's admin): makes a hook with tenant-a's namespace and dispatches with
    tenant-a's session id (and ``tenant_id: tenant-a`` in the event) to read tenant-a's
    state and to overwrite it."""
    gateway, web = served.gateway, served.web
    stateful_hook(gateway, served.a_admin, web, "s1")
    stateful_hook(gateway, served.b_admin, web, "s1")
    web.script(Reply(200, {"state": {"session": {"plan": "tenant-a secret"}}}))
    dispatch(gateway, served.a_operator, "s1", "shared-session")
    for extra in ({}, {"tenant_id": "tenant-a"}):
        web.script(Reply(200, {"state": {"session": {"plan": "forged by b"}}}))
        dispatch(gateway, served.b_admin, "s1", "shared-session", **extra)
        assert "tenant-a secret" not in str(seen_state(web, "s1"))
    dispatch(gateway, served.a_operator, "s1", "shared-session")
    assert seen_state(web, "s1") == {"session": {"plan": "tenant-a secret"}}


def test_another_session_cannot_read_a_sessions_state(served: Served) -> None:
    """tool (an agent in another session of the same tenant): reads the state another
    session's hooks kept."""
    gateway, web = served.gateway, served.web
    stateful_hook(gateway, served.a_admin, web, "s2")
    web.script(Reply(200, {"state": {"session": {"token_seen": True}}}))
    dispatch(gateway, served.a_operator, "s2", "session-one")
    dispatch(gateway, served.a_operator, "s2", "session-two")
    assert seen_state(web, "s2") == {"session": {}}
    dispatch(gateway, served.a_operator, "s2", "session-one")
    assert seen_state(web, "s2") == {"session": {"token_seen": True}}


def test_an_oversized_state_value_is_refused(served: Served) -> None:
    """tool (a hook's answer shaped by tool output): writes a 20 KB state value (over the
    16 KB limit) to fill the store; the write is refused and fails the hook closed."""
    gateway, web = served.gateway, served.web
    stateful_hook(gateway, served.a_admin, web, "s3")
    web.script(Reply(200, {"state": {"session": {"blob": "x" * 20_000}}}))
    refused = dispatch(gateway, served.a_operator, "s3", "big")
    assert refused["decision"] == "block", refused
    dispatch(gateway, served.a_operator, "s3", "big")
    assert seen_state(web, "s3") == {"session": {}}


def test_state_keys_per_scope_are_bounded(served: Served) -> None:
    """tool: floods a session's state with 300 keys in one answer (over 256 per scope)."""
    gateway, web = served.gateway, served.web
    stateful_hook(gateway, served.a_admin, web, "s4")
    flood = {f"k{i}": i for i in range(300)}
    web.script(Reply(200, {"state": {"session": flood}}))
    assert dispatch(gateway, served.a_operator, "s4", "flood")["decision"] == "block"
    dispatch(gateway, served.a_operator, "s4", "flood")
    assert len(seen_state(web, "s4")["session"]) <= 256


def test_state_does_not_outlive_its_ttl(served: Served) -> None:
    """tool: a value written with the hook's 1 s TTL is still read after the TTL (a taint
    flag or an approval remembered forever)."""
    gateway, web = served.gateway, served.web
    stateful_hook(gateway, served.a_admin, web, "s5", ttl_s=1)
    web.script(Reply(200, {"state": {"session": {"approved_once": True}}}))
    dispatch(gateway, served.a_operator, "s5", "ttl")
    written = time.monotonic()

    def gone() -> bool:
        dispatch(gateway, served.a_operator, "s5", "ttl")
        return seen_state(web, "s5") == {"session": {}}

    wait_until(gone, "the state expired", seconds=30, poll_s=0.2)
    assert time.monotonic() - written >= 1.0


def test_a_ttl_beyond_the_limit_is_refused(served: Served) -> None:
    """tenant (admin): defines a stateful hook whose state lives for a year (past the 30-day
    bound)."""
    gateway, web = served.gateway, served.web
    answer = gateway.rest("POST", "/api/v1/hooks", served.a_admin, json={
        "event": "pre_tool_use", "handler_type": "http", "scope": "tenant",
        "name": "forever", "config": {"url": web.url("/s6"),
                                      "state": {"namespace": "memo", "ttl_s": 365 * 86400}},
    })
    assert answer.status_code == 400 and "ttl_s" in answer.text
