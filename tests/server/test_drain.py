"""Probes and the SIGTERM drain of one real ``hookgate serve`` process.

``/healthz`` is liveness (the process answers, draining included); ``/readyz`` is readiness
(database, migrations, Redis, not draining). SIGTERM drains before any socket closes: readiness
503, new work refused with a retryable error, every request in flight answered (WebSocket and
REST), agents waiting for a person answered ``pending`` with the approval id.
"""

from __future__ import annotations

import json
import signal
import threading
from pathlib import Path
from typing import Any

import httpx
import pytest
from tests.server.conftest import start_gateway
from tests.server.gateway_process import GatewayProcess
from tests.server.wsutil import ok, open_ws
from tests.support.replicas import RedisServer
from tests.support.waiting import wait_until
from websockets.exceptions import InvalidStatus

HELD = {
    "event": "pre_tool_use", "handler_type": "callable", "scope": "tenant", "name": "held",
    "matcher": "^held$", "config": {"callable": "tests.server.hookfns:held"},
    "timeout_ms": 10_000,
}
ASK = {
    "event": "pre_tool_use", "handler_type": "callable", "scope": "tenant", "name": "asks",
    "matcher": "^deploy$", "config": {"callable": "tests.server.hookfns:ask"},
}


def test_probes_on_a_healthy_gateway(tmp_path: Path) -> None:
    served = start_gateway(tmp_path)
    try:
        live = httpx.get(served.url + "/healthz")
        assert live.status_code == 200 and live.json()["status"] == "ok"
        ready = httpx.get(served.url + "/readyz")
        assert ready.status_code == 200, ready.text
        assert ready.json() == {"status": "ready", "checks": {
            "draining": "ok", "database": "ok", "migrations": "ok", "redis": "not configured",
        }}
    finally:
        served.stop()


@pytest.mark.redis
def test_readiness_follows_redis(tmp_path: Path) -> None:
    redis = RedisServer(tmp_path / "redis").start()
    served = GatewayProcess(tmp_path / "data", args=("--redis-url", redis.url)).start()
    try:
        assert httpx.get(served.url + "/readyz").status_code == 200
        redis.stop()
        down = httpx.get(served.url + "/readyz")
        assert down.status_code == 503
        body = down.json()
        assert body["status"] == "not ready" and body["checks"]["database"] == "ok"
        assert body["checks"]["redis"].startswith("unreachable (")
        assert str(redis.port) not in down.text  # names the failure, not the address
        assert httpx.get(served.url + "/healthz").status_code == 200  # alive all the same
        redis.start()
        wait_until(lambda: httpx.get(served.url + "/readyz").status_code == 200,
                   "ready again once Redis is back")
    finally:
        served.stop()
        redis.stop()


def _dispatch_ws(served: GatewayProcess, key: str, tool_input: dict[str, Any],
                 answers: list[Any]) -> None:
    with open_ws(served.ws_url, key) as ws:
        answers.append(ok(ws, "hooks.dispatch", {
            "event": "pre_tool_use", "input": {"tool_name": "held", "tool_input": tool_input},
        }))


def _dispatch_rest(served: GatewayProcess, key: str, payload: dict[str, Any],
                   answers: list[Any]) -> None:
    answers.append(served.rest("POST", "/api/v1/dispatch", key, json=payload))


def test_sigterm_drains_before_closing_any_socket(tmp_path: Path) -> None:
    served = start_gateway(tmp_path, "--drain-timeout", "60")
    gate = tmp_path / "gate"
    threads: list[threading.Thread] = []
    try:
        key = served.master_key  # callable hooks run host code: master scope
        assert key is not None
        for hook in (HELD, ASK):
            created = served.rest("POST", "/api/v1/hooks", key, json=hook)
            assert created.status_code == 201, created.text
        ws_answers: list[Any] = []
        rest_answers: list[httpx.Response] = []
        waiting: list[httpx.Response] = []
        started = []
        for n in range(3):
            mark = tmp_path / f"ws-{n}"
            started.append(mark)
            tool_input = {"gate": str(gate), "started": str(mark)}
            threads.append(threading.Thread(
                target=_dispatch_ws, args=(served, key, tool_input, ws_answers)))
        for n in range(2):
            mark = tmp_path / f"rest-{n}"
            started.append(mark)
            payload = {"event": "pre_tool_use", "input": {
                "tool_name": "held", "tool_input": {"gate": str(gate), "started": str(mark)}}}
            threads.append(threading.Thread(
                target=_dispatch_rest, args=(served, key, payload, rest_answers)))
        ask = {"event": "pre_tool_use", "input": {"tool_name": "deploy"}, "approvalWaitS": 60}
        threads.append(threading.Thread(target=_dispatch_rest, args=(served, key, ask, waiting)))
        ws_waiting: list[Any] = []

        def ask_over_ws() -> None:
            with open_ws(served.ws_url, key) as ws:
                ws_waiting.append(ok(ws, "hooks.dispatch", ask))

        threads.append(threading.Thread(target=ask_over_ws))
        for thread in threads:
            thread.start()
        wait_until(lambda: all(mark.exists() for mark in started), "every dispatch in flight")
        wait_until(lambda: _pending_approvals(served, key) == 2, "two agents wait for a person")

        assert served.proc is not None
        served.proc.send_signal(signal.SIGTERM)
        wait_until(lambda: '"key":"hookgate.gateway.draining"' in served.log(), "the drain")
        # Sockets are still open: the probes and the refusals answer.
        ready = httpx.get(served.url + "/readyz")
        assert ready.status_code == 503 and ready.json()["checks"]["draining"] != "ok"
        live = httpx.get(served.url + "/healthz")
        assert live.status_code == 200 and live.json()["status"] == "draining"
        refused = served.rest("POST", "/api/v1/dispatch", key, json={
            "event": "pre_tool_use", "input": {"tool_name": "ls"}})
        assert refused.status_code == 503, refused.text
        error = refused.json()["error"]
        assert error["code"] == "UNAVAILABLE" and error["retryable"] is True
        with pytest.raises(InvalidStatus) as denied:
            open_ws(served.ws_url, key).close()
        assert denied.value.response.status_code == 503
        # The agent waiting for a person gets "pending" with the approval id at once.
        wait_until(lambda: waiting and ws_waiting, "the approval waits answered")
        for approval in (waiting[0].json()["approval"], ws_waiting[0]["approval"]):
            assert approval["status"] == "pending" and approval["id"].startswith("apr_")
        # Requests in flight are still running, and are answered once their hooks finish.
        assert served.proc.poll() is None and not ws_answers and not rest_answers
        gate.touch()
        for thread in threads:
            thread.join(timeout=60)
        assert [a["decision"] for a in ws_answers] == ["allow"] * 3
        assert [(a.status_code, a.json()["decision"]) for a in rest_answers] == [
            (200, "allow")] * 2
        served.proc.wait(timeout=60)
        assert served.stopped_gracefully()
    finally:
        gate.touch()
        for thread in threads:
            thread.join(timeout=60)
        served.stop()
    log = served.log()
    key_drained = '"hookgate.gateway.drained"'
    drained = [json.loads(line) for line in log.splitlines() if key_drained in line]
    assert drained and drained[0]["complete"] is True


