"""The blocking client, for scripts and synchronous agents (thread-safe, one request at a time).

    with GatewayClient("http://127.0.0.1:8787", api_key) as gateway:
        outcome = gateway.dispatch("pre_tool_use", {"tool_name": "exec", ...})
"""

from __future__ import annotations

import contextlib
import itertools
import threading
from collections.abc import Mapping
from typing import Any

from websockets.exceptions import ConnectionClosed, InvalidStatus, WebSocketException
from websockets.sync.client import ClientConnection, connect

from hookgate.client._common import (
    HooksApi,
    decode_response,
    encode_request,
    result_of,
    websocket_url,
)
from hookgate.client.aio import _refused
from hookgate.client.errors import GatewayConnectionError

__all__ = ["GatewayClient"]


class GatewayClient(HooksApi):
    def __init__(
        self, url: str, api_key: str, *, timeout: float = 30.0, max_size: int = 16 << 20
    ) -> None:
        self.url = websocket_url(url)
        self._api_key = api_key
        self.timeout = timeout
        self._max_size = max_size
        self._ids = itertools.count(1)
        self._ws: ClientConnection | None = None
        self._lock = threading.Lock()

    def __enter__(self) -> GatewayClient:
        self.connect()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def connect(self) -> None:
        if self._ws is not None:
            return
        try:
            connection = connect(
                self.url,
                additional_headers={"Authorization": f"Bearer {self._api_key}"},
                max_size=self._max_size,
                open_timeout=self.timeout,
            )
            # Entered like a context manager (websockets' supported way); closed in _drop.
            # Kept as the connect() result: websockets 15 types __enter__ as the base class.
            contextlib.ExitStack().enter_context(connection)
            self._ws = connection
        except InvalidStatus as exc:
            raise _refused(exc) from None
        except (OSError, WebSocketException, TimeoutError) as exc:
            raise GatewayConnectionError(f"cannot connect to {self.url}: {exc}") from None

    def _call(self, method: str, params: Mapping[str, Any] | None = None) -> Any:
        return self.call(method, params)

    def call(self, method: str, params: Mapping[str, Any] | None = None) -> Any:
        """Send one request and wait for its answer."""
        with self._lock:
            self.connect()
            ws = self._ws
            assert ws is not None
            frame_id = str(next(self._ids))
            try:
                ws.send(encode_request(frame_id, method, params))
                while True:
                    frame = decode_response(ws.recv(timeout=self.timeout))
                    if str(frame.get("id")) == frame_id:
                        return result_of(frame)
            except TimeoutError:
                self._drop()
                raise GatewayConnectionError(
                    f"{method}: no answer within {self.timeout:g} s"
                ) from None
            except ConnectionClosed as exc:
                self._drop()
                raise GatewayConnectionError(f"connection closed: {exc}") from None

    def _drop(self) -> None:
        ws, self._ws = self._ws, None
        if ws is not None:
            ws.close()

    def close(self) -> None:
        with self._lock:
            self._drop()
