"""Process-level behaviour of ``hookgate serve``: first start, edition gating, spans, logs and
graceful shutdown that loses no audit row."""

from __future__ import annotations

import asyncio
import json
import signal
from pathlib import Path

import httpx
from tests.server.conftest import start_gateway
from tests.server.gateway_process import GatewayProcess
from tests.server.wsutil import fails, ok, open_ws
from tests.support.waiting import wait_until

from hookgate.store import Caller, ExecutionQuery, open_store

COMMAND_HOOK = {
    "event": "pre_tool_use",
    "handler_type": "command",
    "scope": "tenant",
    "name": "shell guard",
    "config": {"command": "exit 0"},
}


def count_rows(data_dir: Path, **query: object) -> int:
    async def count() -> int:
        store = await open_store(data_dir=data_dir)
        try:
            total, cursor = 0, None
            while True:
                page = await store.query_executions(
                    Caller.master_scope(), ExecutionQuery(limit=500, cursor=cursor, **query)
                )
                total += len(page.items)
                cursor = page.next_cursor
                if not cursor:
                    return total
        finally:
            await store.close()

    return asyncio.run(count())


def test_first_start_prints_key_once(tmp_path: Path) -> None:
    """The first start prints a master admin key and the panel address; the next does not."""
    served = start_gateway(tmp_path)
    try:
        assert served.master_key is not None and served.master_key.startswith("hg-")
        banner = "\n".join(served.stdout_lines)
        assert "shown only this once" in banner
        assert f"Open the web panel at {served.url}/" in banner
        info = httpx.get(served.url + "/api/v1/info", headers=served.headers()).json()
        assert info["isMasterScope"] is True and info["role"] == "admin"
        assert httpx.get(served.url + "/").status_code == 200
        assert httpx.get(served.url + "/healthz").json()["status"] == "ok"
    finally:
        served.stop()
        assert served.stopped_gracefully()
    # The start line counts every loaded hook (the builtins are stored but disabled).
    started = [json.loads(line) for line in served.log().splitlines()
               if '"hookgate.gateway.started"' in line]
    assert started and started[0]["hooks"] >= 2 and started[0]["enabled"] == 0
    again = GatewayProcess(served.data_dir).start()
    try:
        assert again.master_key is None
        assert not any("hg-" in line for line in again.stdout_lines)
    finally:
        again.stop()


def test_edition_gating_at_definition_and_dispatch(tmp_path: Path) -> None:
    """standard refuses command hooks when defined, tested, and when a stored one runs."""
    lite = start_gateway(tmp_path)
    key = lite.master_key
    try:
        with open_ws(lite.ws_url, key) as ws:
            stored = ok(ws, "hooks.create", COMMAND_HOOK)["hookId"]
    finally:
        lite.stop()
    standard = GatewayProcess(lite.data_dir, args=("--edition", "standard")).start()
    try:
        with open_ws(standard.ws_url, key) as ws:
            info = ok(ws, "connect", {})
            assert info["edition"] == "standard" and "command" not in info["handlerTypes"]
            error = fails(ws, "hooks.create", COMMAND_HOOK | {"name": "new"}, "INVALID_REQUEST")
            assert error["details"]["problems"][0]["field"] == "handler_type"
            assert "standard edition" in error["message"]
            fails(ws, "hooks.test", {"config": COMMAND_HOOK, "sampleEvent": {}},
                  "INVALID_REQUEST")
            fails(ws, "hooks.update",
                  {"hookId": stored, "updates": {"priority": 2}}, "INVALID_REQUEST")
            outcome = ok(ws, "hooks.dispatch",
                         {"event": "pre_tool_use", "input": {"tool_name": "exec"}})
            assert outcome["decision"] == "block"
            assert "standard edition" in outcome["reason"]
        assert httpx.get(standard.url + "/healthz").json()["edition"] == "standard"
    finally:
        standard.stop()


