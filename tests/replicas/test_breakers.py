"""Three real replicas on one PostgreSQL (and one Redis) share each hook's circuit breaker: a
failing webhook trips after five faults in total, not five per replica, and re-enabling the
hook on one replica closes the breaker on every replica."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.support.replicas import RedisServer, Replica, ReplicaSet, fresh_database
from tests.support.waiting import wait_until
from tests.support.webhook_server import Reply, WebhookServer

pytestmark = [pytest.mark.postgres, pytest.mark.redis, pytest.mark.timeout(300)]

TOOL = {"event": "pre_tool_use", "input": {"tool_name": "exec", "tool_input": {"cmd": "ls"}}}


@pytest.fixture(params=["redis", "postgres"])
def replicas(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[ReplicaSet]:
    """Three replicas sharing breakers in Redis, or (no Redis) in PostgreSQL."""
    with fresh_database() as url:
        redis = RedisServer(tmp_path / "redis").start() if request.param == "redis" else None
        try:
            with ReplicaSet(
                tmp_path / "replicas", url, count=3,
                redis_url=redis.url if redis else None,
                env={"HOOKGATE_SSRF_ALLOWLIST": "127.0.0.0/8"},
            ) as replicas:
                yield replicas.start_all()
        finally:
            if redis is not None:
                redis.stop()


def _breaker(replica: Replica, master: str, hook_id: str) -> float | None:
    """This replica's own breaker state for the hook (``hookgate_breaker_state``: 0 closed,
    1 half-open, 2 open), not the state saved in the database."""
    metrics = replica.rest("GET", "/metrics", master)
    assert metrics.status_code == 200, metrics.text
    prefix = f'hookgate_breaker_state{{hook_id="{hook_id}"}} '
    for line in metrics.text.splitlines():
        if line.startswith(prefix):
            return float(line[len(prefix):])
    return None


def _calls(webhook: WebhookServer) -> int:
    """Hook calls the webhook got (an http hook retries a 500 once: count events)."""
    return len({seen.json["event_id"] for seen in webhook.requests})


def _dispatch(replica: Replica, key: str) -> dict[str, Any]:
    answer = replica.rest("POST", "/api/v1/dispatch", key, json=TOOL)
    assert answer.status_code == 200, answer.text
    return dict(answer.json())


def test_five_faults_in_total_trip_the_breaker_on_every_replica(replicas: ReplicaSet) -> None:
    key = replicas.create_key("tenant-a", "admin")
    master = replicas.master_key
    a, b, c = replicas
    with WebhookServer(default=Reply(200, {"decision": "allow"})) as webhook:
        hook = {"event": "pre_tool_use", "handler_type": "http", "scope": "tenant",
                "name": "flaky", "matcher": "^exec$", "config": {"url": webhook.url()}}
        created = a.rest("POST", "/api/v1/hooks", key, json=hook)
        assert created.status_code == 201, created.text
        hook_id = created.json()["hookId"]

        def runs_everywhere() -> bool:
            return all(
                any(entry.get("hook_id") == hook_id for entry in _dispatch(r, key)["trace"])
                for r in replicas
            )

        wait_until(runs_everywhere, "every replica runs the new hook")
        webhook.default = Reply(500, {"error": "down"})
        before = _calls(webhook)
        # Five faults in total, spread over the replicas: two, two and one.
        for replica in (a, b, c, a, b):
            assert _dispatch(replica, key)["decision"] == "block"
        assert _calls(webhook) == before + 5
        wait_until(lambda: all(_breaker(r, master, hook_id) == 2 for r in replicas),
                   "the breaker open on every replica", seconds=15)
        for replica in (a, b, c, a, b, c):
            outcome = _dispatch(replica, key)
            assert outcome["decision"] == "block" and "circuit breaker" in outcome["reason"]
        assert _calls(webhook) == before + 5  # not called again, wherever it landed

        # Re-enabled on c: closed on a and b too, and the hook is called again.
        webhook.default = Reply(200, {"decision": "allow"})
        for enabled in (False, True):
            toggled = c.rest("POST", f"/api/v1/hooks/{hook_id}/toggle", key,
                             json={"enabled": enabled})
            assert toggled.status_code == 200, toggled.text
        wait_until(lambda: all(_breaker(r, master, hook_id) == 0 for r in replicas),
                   "the breaker closed on every replica", seconds=15)
        assert _dispatch(a, key)["decision"] == "allow"
        assert _dispatch(b, key)["decision"] == "allow"
        assert _calls(webhook) == before + 7
