"""What replicas on one database share and hold: the same HOOKGATE_SECRET_KEY (one started
with another key, or none, is refused at start with a message that says so) and a bounded
number of connections each (``--db-pool-size``)."""

from __future__ import annotations

import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from tests.server.gateway_process import HOOKGATE, REPO, free_port, gateway_env
from tests.support.replicas import ReplicaSet, fresh_database

from hookgate.secrets.keyring import generate_key_text

pytestmark = [pytest.mark.postgres, pytest.mark.timeout(180)]

POOL = 2


def test_a_replica_with_another_secret_key_is_refused(tmp_path: Path) -> None:
    with fresh_database() as url, ReplicaSet(
        tmp_path, url, count=1, args=("--db-pool-size", str(POOL))
    ) as replicas:
        [replica] = replicas.start_all()
        other_key = {"HOOKGATE_SECRET_KEY": generate_key_text("k1")}
        for env, says in (
            (other_key, "every replica on a store needs the same HOOKGATE_SECRET_KEY"),
            ({}, "this process has none"),
        ):
            refused = subprocess.run(
                [*HOOKGATE, "serve", "--port", str(free_port()), "--database-url", url],
                capture_output=True, text=True, timeout=120, cwd=REPO, env=gateway_env(**env),
            )
            assert refused.returncode != 0
            assert says in " ".join(refused.stderr.split()), refused.stderr
            assert "listening on" not in refused.stdout

        # Under concurrent reads the replica holds at most pool + 2 (audit) + 1 (LISTEN).
        master = replicas.master_key
        with ThreadPoolExecutor(16) as pool:
            answers = list(pool.map(
                lambda _: replica.rest("GET", "/api/v1/hooks", master).status_code, range(64)
            ))
        assert answers == [200] * 64
        held = replicas.backends()
        assert 1 <= len(held) <= POOL + 3, held  # 12 at the default pool of 10
