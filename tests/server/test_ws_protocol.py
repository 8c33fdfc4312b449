"""The WebSocket protocol against a real ``hookgate serve``: the seed's frames verbatim,
every method, and every kind of bad input (after which the connection keeps working)."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import pytest
from tests.server.conftest import Keys
from tests.server.gateway_process import GatewayProcess
from tests.server.wsutil import fails, ok, open_ws, request, send_raw
from tests.support.waiting import wait_until
from websockets.exceptions import InvalidStatus

# The seed's frames, as the seed prints them (tests/fixtures/seeds/000_goclaw_hooks).
SEED_FRAMES = Path(__file__).resolve().parents[1] / "fixtures" / "seeds" / "000_goclaw_hooks"
SEED_CREATE = (SEED_FRAMES / "hooks-create.json").read_text()
SEED_TEST = (SEED_FRAMES / "hooks-test.json").read_text()

BLOCKER = {
    "event": "pre_tool_use",
    "handler_type": "callable",
    "scope": "tenant",
    "name": "blocker",
    "matcher": "^rm$",
    "config": {"callable": "tests.server.hookfns:block"},
}


def audit_barrier(ws: Any) -> str:
    """Dispatch a real event through a throwaway hook and wait for its audit row. The audit
    log commits in order, so any row written before it (say, by a dry run) is there too.
    Returns the throwaway hook's id (its row is the only one it leaves)."""
    barrier = BLOCKER | {"name": "audit barrier", "matcher": "^barrier$"}
    marker_id: str = ok(ws, "hooks.create", barrier)["hookId"]
    ok(ws, "hooks.dispatch", {"event": "pre_tool_use", "input": {"tool_name": "barrier"}})
    wait_until(lambda: ok(ws, "hooks.history", {"hookId": marker_id})["executions"],
               "the barrier's audit row")
    ok(ws, "hooks.delete", {"hookId": marker_id})
    return marker_id


class TestSeedExamples:
    def test_create_example_verbatim(self, gateway: GatewayProcess, keys: Keys) -> None:
        """The seed's hooks.create frame works as written and answers {hookId}."""
        with open_ws(gateway.ws_url, keys.master) as ws:
            answer = send_raw(ws, SEED_CREATE)
            assert set(answer) == {"type", "id", "ok", "payload"}
            assert answer["type"] == "res" and answer["id"] == "1" and answer["ok"] is True
            hook_id = answer["payload"]["hookId"]
            uuid.UUID(hook_id)
            hook = ok(ws, "hooks.get", {"hookId": hook_id})["hook"]
            assert hook["name"] == "Safety webhook"
            assert hook["enabled"] is True  # unlike GoClaw, enabled defaults to true
            assert hook["version"] == 1 and hook["tenant_id"] == "default"

    def test_toggle_example(self, gateway: GatewayProcess, keys: Keys) -> None:
        """The seed's toggle frame (with a real id) answers {hookId, enabled}."""
        with open_ws(gateway.ws_url, keys.master) as ws:
            hook_id = ok(ws, "hooks.create", BLOCKER | {"name": "toggle-me"})["hookId"]
            frame = (
                '{ "type": "req", "id": "2", "method": "hooks.toggle",\n'
                f'"params": {{ "hookId": "{hook_id}", "enabled": false }} }}'
            )
            answer = send_raw(ws, frame)
            assert answer == {
                "type": "res",
                "id": "2",
                "ok": True,
                "payload": {"hookId": hook_id, "enabled": False},
            }
            assert ok(ws, "hooks.get", {"hookId": hook_id})["hook"]["enabled"] is False

    def test_dry_run_example_verbatim(self, gateway: GatewayProcess, keys: Keys) -> None:
        """The seed's hooks.test frame runs `cat` on the camelCase sample event: decision,
        duration and stdout come back, and no execution row is written."""
        with open_ws(gateway.ws_url, keys.master) as ws:
            before = ok(ws, "hooks.history", {"limit": 500})["executions"]
            answer = send_raw(ws, SEED_TEST)
            assert answer["id"] == "3" and answer["ok"] is True, answer
            result = answer["payload"]["result"]
            assert result["decision"] == "allow" and result["matched"] is True
            assert result["durationMs"] > 0 and result["stderr"] == ""
            echoed = json.loads(result["stdout"])
            assert echoed["tool_name"] == "exec" and echoed["tool_input"] == {"cmd": "ls"}
            marker_id = audit_barrier(ws)
            after = ok(ws, "hooks.history", {"limit": 500})["executions"]
            # (a deleted hook's rows keep its id as hook_ref)
            after = [r for r in after if marker_id not in (r["hook_id"], r.get("hook_ref"))]
            assert [r["id"] for r in after] == [r["id"] for r in before]

    def test_missing_fields_message(self, gateway: GatewayProcess, keys: Keys) -> None:
        """A create without handler_type, event or scope gets the seed's exact message."""
        with open_ws(gateway.ws_url, keys.master) as ws:
            for missing in ("handler_type", "event", "scope"):
                params = {k: v for k, v in BLOCKER.items() if k != missing}
                error = fails(ws, "hooks.create", params, "INVALID_REQUEST")
                assert error["message"] == "handler_type, event, and scope are required"
                assert error["details"]["problems"][0]["field"] == missing