def test_spans_and_structured_logs(tmp_path: Path) -> None:
    """Each execution is a span hook.<handler>.<event>, child of the dispatch's traceparent;
    a breaker trip is logged under security.hook.circuit_breaker as JSON."""
    spans_path = tmp_path / "spans.jsonl"
    served = start_gateway(tmp_path, "--trace-exporter", f"jsonl:{spans_path}")
    trace_id = "4bf92f3577b34da6a3ce929d0e0e4736"
    parent = "00f067aa0ba902b7"
    try:
        with open_ws(served.ws_url, served.master_key) as ws:
            ok(ws, "hooks.create", {
                "event": "pre_tool_use", "handler_type": "callable", "scope": "tenant",
                "name": "traced", "config": {"callable": "tests.server.hookfns:block"},
            })
            ok(ws, "hooks.create", {
                "event": "user_prompt_submit", "handler_type": "callable", "scope": "tenant",
                "name": "faulty", "config": {"callable": "tests.server.hookfns:fail"},
            })
            outcome = ok(ws, "hooks.dispatch", {
                "event": "pre_tool_use", "input": {"tool_name": "exec"},
                "traceparent": f"00-{trace_id}-{parent}-01",
            })
            assert outcome["decision"] == "block"
            over_rest = served.rest(
                "POST", "/api/v1/dispatch",
                json={"event": "pre_tool_use", "input": {"tool_name": "exec"}},
                headers={**served.headers(), "traceparent": f"00-{'1' * 32}-{'2' * 16}-01"},
            )
            assert over_rest.json()["decision"] == "block"
            for _ in range(5):
                ok(ws, "hooks.dispatch", {"event": "user_prompt_submit", "input": {"prompt": "x"}})
    finally:
        served.stop()
    assert served.stopped_gracefully()
    spans = [json.loads(line) for line in spans_path.read_text().splitlines()]
    traced = [s for s in spans if s["name"] == "hook.callable.pre_tool_use"]
    assert len(traced) == 2
    span, rest_span = sorted(traced, key=lambda s: s["context"]["trace_id"] != "0x" + trace_id)
    assert rest_span["context"]["trace_id"] == "0x" + "1" * 32
    assert rest_span["parent_id"] == "0x" + "2" * 16
    assert span["context"]["trace_id"] == "0x" + trace_id
    assert span["parent_id"] == "0x" + parent
    attributes = span["attributes"]
    assert attributes["metadata.decision"] == "block" and attributes["status"] == "ok"
    assert attributes["parent_span_id"] == parent and attributes["duration_ms"] >= 0
    failed = [s for s in spans if s["name"] == "hook.callable.user_prompt_submit"]
    assert len(failed) == 5 and all(s["status"]["status_code"] == "ERROR" for s in failed)
    assert all(s["parent_id"] is None for s in failed)
    lines = [json.loads(line) for line in served.log().splitlines() if line.startswith("{")]
    trips = [line for line in lines if line.get("key") == "security.hook.circuit_breaker"]
    assert trips and trips[0]["state"] == "open" and trips[0]["level"] == "warning"


