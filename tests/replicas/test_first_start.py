"""First start: replicas started at once on an empty database, and a first start that fails.

Migrations, builtin seeding and the first master key are each done under the store's start-up
lock (a PostgreSQL advisory lock; SQLite's write lock), and the key is made only once the
socket listens, so a start refused for a busy port loses no key.
"""

from __future__ import annotations

import json
import socket
import subprocess
from pathlib import Path

import pytest
from tests.server.gateway_process import HOOKGATE, REPO, free_port, gateway_env
from tests.support.replicas import ReplicaSet, fresh_database, run_sql

from hookgate.builtins import builtin_definitions

pytestmark = [pytest.mark.timeout(300)]

TRIALS = 3


@pytest.mark.postgres
def test_three_replicas_started_at_once_on_an_empty_database(tmp_path: Path) -> None:
    """Each trial: no replica crashes, one master key exists and exactly the replica that
    made it printed it, every builtin is seeded once."""
    builtins = len(builtin_definitions())
    for trial in range(TRIALS):
        with fresh_database() as url, ReplicaSet(tmp_path / str(trial), url, count=3) as replicas:
            replicas.start_all()
            printed = [r.master_key for r in replicas if r.master_key]
            keys = run_sql(url, "SELECT master, role FROM hookgate_api_keys")
            assert keys == [{"master": True, "role": "admin"}], f"trial {trial}"
            assert len(printed) == 1, f"trial {trial}: printed by {len(printed)} replicas"
            hooks = run_sql(url, "SELECT name FROM agent_hooks WHERE source = 'builtin'")
            assert len(hooks) == builtins, f"trial {trial}: {hooks}"
            versions = run_sql(url, "SELECT version FROM schema_migrations")
            assert len(versions) == len({row["version"] for row in versions})
            for replica in replicas:  # the key works on every replica
                assert replica.rest("GET", "/api/v1/info", printed[0]).status_code == 200


def _serve(port: int, store: list[str], timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """A ``hookgate serve`` that is expected to exit by itself (the port is taken)."""
    return subprocess.run(
        [*HOOKGATE, "serve", "--port", str(port), *store],
        capture_output=True, text=True, timeout=timeout, cwd=REPO, env=gateway_env(),
    )


def _keys(store: list[str]) -> list[dict[str, object]]:
    if store[0] == "--data-dir" and not Path(store[1]).exists():
        return []  # no store at all, so no key (store commands refuse a missing data dir)
    listed = subprocess.run(
        [*HOOKGATE, "keys", "list", "--json", *store],
        capture_output=True, text=True, timeout=60, cwd=REPO, env=gateway_env(), check=True,
    )
    return [json.loads(line) for line in listed.stdout.splitlines() if line.strip()]


def _first_start_after_a_busy_port(tmp_path: Path, store: list[str]) -> None:
    port = free_port()
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", port))
        taken.listen()
        failed = _serve(port, store)
    assert failed.returncode != 0
    assert "cannot listen on 127.0.0.1" in failed.stderr
    assert "hg-" not in failed.stdout + failed.stderr
    assert _keys(store) == [], "a failed start made a key nobody saw"

    # The next start makes the key and shows it.
    shown = [line.strip() for line in _banner(port, store) if line.startswith("  hg-")]
    assert len(shown) == 1
    keys = _keys(store)
    assert len(keys) == 1 and keys[0]["master"] is True


def _banner(port: int, store: list[str]) -> list[str]:
    """Start ``hookgate serve``, read its banner up to "listening on", stop it."""
    served = subprocess.Popen(
        [*HOOKGATE, "serve", "--port", str(port), *store],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, cwd=REPO,
        env=gateway_env(),
    )
    lines: list[str] = []
    try:
        assert served.stdout is not None
        for line in served.stdout:
            lines.append(line)
            if "listening on" in line:
                break
    finally:
        served.terminate()
        served.communicate(timeout=60)
    assert any("listening on" in line for line in lines), "".join(lines)
    return lines


def test_a_first_start_refused_for_a_busy_port_loses_no_key_sqlite(tmp_path: Path) -> None:
    """Then: revoked, the master key is gone, and the next start says how to make one."""
    store = ["--data-dir", str(tmp_path / "data")]
    _first_start_after_a_busy_port(tmp_path, store)
    [key] = _keys(store)
    subprocess.run(
        [*HOOKGATE, "keys", "revoke", str(key["id"]), *store],
        capture_output=True, text=True, timeout=60, cwd=REPO, env=gateway_env(), check=True,
    )
    banner = "".join(_banner(free_port(), store))
    assert "hg-" not in banner
    assert f"hookgate keys create --master --role admin --data-dir {tmp_path / 'data'}" in banner


@pytest.mark.postgres
def test_a_first_start_refused_for_a_busy_port_loses_no_key_postgres(tmp_path: Path) -> None:
    with fresh_database() as url:
        _first_start_after_a_busy_port(tmp_path, ["--database-url", url])

