"""Three real replicas on one PostgreSQL database: what one replica changes, every replica
serves at once (a hook change, a key revocation, an approval decision), also after the LISTEN
connection was cut, and with it down.

Delays measured here are printed (``-s``) and bounded generously for a loaded machine; the
bounds still sit below what the fallbacks would take (1 s hook polling, the 2 s key cache).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from tests.support.replicas import Replica, ReplicaSet, fresh_database
from tests.support.waiting import wait_until

from hookgate.client import GatewayClient
from hookgate.store.listen import LISTEN_APPLICATION

pytestmark = [pytest.mark.postgres, pytest.mark.timeout(300)]

ARGS = ("--allow-callable", "tests.server.hookfns")
EXEC = {"event": "pre_tool_use", "input": {"tool_name": "exec", "tool_input": {"cmd": "ls"}}}


@pytest.fixture
def replicas(tmp_path: Path) -> Iterator[ReplicaSet]:
    with fresh_database() as url, ReplicaSet(tmp_path, url, count=3, args=ARGS) as started:
        started.start_all()
        yield started


def _decision(replica: Replica, key: str) -> str:
    answer = replica.rest("POST", "/api/v1/dispatch", key, json=EXEC)
    assert answer.status_code == 200, answer.text
    return str(answer.json()["decision"])


def _seen_everywhere(
    replicas: list[Replica], seen: Any, change: Any = None, seconds: float = 10
) -> dict[str, float]:
    """Seconds from ``change()`` (when given; else from now) until ``seen(client, replica)``
    held on each replica. Each replica is asked in a thread of its own over a connection
    opened (and used once) before the change, so the delay is the propagation plus one
    answer, not the making of clients."""
    began: list[float] = []
    delays: dict[str, float] = {}
    ready = threading.Barrier(len(replicas) + 1)

    def watch(replica: Replica) -> None:
        with httpx.Client(base_url=replica.url, timeout=10) as client:
            client.get("/healthz")
            ready.wait()
            deadline = began[0] + seconds
            while time.monotonic() < deadline:
                if seen(client, replica):
                    delays[replica.name] = time.monotonic() - began[0]
                    return

    threads = [threading.Thread(target=watch, args=(r,), daemon=True) for r in replicas]
    for thread in threads:
        thread.start()
    if change is not None:
        change()
    began.append(time.monotonic())
    ready.wait()
    for thread in threads:
        thread.join(seconds + 5)
    assert len(delays) == len(replicas), f"not seen within {seconds} s: {delays}"
    return delays


def _blocks(key: str) -> Any:
    def seen(client: httpx.Client, _replica: Replica) -> bool:
        answer = client.post("/api/v1/dispatch", json=EXEC, headers=_bearer(key))
        return bool(answer.json()["decision"] == "block")

    return seen


def _allows(key: str) -> Any:
    def seen(client: httpx.Client, _replica: Replica) -> bool:
        answer = client.post("/api/v1/dispatch", json=EXEC, headers=_bearer(key))
        return bool(answer.json()["decision"] == "allow")

    return seen


def _refused(key: str) -> Any:
    def seen(client: httpx.Client, _replica: Replica) -> bool:
        return client.get("/api/v1/info", headers=_bearer(key)).status_code == 401

    return seen


def _bearer(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


def _round_trip(replica: Replica, key: str) -> float:
    """The median time of one dispatch answer (what each measured delay includes)."""
    with httpx.Client(base_url=replica.url, timeout=10) as client:
        times = []
        for _ in range(5):
            began = time.monotonic()
            client.post("/api/v1/dispatch", json=EXEC, headers=_bearer(key))
            times.append(time.monotonic() - began)
    return sorted(times)[2]


def _cut_listen(replicas: ReplicaSet) -> int:
    """``pg_terminate_backend`` every replica's LISTEN connection; how many there were."""
    return replicas.terminate_backends(LISTEN_APPLICATION)


def _events(replica: Replica, key: str) -> int:
    return len(replica.events(key))