def _pending_approvals(served: GatewayProcess, key: str) -> int:
    listed = served.rest("GET", "/api/v1/approvals", key, params={"status": "pending"})
    return len(listed.json()["approvals"]) if listed.status_code == 200 else 0



def test_a_panel_watching_approvals_does_not_hold_the_drain(tmp_path: Path) -> None:
    """The panel long-polls ``approvals.watch`` (25 s at a time): SIGTERM answers the watch
    at once (nothing changed) instead of draining for the rest of its wait; a gateway with
    a panel open took up to 25 s to stop."""
    served = start_gateway(tmp_path, "--drain-timeout", "120")
    key = served.master_key
    assert key is not None
    in_flight = threading.Event()
    answers: list[Any] = []

    def watch() -> None:
        with open_ws(served.ws_url, key) as ws:
            revision = ok(ws, "approvals.watch", {})["revision"]
            ws.send(json.dumps({"type": "req", "id": "watch", "method": "approvals.watch",
                                "params": {"revision": revision, "timeoutS": 60}}))
            # Frames are taken in order: once a later one is answered the watch is counted in.
            ok(ws, "approvals.list", {})
            in_flight.set()
            answers.append(json.loads(ws.recv(timeout=90)))

    watcher = threading.Thread(target=watch)
    watcher.start()
    try:
        assert in_flight.wait(30)
        assert served.proc is not None
        served.proc.send_signal(signal.SIGTERM)
        watcher.join(timeout=30)  # well before the watch's own 60 s
        assert answers and answers[0]["id"] == "watch" and answers[0]["ok"] is True, answers
        assert answers[0]["payload"]["changed"] is False
        served.proc.wait(timeout=30)
        assert served.stopped_gracefully()
    finally:
        watcher.join(timeout=90)
        served.stop()
    drained = [json.loads(line) for line in served.log().splitlines()
               if '"hookgate.gateway.drained"' in line]
    assert drained and drained[0]["complete"] is True


def test_the_drain_is_bounded_by_its_timeout(tmp_path: Path) -> None:
    """A dispatch that never finishes does not hold a replica forever: after
    ``--drain-timeout`` the sockets close and the process exits."""
    served = start_gateway(tmp_path, "--drain-timeout", "1")
    gate = tmp_path / "gate"  # never opened
    key = served.master_key
    assert key is not None
    created = served.rest("POST", "/api/v1/hooks", key, json=HELD)
    assert created.status_code == 201, created.text
    started = tmp_path / "started"
    answers: list[Any] = []
    payload = {"event": "pre_tool_use", "input": {
        "tool_name": "held", "tool_input": {"gate": str(gate), "started": str(started)}}}

    def hold() -> None:
        try:
            answers.append(served.rest("POST", "/api/v1/dispatch", key, json=payload))
        except httpx.HTTPError as exc:
            answers.append(exc)

    holder = threading.Thread(target=hold)
    holder.start()
    try:
        wait_until(started.exists, "the dispatch in flight")
        assert served.proc is not None
        served.proc.send_signal(signal.SIGTERM)
        served.proc.wait(timeout=30)  # 1 s of drain, then the shutdown's own bounds
        drained = [json.loads(line) for line in served.log().splitlines()
                   if '"hookgate.gateway.drained"' in line]
        assert drained and drained[0]["complete"] is False
    finally:
        gate.touch()
        holder.join(timeout=60)
        served.stop()
