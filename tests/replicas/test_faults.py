"""Three real replicas on one PostgreSQL and one Redis, under load, through faults: SIGTERM of a
replica (every dispatch it ran is answered; new ones are refused with a retryable error), SIGKILL
of a replica (clients of the others go on), and a Redis restart (hooks fail closed while it is
down, never trip a breaker, and work again as soon as it is back)."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
from tests.server.wsutil import open_ws
from tests.support.llm_server import ScriptedLLM, decide
from tests.support.replicas import RedisServer, Replica, ReplicaSet, fresh_database
from tests.support.waiting import wait_until
from websockets.exceptions import ConnectionClosed

pytestmark = [pytest.mark.postgres, pytest.mark.redis, pytest.mark.timeout(300)]

ARGS = ("--allow-callable", "tests.server.hookfns")
SLOW = {"event": "pre_tool_use", "handler_type": "callable", "scope": "tenant", "name": "slow",
        "matcher": "^work$", "config": {"callable": "tests.server.hookfns:slow"}}
HELD = {"event": "pre_tool_use", "handler_type": "callable", "scope": "tenant", "name": "held",
        "matcher": "^held$", "config": {"callable": "tests.server.hookfns:held"},
        "timeout_ms": 10_000}


@dataclass
class Load:
    """Clients that dispatch in a loop, each over its own WebSocket to one replica; every
    request carries its own ``session_id`` so its execution row can be found."""

    key: str
    stop: threading.Event = field(default_factory=threading.Event)
    answered: dict[str, list[str]] = field(default_factory=dict)
    refused: dict[str, list[str]] = field(default_factory=dict)
    #: Requests sent whose connection closed before their answer came.
    unanswered: dict[str, list[str]] = field(default_factory=dict)
    threads: list[threading.Thread] = field(default_factory=list)

    def start(self, replica: Replica, clients: int) -> None:
        for n in range(clients):
            name = f"{replica.name}-{n}"
            for book in (self.answered, self.refused, self.unanswered):
                book[name] = []
            thread = threading.Thread(target=self._run, args=(replica, name), daemon=True)
            self.threads.append(thread)
            thread.start()

    def _run(self, replica: Replica, name: str) -> None:
        try:
            ws = open_ws(replica.ws_url, self.key)
        except Exception:
            return
        with ws:
            count = 0
            while not self.stop.is_set():
                session = f"{name}-{count}"
                count += 1
                frame = {"type": "req", "id": session, "method": "hooks.dispatch", "params": {
                    "event": "pre_tool_use",
                    "input": {"tool_name": "work", "session_id": session},
                }}
                try:
                    ws.send(json.dumps(frame))
                    answer = json.loads(ws.recv(timeout=60))
                except (ConnectionClosed, OSError, TimeoutError):
                    self.unanswered[name].append(session)
                    return
                if answer.get("ok"):
                    self.answered[name].append(session)
                else:
                    assert answer["error"]["code"] == "UNAVAILABLE", answer
                    assert answer["error"]["retryable"] is True, answer
                    self.refused[name].append(session)
                    return  # a real client now goes to another replica

    def count(self, book: dict[str, list[str]], replica: Replica) -> int:
        return sum(len(v) for k, v in book.items() if k.startswith(replica.name + "-"))

    def finish(self) -> None:
        self.stop.set()
        for thread in self.threads:
            thread.join(timeout=60)


def _ran(replicas: ReplicaSet, sessions: list[str]) -> list[str]:
    """Those of ``sessions`` that have an execution row (their hook ran)."""
    if not sessions:
        return []
    rows = replicas.sql("SELECT DISTINCT session_id FROM hook_executions "
                        "WHERE session_id = ANY($1::text[])", sessions)
    return [row["session_id"] for row in rows]


@pytest.fixture
def replicas(tmp_path: Path) -> Iterator[ReplicaSet]:
    with (
        fresh_database() as url,
        RedisServer(tmp_path / "redis") as redis,
        ReplicaSet(tmp_path / "replicas", url, count=3, args=(*ARGS, "--audit-mode", "sync"),
                   redis_url=redis.url) as started,
    ):
        started.start_all()
        key = started.master_key  # callable hooks run host code: master scope
        for hook in (SLOW, HELD):
            made = started[0].rest("POST", "/api/v1/hooks", key, json=hook)
            assert made.status_code == 201, made.text
        yield started


def test_sigterm_under_load_answers_everything_it_ran(replicas: ReplicaSet,
                                                      tmp_path: Path) -> None:
    key = replicas.master_key
    a, b, c = replicas
    load = Load(key)
    for replica in replicas:
        load.start(replica, clients=3)
    wait_until(lambda: all(load.count(load.answered, r) >= 9 for r in replicas),
               "every replica serving its clients", seconds=60)
    # One dispatch held on b keeps its drain going, so the refusal below is certain.
    gate, started = tmp_path / "gate", tmp_path / "started"
    held: list[httpx.Response] = []
    holder = threading.Thread(target=lambda: held.append(b.rest(
        "POST", "/api/v1/dispatch", key, json={"event": "pre_tool_use", "input": {
            "tool_name": "held", "tool_input": {"gate": str(gate), "started": str(started)}}},
        timeout=60)))
    holder.start()
    wait_until(started.exists, "the held dispatch running on b")
    assert b.proc is not None
    b.proc.send_signal(15)
    wait_until(lambda: b.events("hookgate.gateway.draining"), "b draining")
    assert httpx.get(b.url + "/readyz").status_code == 503
    refused = b.rest("POST", "/api/v1/dispatch", key, json={
        "event": "pre_tool_use", "input": {"tool_name": "work", "session_id": "late"}})
    assert refused.status_code == 503 and refused.json()["error"]["retryable"] is True
    retried = a.rest("POST", "/api/v1/dispatch", key, json={
        "event": "pre_tool_use", "input": {"tool_name": "work", "session_id": "late"}})
    assert retried.status_code == 200  # what a client does with the refusal
    gate.touch()
    holder.join(timeout=60)
    assert held and held[0].status_code == 200 and held[0].json()["decision"] == "allow"
    assert b.proc.wait(timeout=60) is not None
    assert b.events("hookgate.gateway.stopped"), "b did not finish its shutdown"
    before = {r.name: load.count(load.answered, r) for r in (a, c)}
    wait_until(lambda: all(load.count(load.answered, r) > before[r.name] + 5 for r in (a, c)),
               "a and c still serving")
    load.finish()
    # Nothing b ran lost its answer: a request left without one never ran.
    unanswered = [s for book in load.unanswered.values() for s in book]
    assert _ran(replicas, unanswered) == []
    for replica in (a, c):
        assert load.count(load.unanswered, replica) == 0
        assert load.count(load.refused, replica) == 0


def test_sigkill_under_load_leaves_the_others_serving(replicas: ReplicaSet) -> None:
    key = replicas.master_key
    a, b, c = replicas
    load = Load(key)
    for replica in replicas:
        load.start(replica, clients=2)
    wait_until(lambda: all(load.count(load.answered, r) >= 6 for r in replicas),
               "every replica serving its clients", seconds=60)
    b.kill()
    before = {r.name: load.count(load.answered, r) for r in (a, c)}
    wait_until(lambda: all(load.count(load.answered, r) > before[r.name] + 10 for r in (a, c)),
               "a and c serving on after b was killed")
    load.finish()
    for replica in (a, c):
        assert load.count(load.unanswered, replica) == 0
        assert load.count(load.refused, replica) == 0
    # b comes back on its port and serves again.
    b.start()
    answer = b.rest("POST", "/api/v1/dispatch", key, json={
        "event": "pre_tool_use", "input": {"tool_name": "work"}})
    assert answer.status_code == 200 and answer.json()["decision"] == "allow"


def _prompt_decision(replica: Replica, key: str, n: int) -> dict[str, Any]:
    answer = replica.rest("POST", "/api/v1/dispatch", key, json={
        "event": "pre_tool_use", "input": {"tool_name": "judge", "tool_input": {"n": n},
                                           "session_id": f"s{n}", "turn_id": f"t{n}"}})
    assert answer.status_code == 200, answer.text
    return dict(answer.json())


def test_a_redis_restart_fails_closed_and_recovers_at_once(tmp_path: Path) -> None:
    with (
        ScriptedLLM(default=decide("allow", "fine")) as llm,
        fresh_database() as url,
        RedisServer(tmp_path / "redis") as redis,
        ReplicaSet(tmp_path / "replicas", url, count=3, redis_url=redis.url, args=(
            "--llm-provider",
            f"name=work,format=openai,base_url={llm.openai_url},api_key_env=WORK_KEY",
        ), env={"HOOKGATE_SSRF_ALLOWLIST": "127.0.0.0/8", "WORK_KEY": "k"}) as replicas,
    ):
        replicas.start_all()
        key = replicas.create_key("tenant-a", "admin")
        hook = {"event": "pre_tool_use", "handler_type": "prompt", "scope": "tenant",
                "name": "judge", "matcher": "^judge$", "on_error": "allow",
                "config": {"prompt_template": "Allow everything.", "provider": "work",
                           "model": "gpt-4o-mini"}}
        made = replicas[0].rest("POST", "/api/v1/hooks", key, json=hook)
        assert made.status_code == 201, made.text
        hook_id = made.json()["hookId"]
        n = iter(range(10_000))
        wait_until(lambda: all(_prompt_decision(r, key, next(n))["decision"] == "allow"
                               for r in replicas),
                   "the prompt hook served everywhere")
        redis.stop()
        for replica in replicas:
            wait_until(lambda r=replica: httpx.get(r.url + "/readyz").status_code == 503,
                       f"{replica.name} not ready without Redis")
            for _ in range(7):  # more than the breaker's threshold, on every replica
                down = _prompt_decision(replica, key, next(n))
                # Fails closed although the hook says on_error=allow: the guard could not run.
                assert down["decision"] == "block", down
        redis.start()
        for replica in replicas:
            wait_until(lambda r=replica: httpx.get(r.url + "/readyz").status_code == 200,
                       f"{replica.name} ready again")
            # At once: no breaker opened on the outage, so no cool-down to wait for.
            assert _prompt_decision(replica, key, next(n))["decision"] == "allow"
            state = replica.rest("GET", f"/api/v1/hooks/{hook_id}", key).json()["hook"]
            assert state["breaker"]["state"] == "closed"
