"""A raw WebSocket helper for protocol tests: send frames as given, read frames as sent."""

from __future__ import annotations

import itertools
import json
from typing import Any

from websockets.sync.client import ClientConnection, connect

_ids = itertools.count(1000)


def open_ws(url: str, key: str | None) -> ClientConnection:
    headers = {"Authorization": f"Bearer {key}"} if key else None
    return connect(url, additional_headers=headers, max_size=64 << 20)


def send_raw(ws: ClientConnection, text: str | bytes) -> dict[str, Any]:
    ws.send(text)
    frame: dict[str, Any] = json.loads(ws.recv(timeout=30))
    return frame


def request(ws: ClientConnection, method: str, params: Any = None) -> dict[str, Any]:
    frame_id = str(next(_ids))
    body = {"type": "req", "id": frame_id, "method": method}
    if params is not None:
        body["params"] = params
    answer = send_raw(ws, json.dumps(body))
    assert answer["id"] == frame_id, answer
    return answer


def ok(ws: ClientConnection, method: str, params: Any = None) -> Any:
    answer = request(ws, method, params)
    assert answer["ok"] is True, answer
    return answer["payload"]


def fails(ws: ClientConnection, method: str, params: Any, code: str) -> dict[str, Any]:
    answer = request(ws, method, params)
    assert answer["ok"] is False, answer
    assert answer["error"]["code"] == code, answer
    error: dict[str, Any] = answer["error"]
    return error
