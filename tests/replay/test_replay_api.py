"""``hooks.replay`` over REST and the WebSocket, against a real gateway's recorded traffic."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.replay.replay_support import Recorded, recording_gateway
from tests.server.wsutil import open_ws, request

pytestmark = pytest.mark.timeout(180)

CANDIDATE_HOOK = {
    "name": "no-rm", "event": "pre_tool_use", "handler_type": "callable", "matcher": "^exec$",
    "priority": 10, "config": {"callable": "tests.replay.replay_guards:no_rm_or_push"},
}
CANDIDATE_FILE = """
hooks:
  - name: file-check
    event: pre_tool_use
    handler_type: http
    matcher: "^read_file$"
    config: {url: "http://127.0.0.1:9/never-called"}
"""


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Recorded]:
    with recording_gateway(tmp_path_factory.mktemp("replay-api")) as found:
        yield found


@pytest.fixture(scope="module")
def admin(recorded: Recorded) -> str:
    return recorded.gateway.create_key(recorded.tenant, "admin")


def _replay(recorded: Recorded, key: str, body: dict[str, Any]) -> Any:
    return recorded.gateway.rest("POST", "/api/v1/hooks/replay", key, json=body)


def test_a_candidate_hook_over_rest(recorded: Recorded, admin: str) -> None:
    calls = len(recorded.webhook.requests)
    answer = _replay(recorded, admin, {"hook": CANDIDATE_HOOK})
    assert answer.status_code == 200, answer.text
    report = answer.json()
    assert report["replayed"] == 5 and report["changed"] == 1 and report["unknown"] == 0
    assert report["complete"] is True
    (change,) = report["changes"]
    assert change["dispatch_id"] == recorded.dispatch_ids[3]
    assert (change["before"], change["after"]) == ("allow", "block")
    # The tenant's two hooks and the global builtins, the candidate in place of its namesake.
    candidate = report["candidate"]
    assert candidate["replaced"] == ["no-rm"] and candidate["added"] == []
    assert candidate["hooks"] >= 2
    assert len(recorded.webhook.requests) == calls  # the webhook answered from its recording


def test_a_candidate_file_over_the_websocket(recorded: Recorded, admin: str) -> None:
    with open_ws(recorded.gateway.ws_url, admin) as ws:
        reply = request(ws, "hooks.replay", {"content": CANDIDATE_FILE, "since": 0})
    assert reply["ok"] is True, reply
    report = reply["payload"]
    assert report["replayed"] == 5 and report["unknown"] == 1 and report["changed"] == 0
    (change,) = report["changes"]
    assert change["dispatch_id"] == recorded.dispatch_ids[4] and change["after"] == "unknown"
    assert report["candidate"]["added"] == ["file-check"]


def test_bounded_by_count(recorded: Recorded, admin: str) -> None:
    report = _replay(recorded, admin, {"hook": CANDIDATE_HOOK, "limit": 2}).json()
    assert report["replayed"] == 2 and report["complete"] is False
    assert "limit of 2 records" in report["stopped"]


def test_bad_requests_are_named(recorded: Recorded, admin: str, tmp_path: Path) -> None:
    neither = _replay(recorded, admin, {})
    assert neither.status_code == 400 and "hook" in neither.json()["error"]["message"]
    bad = _replay(recorded, admin, {"hook": {**CANDIDATE_HOOK, "event": "no_such_event"}})
    assert bad.status_code == 400 and "hook" in bad.json()["error"]["message"]
    not_a_file = _replay(recorded, admin, {"content": "- just a list"})
    assert not_a_file.status_code == 400
    too_many = _replay(recorded, admin, {"hook": CANDIDATE_HOOK, "limit": 1_000_000})
    assert too_many.status_code == 400