class TestBadInput:
    @pytest.mark.parametrize(
        ("frame", "code", "echo_id"),
        [
            ("{not json", "INVALID_FRAME", None),
            ("[1, 2]", "INVALID_FRAME", None),
            ('{"type": "req", "method": "hooks.list"}', "INVALID_FRAME", None),
            ('{"type": "req", "id": true, "method": "hooks.list"}', "INVALID_FRAME", None),
            ('{"type": "event", "id": "e1", "method": "hooks.list"}', "INVALID_FRAME", "e1"),
            ('{"type": "req", "id": "m1", "method": 42}', "INVALID_FRAME", "m1"),
            ('{"type": "req", "id": "m2", "method": "hooks.nope"}', "METHOD_NOT_FOUND", "m2"),
            ('{"type": "req", "id": "p1", "method": "hooks.get", "params": [1]}',
             "INVALID_REQUEST", "p1"),
            ('{"type": "req", "id": "p2", "method": "hooks.get", "params": {}}',
             "INVALID_REQUEST", "p2"),
            ('{"type": "req", "id": "p3", "method": "hooks.toggle", '
             '"params": {"hookId": "x", "enabled": "maybe"}}', "INVALID_REQUEST", "p3"),
        ],
        ids=["not-json", "not-object", "no-id", "bool-id", "wrong-type", "method-not-string",
             "unknown-method", "params-not-object", "missing-param", "bad-param-type"],
    )
    def test_error_then_connection_survives(
        self, gateway: GatewayProcess, keys: Keys, frame: str, code: str, echo_id: str | None
    ) -> None:
        """Each bad frame gets a clear error frame, and the next request still works."""
        with open_ws(gateway.ws_url, keys.master) as ws:
            answer = send_raw(ws, frame)
            assert answer["type"] == "res" and answer["ok"] is False
            assert answer["id"] == echo_id
            assert answer["error"]["code"] == code
            assert answer["error"]["message"]
            assert "hooks" in ok(ws, "hooks.list", {})

    def test_unknown_method_lists_known_ones(self, gateway: GatewayProcess, keys: Keys) -> None:
        with open_ws(gateway.ws_url, keys.master) as ws:
            error = fails(ws, "hooks.frobnicate", {}, "METHOD_NOT_FOUND")
            assert "hooks.frobnicate" in error["message"] and "hooks.dispatch" in error["message"]

    def test_oversized_frame(self, gateway: GatewayProcess, keys: Keys) -> None:
        """A frame over the 1 MiB limit is refused by name; the connection survives."""
        with open_ws(gateway.ws_url, keys.master) as ws:
            big = json.dumps(
                {
                    "type": "req",
                    "id": "big",
                    "method": "hooks.dispatch",
                    "params": {"event": "pre_tool_use", "input": {"blob": "x" * (1 << 20)}},
                }
            )
            answer = send_raw(ws, big)
            assert answer["ok"] is False
            assert answer["id"] == "big"  # never parsed, still answered under its id
            assert answer["error"]["code"] == "PAYLOAD_TOO_LARGE"
            assert "limit" in answer["error"]["message"]
            assert ok(ws, "hooks.dispatch", {"event": "pre_tool_use", "input": {}})[
                "decision"
            ] == "allow"

    def test_binary_frame_is_parsed(self, gateway: GatewayProcess, keys: Keys) -> None:
        with open_ws(gateway.ws_url, keys.master) as ws:
            answer = send_raw(ws, b'{"type": "req", "id": "b", "method": "hooks.list"}')
            assert answer["ok"] is True and answer["id"] == "b"

    def test_numeric_id_is_echoed(self, gateway: GatewayProcess, keys: Keys) -> None:
        with open_ws(gateway.ws_url, keys.master) as ws:
            answer = send_raw(ws, '{"type": "req", "id": 7, "method": "hooks.list"}')
            assert answer["id"] == 7 and answer["ok"] is True


class TestAuthentication:
    def test_no_key_no_methods_until_connect(self, gateway: GatewayProcess, keys: Keys) -> None:
        """A browser socket (no header) must connect first; a bad key is refused in place."""
        with open_ws(gateway.ws_url, None) as ws:
            error = fails(ws, "hooks.list", {}, "UNAUTHORIZED")
            assert "connect" in error["message"]
            fails(ws, "connect", {"apiKey": "hg-not-a-real-key"}, "UNAUTHORIZED")
            info = ok(ws, "connect", {"apiKey": keys.a_admin})
            assert info["role"] == "admin" and info["tenantId"] == "tenant-a"
            assert info["isMasterScope"] is False and info["edition"] == "lite"
            assert {e["name"] for e in info["events"]} >= {"pre_tool_use", "stop"}
            assert "hooks" in ok(ws, "hooks.list", {})

    def test_bad_bearer_refuses_upgrade(self, gateway: GatewayProcess) -> None:
        with pytest.raises(InvalidStatus) as refused:
            open_ws(gateway.ws_url, "hg-wrong")
        assert refused.value.response.status_code == 401
        body = json.loads(refused.value.response.body or b"{}")
        assert body["error"]["code"] == "UNAUTHORIZED"

    def test_connect_reports_master_scope(self, gateway: GatewayProcess, keys: Keys) -> None:
        with open_ws(gateway.ws_url, keys.master) as ws:
            info = ok(ws, "connect", {})
            assert info["isMasterScope"] is True and info["role"] == "admin"
            assert "command" in info["handlerTypes"] and "callable" in info["handlerTypes"]


