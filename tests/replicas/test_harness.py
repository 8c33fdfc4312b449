"""The multi-replica harness itself (tests/support/replicas.py): what other tests rely on."""

from __future__ import annotations

import signal
from pathlib import Path

import pytest
from tests.support.replicas import RedisServer, ReplicaSet, fresh_database

pytestmark = [pytest.mark.postgres, pytest.mark.timeout(180)]


def test_replicas_start_die_and_come_back_on_their_port(tmp_path: Path) -> None:
    with fresh_database() as url, ReplicaSet(tmp_path, url, count=2) as replicas:
        first, second = replicas.start_all()
        assert first.port != second.port
        assert any(e["key"] == "hookgate.gateway.started" for e in first.events())
        master = first.master_key or second.master_key
        assert master is not None
        assert first.rest("GET", "/api/v1/info", master).status_code == 200

        port = second.port
        assert second.kill() == -signal.SIGKILL
        assert not second.alive
        second.restart()
        assert second.port == port and second.launches == 2
        assert second.rest("GET", "/api/v1/info", master).status_code == 200

        first.terminate()
        assert any(e["key"] == "hookgate.gateway.stopped" for e in first.events())
        assert replicas.backends("hookgate"), "the live replica holds connections"


@pytest.mark.redis
def test_a_private_redis_server_stops_and_starts_on_its_port(tmp_path: Path) -> None:
    with RedisServer(tmp_path / "redis") as redis:
        assert redis.answers()
        port = redis.port
        redis.stop()
        assert not redis.answers()
        redis.start()
        assert redis.port == port and redis.answers()
