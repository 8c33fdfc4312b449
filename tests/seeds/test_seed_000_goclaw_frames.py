"""Seed 000 (GoClaw hooks): the WebSocket frames as the seed prints them, sent to a real
gateway, do what the seed says: create answers {hookId}, the hook blocks fail-closed when its
webhook cannot be reached, toggle turns it off, hooks.test dry-runs `cat` with no audit row."""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.server.gateway_process import GatewayProcess
from tests.server.wsutil import ok, open_ws, send_raw

FRAMES = Path(__file__).resolve().parents[1] / "fixtures" / "seeds" / "000_goclaw_hooks"
PLACEHOLDER = "uuid..."


def frame(name: str) -> str:
    return (FRAMES / name).read_text()


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayProcess]:
    served = GatewayProcess(tmp_path_factory.mktemp("seed000") / "data").start()
    try:
        yield served
    finally:
        served.stop()


def test_seed_frames_create_block_fail_closed_toggle_and_dry_run(gateway: GatewayProcess) -> None:
    assert gateway.master_key is not None
    exec_call = {"event": "pre_tool_use", "input": {"toolName": "exec", "toolInput": {}}}
    with open_ws(gateway.ws_url, gateway.master_key) as ws:
        created = send_raw(ws, frame("hooks-create.json"))
        hook_id = created["payload"]["hookId"]
        uuid.UUID(hook_id)
        expected = json.loads(frame("hooks-create-response.json"))
        expected["payload"]["hookId"] = hook_id
        assert created == expected

        # The webhook (https://safety.internal) cannot be reached from here: a blocking
        # event fails closed. The matcher ^exec$ leaves other tools alone.
        blocked = ok(ws, "hooks.dispatch", exec_call)
        assert blocked["decision"] == "block" and "Safety webhook" in blocked["reason"]
        other = ok(ws, "hooks.dispatch", {"event": "pre_tool_use",
                                          "input": {"toolName": "ls"}})
        assert other["decision"] == "allow"

        toggled = send_raw(ws, frame("hooks-toggle.json").replace(PLACEHOLDER, hook_id))
        assert toggled == {"type": "res", "id": "2", "ok": True,
                           "payload": {"hookId": hook_id, "enabled": False}}
        assert ok(ws, "hooks.dispatch", exec_call)["decision"] == "allow"

        tested = send_raw(ws, frame("hooks-test.json"))
        assert tested["id"] == "3" and tested["ok"] is True, tested
        result = tested["payload"]["result"]
        assert result["decision"] == "allow" and result["durationMs"] > 0
        echoed = json.loads(result["stdout"])  # `cat` echoes the event it was given
        assert echoed["tool_name"] == "exec" and echoed["tool_input"] == {"cmd": "ls"}
        # No row for the dry run: the only rows are the safety webhook's, from the
        # dispatches above (the dry run's hook has an id of its own).
        deadline = time.monotonic() + 10
        rows: list[dict[str, object]] = []
        while not rows and time.monotonic() < deadline:  # rows are written in batches
            rows = ok(ws, "hooks.history", {"limit": 500})["executions"]
        assert rows and all(r["hook_id"] == hook_id for r in rows)
