"""Dispatch, history, dry runs and breakers against a real gateway and its SQLite store."""

from __future__ import annotations

import time
from typing import Any

import httpx
import pytest
from tests.server.conftest import Keys
from tests.server.gateway_process import GatewayProcess
from tests.server.test_ws_protocol import BLOCKER, audit_barrier
from tests.server.wsutil import ok, open_ws, request

from hookgate.events import BLOCK, CATALOGUE

BLOCKABLE = [spec for spec in CATALOGUE if spec.blocking and spec.allows(BLOCK)]


def history_until(ws: Any, count: int, **query: Any) -> list[dict[str, Any]]:
    """Every execution matching ``query`` (following cursors), once ``count`` are there."""
    deadline = time.monotonic() + 10
    while True:
        rows: list[dict[str, Any]] = []
        cursor = None
        while True:
            params = dict(query, limit=query.get("limit", 100))
            if cursor:
                params["cursor"] = cursor
            page = ok(ws, "hooks.history", params)
            rows.extend(page["executions"])
            cursor = page["nextCursor"]
            if not cursor:
                break
        if len(rows) >= count or time.monotonic() > deadline:
            return rows
        time.sleep(0.05)


class TestDispatch:
    @pytest.mark.parametrize("spec", BLOCKABLE, ids=[s.name for s in BLOCKABLE])
    def test_each_blocking_event_blocks(
        self, gateway: GatewayProcess, keys: Keys, spec: Any
    ) -> None:
        """A blocking hook on each blocking event blocks a dispatch of that event."""
        with open_ws(gateway.ws_url, keys.a_admin) as ws:
            hook_id = ok(
                ws,
                "hooks.create",
                {
                    "event": spec.name,
                    "handler_type": "callable",
                    "scope": "tenant",
                    "name": f"block {spec.name}",
                    "config": {"callable": "tests.server.hookfns:block"},
                },
            )["hookId"]
            try:
                outcome = ok(ws, "hooks.dispatch", {"event": spec.name, "input": {}})
                assert outcome["decision"] == "block"
                assert outcome["reason"] == f"blocked by test hook on {spec.name}"
            finally:
                ok(ws, "hooks.delete", {"hookId": hook_id})

    def test_rewrite_and_context(self, gateway: GatewayProcess, keys: Keys) -> None:
        with open_ws(gateway.ws_url, keys.b_admin) as ws:
            ids = [
                ok(ws, "hooks.create", {
                    "event": "pre_tool_use", "handler_type": "callable", "scope": "tenant",
                    "name": name, "priority": priority,
                    "config": {"callable": f"tests.server.hookfns:{name}"},
                })["hookId"]
                for name, priority in (("rewrite", 10), ("allow", 5))
            ]
            outcome = ok(ws, "hooks.dispatch", {
                "event": "pre_tool_use",
                "input": {"tool_name": "exec", "tool_input": {"cmd": "rm"}},
            })
            assert outcome["decision"] == "allow"
            assert outcome["updated_input"] == {"cmd": "ls --safe"}
            assert outcome["additional_context"] == ["checked by test hook"]
            for hook_id in ids:
                ok(ws, "hooks.delete", {"hookId": hook_id})

    def test_non_blocking_is_queued_and_recorded(
        self, gateway: GatewayProcess, keys: Keys
    ) -> None:
        """A non-blocking dispatch answers allow at once; its hook still runs and is audited."""
        session = f"s-nonblock-{time.time_ns()}"
        with open_ws(gateway.ws_url, keys.b_admin) as ws:
            hook_id = ok(ws, "hooks.create", {
                "event": "post_tool_use", "handler_type": "callable", "scope": "tenant",
                "name": "observer", "config": {"callable": "tests.server.hookfns:block"},
            })["hookId"]
            outcome = ok(ws, "hooks.dispatch", {
                "event": "post_tool_use", "input": {"tool_name": "x", "session_id": session},
            })
            assert outcome["decision"] == "allow" and outcome["trace"] == []
            waited = ok(ws, "hooks.dispatch", {
                "event": "post_tool_use", "wait": True,
                "input": {"tool_name": "x", "session_id": session},
            })
            assert waited["decision"] == "allow"  # a non-blocking event cannot be blocked
            assert waited["trace"][0]["decision"] == "block"
            rows = history_until(ws, 2, sessionId=session)
            assert len(rows) == 2 and {r["hook_id"] for r in rows} == {hook_id}
            ok(ws, "hooks.delete", {"hookId": hook_id})