def test_graceful_shutdown_loses_no_row(tmp_path: Path) -> None:
    """SIGTERM while non-blocking hooks are still queued: every accepted event is run and
    every execution row is committed before the process exits."""
    served = start_gateway(tmp_path)
    gate = tmp_path / "gate"
    sent = 200
    try:
        with open_ws(served.ws_url, served.master_key) as ws:
            ok(ws, "hooks.create", {
                "event": "post_tool_use", "handler_type": "callable", "scope": "tenant",
                "name": "held observer", "config": {"callable": "tests.server.hookfns:gated"},
                "timeout_ms": 10_000,
            })
            ok(ws, "hooks.create", {
                "event": "pre_tool_use", "handler_type": "callable", "scope": "tenant",
                "name": "guard", "config": {"callable": "tests.server.hookfns:allow"},
            })
            for n in range(sent):
                event = "post_tool_use" if n % 2 else "pre_tool_use"
                ok(ws, "hooks.dispatch", {"event": event, "input": {
                    "tool_name": "t", "session_id": "shut", "tool_input": {"gate": str(gate)},
                }})
        # The 100 observers hold until the gate opens: none can have finished at SIGTERM.
        assert served.proc is not None
        served.proc.send_signal(signal.SIGTERM)
        stopping = '"key":"hookgate.gateway.stopping"'
        wait_until(lambda: stopping in served.log(), "the gateway logs that it is stopping",
                   seconds=60)
        # The shutdown began and waits for them.
        assert served.proc.poll() is None and not served.stopped_gracefully()
        gate.touch()
        served.stop()
        assert served.stopped_gracefully()
    finally:
        gate.touch()
        served.stop()
    assert count_rows(served.data_dir, session_id="shut") == sent


def test_sync_audit_mode_and_error_detail(tmp_path: Path) -> None:
    """--audit-mode sync: the row is committed before the answer; admins read the full
    (decrypted) error of a failed execution, viewers do not."""
    served = start_gateway(tmp_path, "--audit-mode", "sync")
    try:
        viewer = served.create_key("default", "viewer")
        with open_ws(served.ws_url, served.master_key) as ws:
            hook_id = ok(ws, "hooks.create", {
                "event": "user_prompt_submit", "handler_type": "callable", "scope": "tenant",
                "name": "faulty", "config": {"callable": "tests.server.hookfns:fail"},
            })["hookId"]
            outcome = ok(ws, "hooks.dispatch",
                         {"event": "user_prompt_submit", "input": {"prompt": "hi"}})
            assert outcome["decision"] == "block"
            # No waiting: in sync mode the answer came after the commit.
            rows = ok(ws, "hooks.history", {"hookId": hook_id})["executions"]
            assert len(rows) == 1 and rows[0]["decision"] == "error"
            assert "failed on purpose" in rows[0]["error_detail"]
        with open_ws(served.ws_url, viewer) as ws:
            rows = ok(ws, "hooks.history", {"hookId": hook_id})["executions"]
            assert rows[0]["error_detail"] is None and rows[0]["error"]
    finally:
        served.stop()


def test_postgres_backend(tmp_path: Path) -> None:
    """hookgate serve --database-url runs on PostgreSQL: hooks, dispatch and history."""
    import uuid

    import asyncpg
    from tests.store.conftest import PG_URL, need_postgres

    need_postgres()
    name = f"hg_gateway_{uuid.uuid4().hex[:10]}"

    async def admin(sql: str) -> None:
        conn = await asyncpg.connect(PG_URL)
        try:
            await conn.execute(sql)
        finally:
            await conn.close()

    asyncio.run(admin(f'CREATE DATABASE "{name}"'))
    url = PG_URL.rsplit("/", 1)[0] + "/" + name
    served = GatewayProcess(
        tmp_path / "pg", args=("--allow-callable", "tests.server.hookfns"), database_url=url
    )
    try:
        served.start()
        assert served.master_key is not None
        assert any("PostgresStore" in line for line in served.stdout_lines)
        with open_ws(served.ws_url, served.master_key) as ws:
            hook_id = ok(ws, "hooks.create", {
                "event": "pre_tool_use", "handler_type": "callable", "scope": "tenant",
                "name": "pg", "config": {"callable": "tests.server.hookfns:block"},
            })["hookId"]
            assert ok(ws, "hooks.dispatch", {"event": "pre_tool_use", "input": {}})[
                "decision"
            ] == "block"
            wait_until(lambda: ok(ws, "hooks.history", {"hookId": hook_id})["executions"],
                       "the hook's audit row")
            rows = ok(ws, "hooks.history", {"hookId": hook_id})["executions"]
            assert [r["decision"] for r in rows] == ["block"]
    finally:
        served.stop()
        asyncio.run(admin(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