class TestMethods:
    def test_crud_cycle(self, gateway: GatewayProcess, keys: Keys) -> None:
        """create → get → list (filtered) → update (re-validated, version bump) → delete."""
        with open_ws(gateway.ws_url, keys.a_admin) as ws:
            hook_id = ok(ws, "hooks.create", BLOCKER | {"name": "crud"})["hookId"]
            hook = ok(ws, "hooks.get", {"hookId": hook_id})["hook"]
            assert hook["tenant_id"] == "tenant-a" and hook["breaker"]["state"] == "closed"
            listed = ok(ws, "hooks.list", {"event": "pre_tool_use", "handlerType": "callable"})
            assert hook_id in [h["id"] for h in listed["hooks"]]
            none = ok(ws, "hooks.list", {"event": "stop"})
            assert hook_id not in [h["id"] for h in none["hooks"]]
            updated = ok(ws, "hooks.update", {"hookId": hook_id, "updates": {"priority": 7}})
            assert updated == {"hookId": hook_id, "version": 2}
            assert ok(ws, "hooks.get", {"hookId": hook_id})["hook"]["priority"] == 7
            error = fails(
                ws,
                "hooks.update",
                {"hookId": hook_id, "updates": {"matcher": "(unclosed", "timeout_ms": 99999}},
                "INVALID_REQUEST",
            )
            fields = {p["field"] for p in error["details"]["problems"]}
            assert fields == {"matcher", "timeout_ms"}
            assert ok(ws, "hooks.get", {"hookId": hook_id})["hook"]["version"] == 2
            fails(ws, "hooks.update",
                  {"hookId": hook_id, "updates": {"priority": 1}, "expectedVersion": 1},
                  "CONFLICT")
            assert ok(ws, "hooks.delete", {"hookId": hook_id}) == {"hookId": hook_id}
            fails(ws, "hooks.get", {"hookId": hook_id}, "NOT_FOUND")
            fails(ws, "hooks.delete", {"hookId": hook_id}, "NOT_FOUND")

    def test_dispatch_outcome_keys(self, gateway: GatewayProcess, keys: Keys) -> None:
        """hooks.dispatch answers the outcome object with exactly its documented keys."""
        with open_ws(gateway.ws_url, keys.a_admin) as ws:
            hook_id = ok(ws, "hooks.create", BLOCKER | {"name": "dispatch-keys"})["hookId"]
            outcome = ok(
                ws,
                "hooks.dispatch",
                {"event": "PreToolUse", "input": {"toolName": "rm", "toolInput": {"p": "/"}}},
            )
            assert set(outcome) == {
                "decision", "reason", "updated_input", "additional_context", "result",
                "abort", "continue", "retry", "trace", "dispatch_id",
            }
            assert outcome["decision"] == "block"
            assert outcome["reason"] == "blocked by test hook on pre_tool_use"
            assert [t["hook_id"] for t in outcome["trace"] if t["matched"]] == [hook_id]
            allowed = ok(ws, "hooks.dispatch",
                         {"event": "pre_tool_use", "input": {"tool_name": "ls"}})
            assert allowed["decision"] == "allow"
            fails(ws, "hooks.dispatch", {"event": "no_such_event", "input": {}},
                  "INVALID_REQUEST")
            ok(ws, "hooks.delete", {"hookId": hook_id})

    def test_concurrent_requests_on_one_socket(self, gateway: GatewayProcess, keys: Keys) -> None:
        """Pipelined requests are all answered, each under its own id."""
        with open_ws(gateway.ws_url, keys.a_operator) as ws:
            ids = [f"c{n}" for n in range(50)]
            for frame_id in ids:
                ws.send(json.dumps({"type": "req", "id": frame_id, "method": "hooks.dispatch",
                                    "params": {"event": "pre_tool_use",
                                               "input": {"tool_name": "x"}}}))
            answers = [json.loads(ws.recv(timeout=30)) for _ in ids]
            assert sorted(a["id"] for a in answers) == sorted(ids)
            assert all(a["ok"] for a in answers)

    def test_request_helper_roundtrip(self, gateway: GatewayProcess, keys: Keys) -> None:
        with open_ws(gateway.ws_url, keys.a_viewer) as ws:
            assert request(ws, "hooks.list")["ok"] is True
