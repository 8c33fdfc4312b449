"""Attacks on rule hooks (declarative session rules), against real ``hookgate serve``
processes: the standard edition on its SQLite store, and one on a private Redis that is then
stopped.

Attackers: a tenant admin (writes rules), whoever controls a tool's input and the agent's
own ids (session and agent ids are the caller's to choose; only the tenant comes from the
API key).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from tests.server.gateway_process import GatewayProcess
from tests.support.replicas import RedisServer

pytestmark = pytest.mark.timeout(180)


@dataclass
class Served:
    gateway: GatewayProcess
    a_admin: str
    a_operator: str
    b_admin: str
    b_operator: str


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    # The standard edition, without --tenant-host-code: no host code for anyone but master.
    gateway = GatewayProcess(tmp_path_factory.mktemp("attack-rules") / "data",
                             args=("--edition", "standard")).start()
    try:
        yield Served(gateway, gateway.create_key("tenant-a", "admin"),
                     gateway.create_key("tenant-a", "operator"),
                     gateway.create_key("tenant-b", "admin"),
                     gateway.create_key("tenant-b", "operator"))
    finally:
        gateway.stop()


def rule(name: str, matcher: str, **config: Any) -> dict[str, Any]:
    return {"event": "pre_tool_use", "handler_type": "rule", "scope": "tenant", "name": name,
            "matcher": matcher, "config": config}


def create(gateway: GatewayProcess, key: str, hook: dict[str, Any]) -> Any:
    return gateway.rest("POST", "/api/v1/hooks", key, json=hook)


def dispatch(gateway: GatewayProcess, key: str, tool: str, **fields: Any) -> dict[str, Any]:
    response = gateway.rest("POST", "/api/v1/dispatch", key, json={
        "event": "pre_tool_use", "input": {"tool_name": tool, **fields}})
    assert response.status_code == 200, response.text
    return response.json()  # type: ignore[no-any-return]


def test_a_tenant_admin_may_write_a_rule_but_it_carries_no_code(served: Served) -> None:
    g = served.gateway
    made = create(g, served.a_admin, rule("a-limit", "^a_tool$",
                                          limit={"count": 1, "window_s": 600}))
    assert made.status_code in (200, 201), made.text
    # Nothing in a rule's config names code: keys of other handlers are refused, not ignored.
    for smuggled in ({"callable": "os:system"}, {"command": "touch /tmp/x"},
                     {"url": "http://127.0.0.1:1/"}, {"state": True}):
        refused = create(g, served.a_admin, rule("smuggle", "^x$", **smuggled,
                                                 limit={"count": 1, "window_s": 60}))
        assert refused.status_code == 400, refused.text
        assert next(iter(smuggled)) in refused.text


def test_another_tenant_cannot_read_or_spend_a_tenants_counters(served: Served) -> None:
    g = served.gateway
    same = rule("shared-name", "^pay$", limit={"count": 2, "per": "session", "window_s": 600})
    for admin in (served.a_admin, served.b_admin):  # the same rule, word for word
        assert create(g, admin, same).status_code in (200, 201)
    assert dispatch(g, served.a_operator, "pay", session_id="s")["decision"] == "allow"
    # Tenant B, same session id, naming tenant A in the event: the key's tenant wins, and B's
    # calls are counted against B's own counter.
    for _ in range(2):
        spoofed = dispatch(g, served.b_operator, "pay", session_id="s", tenant_id="tenant-a")
        assert spoofed["decision"] == "allow"
    assert dispatch(g, served.b_operator, "pay", session_id="s")["decision"] == "block"
    assert dispatch(g, served.a_operator, "pay", session_id="s")["decision"] == "allow"
    # B's blocks say nothing of A's count; A's third call is A's own.
    third = dispatch(g, served.a_operator, "pay", session_id="s")
    assert third["decision"] == "block" and "2 of 2" in third["reason"]


def test_a_tool_input_cannot_reset_or_poison_a_counter(served: Served) -> None:
    g = served.gateway
    assert create(g, served.a_admin, rule("input-proof", "^wire$", limit={
        "count": 1, "per": "session", "window_s": 600})).status_code in (200, 201)
    assert dispatch(g, served.a_operator, "wire", session_id="p")["decision"] == "allow"
    poison = {"session_id": "other", "tenant_id": "tenant-b", "count": 0, "limit": 99,
              "rule_state": "DELETE", "window": -1}
    blocked = dispatch(g, served.a_operator, "wire", session_id="p", tool_input=poison)
    assert blocked["decision"] == "block" and "1 of 1" in blocked["reason"]
    # Session ids are hashed as a JSON list, so ids with separators or quotes stay apart.
    for session in ('p", "x', "p|session|1", "p\u0000", "p" * 2000):
        assert dispatch(g, served.a_operator, "wire", session_id=session)["decision"] == "allow"


def test_new_session_or_agent_ids_do_not_escape_a_per_tenant_limit(served: Served) -> None:
    g = served.gateway
    assert create(g, served.a_admin, rule("tenant-cap", "^mint$", limit={
        "count": 2, "per": "tenant", "window_s": 600})).status_code in (200, 201)
    answers = [dispatch(g, served.a_operator, "mint", session_id=f"s{n}", agent_id=f"a{n}")
               for n in range(4)]
    assert [a["decision"] for a in answers] == ["allow", "allow", "block", "block"]
    # Leaving the session id out of a per-session rule blocks rather than skipping the rule.
    assert create(g, served.a_admin, rule("needs-session", "^nosession$", limit={
        "count": 5, "window_s": 600})).status_code in (200, 201)
    missing = dispatch(g, served.a_operator, "nosession")
    assert missing["decision"] == "block" and "no session id" in missing["reason"]


def test_a_huge_or_unsafe_tool_pattern_is_refused(served: Served) -> None:
    g = served.gateway
    for pattern, says in (("a" * 5000, "longer than"), ("(a)\\1", "does not compile"),
                          ("(unclosed", "does not compile"), ("*", "must name tools")):
        refused = create(g, served.a_admin, rule("bad-pattern", "^x$", after={"tool": pattern}))
        assert refused.status_code == 400, refused.text
        assert says in refused.text
    # A pattern that backtracks exponentially elsewhere is linear in RE2: answered at once.
    assert create(g, served.a_admin, rule("nested", "^probe$", after={
        "tool": "^(a+)+$"})).status_code in (200, 201)
    assert dispatch(g, served.a_operator, "a" * 200 + "!", session_id="re")["decision"] == "allow"
    assert dispatch(g, served.a_operator, "probe", session_id="re")["decision"] == "allow"


def test_a_state_store_failure_blocks_the_call(tmp_path: Path) -> None:
    redis = RedisServer(tmp_path / "redis").start()
    gateway = GatewayProcess(tmp_path / "data", args=("--redis-url", redis.url)).start()
    try:
        admin = gateway.create_key("tenant-a", "admin")
        operator = gateway.create_key("tenant-a", "operator")
        for hook in (rule("cap", "^deploy$", limit={"count": 100, "window_s": 600}),
                     rule("taint", "^WebFetch$", after={"tool": "^Read$"})):
            assert create(gateway, admin, hook).status_code in (200, 201)
        assert dispatch(gateway, operator, "deploy", session_id="s")["decision"] == "allow"
        redis.stop()
        down = dispatch(gateway, operator, "deploy", session_id="s")
        assert down["decision"] == "block" and "rule state unavailable" in down["reason"]
        # A call whose history cannot be written is blocked too: a later after-check would
        # miss it.
        unrecorded = dispatch(gateway, operator, "Read", session_id="s")
        assert unrecorded["decision"] == "block"
        assert "session history" in unrecorded["reason"]
    finally:
        gateway.stop()
        redis.stop()