def test_a_hook_change_and_a_revocation_reach_every_replica(replicas: ReplicaSet) -> None:
    a, b, c = replicas
    master = replicas.master_key
    for replica in replicas:
        assert _decision(replica, master) == "allow"

    created = a.rest("POST", "/api/v1/hooks", master, json={
        "event": "pre_tool_use", "handler_type": "callable", "scope": "global",
        "name": "no exec", "matcher": "^rm$",
        "config": {"callable": "tests.server.hookfns:block"},
    })
    assert created.status_code == 201, created.text
    hook_id = created.json()["hookId"]

    def patch(replica: Replica, changes: dict[str, Any]) -> Any:
        def change() -> None:
            answer = replica.rest("PATCH", f"/api/v1/hooks/{hook_id}", master, json=changes)
            assert answer.status_code == 200, answer.text

        return change

    # An update names its hook: other replicas read that hook again, nothing else.
    hook_delays = _seen_everywhere([b, c], _blocks(master), patch(a, {"matcher": "^exec$"}))
    print(f"\none dispatch takes {_round_trip(b, master):.3f} s; "
          f"hook change seen after {hook_delays} s")
    assert max(hook_delays.values()) < 0.9, hook_delays  # below the 1 s poll: the NOTIFY

    made = a.rest("POST", "/api/v1/keys", master,
                  json={"role": "operator", "name": "doomed", "tenantId": "acme"})
    assert made.status_code == 201, made.text
    doomed, doomed_id = made.json()["secret"], made.json()["key"]["id"]
    for replica in replicas:  # every replica has the key's check cached now
        assert replica.rest("GET", "/api/v1/info", doomed).status_code == 200

    def revoke() -> None:
        revoked = a.rest("POST", f"/api/v1/keys/{doomed_id}/revoke", master)
        assert revoked.status_code == 200, revoked.text

    revoke_delays = _seen_everywhere([b, c], _refused(doomed), revoke)
    print(f"revocation seen after {revoke_delays} s")
    assert max(revoke_delays.values()) < 0.5, revoke_delays  # the key cache holds 2 s

    _seen_everywhere([b, c], _allows(master), patch(a, {"matcher": "^rm$"}))

    # LISTEN cut on every replica: each reconnects, resyncs, and hears changes again.
    assert _cut_listen(replicas) == 3
    wait_until(
        lambda: all(_events(r, "hookgate.store.listen_restored") == 1 for r in replicas),
        "every replica listens again", seconds=30,
    )
    assert all(_events(r, "hookgate.store.listen_lost") == 1 for r in replicas)
    toggled = c.rest("POST", f"/api/v1/hooks/{hook_id}/toggle", master, json={"enabled": False})
    assert toggled.status_code == 200, toggled.text
    again = _seen_everywhere(
        [b, c], _blocks(master), patch(a, {"matcher": "^exec$", "enabled": True})
    )
    print(f"hook change after the reconnection seen after {again} s")
    assert max(again.values()) < 0.9, again


def test_a_decision_reaches_an_agent_on_another_replica_with_listen_down(
    replicas: ReplicaSet,
) -> None:
    """The agent waits on A; LISTEN is cut on every replica and cannot come back (the
    database refuses new connections); a person approves on B. The waiter's check of the
    row answers the agent within a second. Then LISTEN comes back on its own."""
    a, b, _c = replicas
    master = replicas.master_key
    created = a.rest("POST", "/api/v1/hooks", master, json={
        "event": "pre_tool_use", "handler_type": "callable", "scope": "global",
        "name": "ask first", "config": {"callable": "tests.server.hookfns:ask"},
        "approval": {"timeout_ms": 600_000},
    })
    assert created.status_code == 201, created.text
    # A person decides with a key of their own: the key that asked may not.
    person = a.rest("POST", "/api/v1/keys", master, json={"role": "approver", "name": "person"})
    assert person.status_code == 201, person.text
    approver = person.json()["secret"]

    outcome: dict[str, Any] = {}
    answered_at: list[float] = []

    def agent() -> None:
        with GatewayClient(a.url, master, timeout=120) as client:
            outcome.update(client.dispatch("pre_tool_use", EXEC["input"]))  # type: ignore[arg-type]
            answered_at.append(time.monotonic())

    thread = threading.Thread(target=agent, daemon=True)
    thread.start()
    wait_until(lambda: _pending_count(b, master) == 1, "the approval is pending", seconds=30)
    [approval] = b.rest("GET", "/api/v1/approvals", master).json()["approvals"]

    replicas.allow_connections(False)
    try:
        assert _cut_listen(replicas) == 3
        wait_until(lambda: all(_events(r, "hookgate.store.listen_lost") for r in replicas),
                   "every replica lost LISTEN", seconds=30)
        decided_at = time.monotonic()
        approved = b.rest("POST", f"/api/v1/approvals/{approval['id']}/approve", approver,
                          json={"comment": "while LISTEN is down"})
        assert approved.status_code == 200, approved.text
        thread.join(timeout=30)
        assert outcome.get("decision") == "allow", outcome
        delay = answered_at[0] - decided_at
        print(f"\ndecision reached the agent after {delay:.3f} s with LISTEN down")
        assert delay < 1.5, delay
        assert not any(_events(r, "hookgate.store.listen_restored") for r in replicas)
    finally:
        replicas.allow_connections(True)
    wait_until(
        lambda: all(_events(r, "hookgate.store.listen_restored") for r in replicas),
        "LISTEN back on every replica", seconds=30,
    )


def _pending_count(replica: Replica, key: str) -> int:
    try:
        answer = replica.rest("GET", "/api/v1/approvals", key)
    except httpx.HTTPError:
        return -1
    return len(answer.json()["approvals"])
