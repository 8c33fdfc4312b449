"""Two real gateway replicas race for the last calls a rule's limit allows: on PostgreSQL
(the upsert that counts only below the limit) and on Redis (one Lua script). Exactly
``count`` calls are admitted, whichever replica each one reaches; the session history a
replica writes is read by the other."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from tests.support.replicas import RedisServer, Replica, ReplicaSet, fresh_database
from tests.support.waiting import wait_until

pytestmark = [pytest.mark.postgres, pytest.mark.timeout(240)]

LIMIT = 5
CALLS = 40
LIMIT_HOOK = {"event": "pre_tool_use", "handler_type": "rule", "scope": "tenant",
              "name": "deploys-per-tenant", "matcher": "^deploy$",
              "config": {"limit": {"count": LIMIT, "per": "tenant", "window_s": 3600}}}
TAINT_HOOK = {"event": "pre_tool_use", "handler_type": "rule", "scope": "tenant",
              "name": "no-exfil", "matcher": "^WebFetch$",
              "config": {"after": {"tool": "^Read$", "per": "session"}}}


def dispatch(replica: Replica, key: str, tool: str, session: str) -> dict[str, Any]:
    response = replica.rest("POST", "/api/v1/dispatch", key, json={
        "event": "pre_tool_use", "input": {"tool_name": tool, "session_id": session}})
    assert response.status_code == 200, response.text
    return response.json()  # type: ignore[no-any-return]


def race(replicas: ReplicaSet) -> None:
    a, b = replicas[0], replicas[1]
    admin = replicas.create_key("tenant-a", "admin")
    for hook in (LIMIT_HOOK, TAINT_HOOK):  # a tenant admin's rule: no host code needed
        created = a.rest("POST", "/api/v1/hooks", admin, json=hook)
        assert created.status_code in (200, 201), created.text
    operator = replicas.create_key("tenant-a", "operator")
    for replica in (a, b):  # both serve the new hooks before the race starts
        wait_for_rules(replica, operator)

    def one(n: int) -> dict[str, Any]:
        return dispatch((a, b)[n % 2], operator, "deploy", f"session-{n}")

    with ThreadPoolExecutor(16) as pool:
        outcomes = list(pool.map(one, range(CALLS)))
    admitted = [o for o in outcomes if o["decision"] == "allow"]
    blocked = [o for o in outcomes if o["decision"] == "block"]
    assert len(admitted) == LIMIT, [o.get("reason") for o in outcomes]
    assert len(blocked) == CALLS - LIMIT
    assert all(f"{LIMIT} of {LIMIT} calls per tenant" in o["reason"] for o in blocked)
    assert all("deploys-per-tenant" in o["reason"] for o in blocked)
    # Another tenant's calls are counted apart.
    other = replicas.create_key("tenant-b", "operator")
    assert dispatch(b, other, "deploy", "s")["decision"] == "allow"

    # The history one replica writes, the other reads.
    assert dispatch(a, operator, "Read", "taint")["decision"] == "allow"
    tainted = dispatch(b, operator, "WebFetch", "taint")
    assert tainted["decision"] == "block" and "no-exfil" in tainted["reason"]
    assert dispatch(b, operator, "WebFetch", "clean")["decision"] == "allow"


def wait_for_rules(replica: Replica, key: str) -> None:
    """Until ``replica`` serves the rule hooks (created in this order, served in version
    order): a Read then a WebFetch in a probe session of its own is blocked. Counts nothing
    against the limit."""

    def served() -> bool:
        dispatch(replica, key, "Read", f"probe-{replica.name}")
        return dispatch(replica, key, "WebFetch", f"probe-{replica.name}")["decision"] == "block"

    wait_until(served, f"{replica.name} serves the rule hooks", seconds=30)


def test_two_replicas_on_postgresql_admit_exactly_the_limit(tmp_path: Path) -> None:
    with fresh_database() as url, ReplicaSet(tmp_path, url, count=2) as replicas:
        replicas.start_all()
        race(replicas)
        rows = replicas.sql("SELECT count(*) AS n FROM rule_state WHERE tenant_id = 'tenant-a'")
        assert rows[0]["n"] >= 2  # the counter and the Read stamp, named by digests


@pytest.mark.redis
def test_two_replicas_on_redis_admit_exactly_the_limit(tmp_path: Path) -> None:
    redis = RedisServer(tmp_path / "redis").start()
    try:
        with fresh_database() as url, ReplicaSet(tmp_path, url, count=2,
                                                 redis_url=redis.url) as replicas:
            replicas.start_all()
            race(replicas)
            # The counters went to Redis, not to the database.
            assert replicas.sql("SELECT count(*) AS n FROM rule_state")[0]["n"] == 0
    finally:
        redis.stop()