class TestHistory:
    def test_paging_and_dry_run_leaves_no_row(self, gateway: GatewayProcess, keys: Keys) -> None:
        session = f"s-page-{time.time_ns()}"
        with open_ws(gateway.ws_url, keys.a_admin) as ws:
            hook_id = ok(ws, "hooks.create", BLOCKER | {"name": "paged", "matcher": "^paged$"})[
                "hookId"
            ]
            for n in range(7):
                ok(ws, "hooks.dispatch", {
                    "event": "pre_tool_use",
                    "input": {"tool_name": "paged", "session_id": session, "n": n},
                })
            rows = history_until(ws, 7, hookId=hook_id)
            assert len(rows) == 7
            pages, cursor, seen = 0, None, []
            while True:
                params: dict[str, Any] = {"hookId": hook_id, "limit": 3}
                if cursor:
                    params["cursor"] = cursor
                page = ok(ws, "hooks.history", params)
                pages += 1
                seen.extend(row["id"] for row in page["executions"])
                cursor = page["nextCursor"]
                if not cursor:
                    break
            assert pages == 3 and len(seen) == len(set(seen)) == 7
            row = rows[0]
            assert row["decision"] == "block" and row["session_id"] == session
            assert row["created_at"].endswith("Z") and row["metadata"]["matcher_matched"] is True
            assert row["error_detail"] is None
            # Dry runs write nothing.
            for _ in range(3):
                result = ok(ws, "hooks.test",
                            {"hookId": hook_id, "sampleEvent": {"tool_name": "paged"}})
                assert result["result"]["decision"] == "block"
            audit_barrier(ws)
            assert len(history_until(ws, 0, hookId=hook_id)) == 7
            blocked = ok(ws, "hooks.history", {"hookId": hook_id, "decision": "allow"})
            assert blocked["executions"] == []
            later = ok(ws, "hooks.history", {"hookId": hook_id, "since": "2999-01-01T00:00:00Z"})
            assert later["executions"] == []
            earlier = ok(ws, "hooks.history",
                         {"hookId": hook_id, "until": "2999-01-01T00:00:00Z", "limit": 50})
            assert len(earlier["executions"]) == 7
            bad = request(ws, "hooks.history", {"hookId": hook_id, "since": "yesterday"})
            assert bad["ok"] is False and "since" in bad["error"]["message"]
            ok(ws, "hooks.delete", {"hookId": hook_id})
            # History survives the hook's deletion.
            assert len(history_until(ws, 7, sessionId=session)) == 7


class TestBreaker:
    def test_open_then_reset_by_toggle(self, gateway: GatewayProcess, keys: Keys) -> None:
        """Five faults open the breaker (visible in hooks.get and /metrics); the open breaker
        keeps blocking without calling the hook; re-enabling resets it."""
        with open_ws(gateway.ws_url, keys.a_admin) as ws:
            hook_id = ok(ws, "hooks.create", {
                "event": "user_prompt_submit", "handler_type": "callable", "scope": "tenant",
                "name": "faulty", "config": {"callable": "tests.server.hookfns:fail"},
            })["hookId"]
            for _ in range(5):
                outcome = ok(ws, "hooks.dispatch",
                             {"event": "user_prompt_submit", "input": {"prompt": "hi"}})
                assert outcome["decision"] == "block"
            breaker = ok(ws, "hooks.get", {"hookId": hook_id})["hook"]["breaker"]
            assert breaker["state"] == "open" and breaker["recent_faults"] == 5
            assert "failed on purpose" in breaker["last_fault"]
            outcome = ok(ws, "hooks.dispatch",
                         {"event": "user_prompt_submit", "input": {"prompt": "hi"}})
            assert outcome["decision"] == "block" and "circuit breaker" in outcome["reason"]
            metrics = httpx.get(gateway.url + "/metrics", headers=gateway.headers()).text
            assert f'hookgate_breaker_state{{hook_id="{hook_id}"}} 2.0' in metrics
            ok(ws, "hooks.toggle", {"hookId": hook_id, "enabled": False})
            ok(ws, "hooks.toggle", {"hookId": hook_id, "enabled": True})
            breaker = ok(ws, "hooks.get", {"hookId": hook_id})["hook"]["breaker"]
            assert breaker["state"] == "closed"
            metrics = httpx.get(gateway.url + "/metrics", headers=gateway.headers()).text
            assert f'hookgate_breaker_state{{hook_id="{hook_id}"}} 0.0' in metrics
            ok(ws, "hooks.delete", {"hookId": hook_id})


class TestMetrics:
    def test_metrics_need_a_key_and_count_executions(
        self, gateway: GatewayProcess, keys: Keys
    ) -> None:
        assert httpx.get(gateway.url + "/metrics").status_code == 401
        with open_ws(gateway.ws_url, keys.a_admin) as ws:
            hook_id = ok(ws, "hooks.create", BLOCKER | {"name": "metered", "matcher": "^m$"})[
                "hookId"
            ]
            ok(ws, "hooks.dispatch", {"event": "pre_tool_use", "input": {"tool_name": "m"}})
            ok(ws, "hooks.delete", {"hookId": hook_id})
        # Metrics cover every tenant's hooks: a tenant key gets none of them.
        for key in (keys.a_viewer, keys.a_admin):
            refused = httpx.get(gateway.url + "/metrics", headers=gateway.headers(key))
            assert refused.status_code == 403 and "master" in refused.text
            assert "hook_id" not in refused.text
        text = httpx.get(gateway.url + "/metrics", headers=gateway.headers(keys.master)).text
        assert (
            'hookgate_hook_executions_total{decision="block",event="pre_tool_use",'
            'handler_type="callable"}' in text
        )
        for name in (
            "hookgate_hook_duration_seconds_bucket",
            "hookgate_dispatch_duration_seconds_bucket",
            "hookgate_background_dropped_total",
            "hookgate_audit_lag_seconds",
            "hookgate_audit_pending_rows",
            'hookgate_breakers{state="open"}',
        ):
            assert name in text, name
