"""The asyncio client: one WebSocket, many concurrent requests matched by id.

    async with AsyncGatewayClient("http://127.0.0.1:8787", api_key) as gateway:
        outcome = await gateway.dispatch("pre_tool_use", {"tool_name": "exec", ...})

A dropped connection fails the requests in flight with :class:`GatewayConnectionError`; the
next call connects again.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Awaitable, Mapping
from typing import Any

from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed, InvalidStatus, WebSocketException

from hookgate.client._common import (
    HooksApi,
    decode_response,
    encode_request,
    result_of,
    websocket_url,
)
from hookgate.client.errors import GatewayConnectionError, GatewayError

__all__ = ["AsyncGatewayClient"]


class AsyncGatewayClient(HooksApi):
    def __init__(
        self,
        url: str,
        api_key: str,
        *,
        timeout: float = 30.0,
        max_size: int = 16 << 20,
    ) -> None:
        self.url = websocket_url(url)
        self._api_key = api_key
        self.timeout = timeout
        self._max_size = max_size
        self._ids = itertools.count(1)
        self._ws: ClientConnection | None = None
        self._reader: asyncio.Task[None] | None = None
        self._pending: dict[str, asyncio.Future[dict[str, Any]]] = {}
        self._connecting = asyncio.Lock()

    async def __aenter__(self) -> AsyncGatewayClient:
        await self.connect()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def connect(self) -> None:
        async with self._connecting:
            if self._ws is not None:
                return
            try:
                self._ws = await connect(
                    self.url,
                    additional_headers={"Authorization": f"Bearer {self._api_key}"},
                    max_size=self._max_size,
                    open_timeout=self.timeout,
                )
            except InvalidStatus as exc:
                raise _refused(exc) from None
            except (OSError, WebSocketException, TimeoutError) as exc:
                raise GatewayConnectionError(f"cannot connect to {self.url}: {exc}") from None
            self._reader = asyncio.get_running_loop().create_task(self._read(self._ws))

    async def _read(self, ws: ClientConnection) -> None:
        reason = "connection closed"
        try:
            async for raw in ws:
                frame = decode_response(raw)
                future = self._pending.pop(str(frame.get("id")), None)
                if future is not None and not future.done():
                    future.set_result(frame)
        except ConnectionClosed as exc:
            reason = f"connection closed ({exc.rcvd.code if exc.rcvd else 'no close frame'})"
        except GatewayError as exc:
            reason = str(exc)
        finally:
            if self._ws is ws:
                self._ws = None
            failure = GatewayConnectionError(reason)
            for future in self._pending.values():
                if not future.done():
                    future.set_exception(failure)
            self._pending.clear()

    def _call(self, method: str, params: Mapping[str, Any] | None = None) -> Awaitable[Any]:
        return self.call(method, params)

    async def call(self, method: str, params: Mapping[str, Any] | None = None) -> Any:
        """Send one request and return its payload; raise :class:`GatewayError` on ``ok:false``."""
        if self._ws is None:
            await self.connect()
        ws = self._ws
        assert ws is not None
        frame_id = str(next(self._ids))
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._pending[frame_id] = future
        try:
            await ws.send(encode_request(frame_id, method, params))
            async with asyncio.timeout(self.timeout):
                frame = await future
        except ConnectionClosed:
            raise GatewayConnectionError("connection closed while sending") from None
        except TimeoutError:
            raise GatewayConnectionError(
                f"{method}: no answer within {self.timeout:g} s"
            ) from None
        finally:
            self._pending.pop(frame_id, None)
        return result_of(frame)

    async def aclose(self) -> None:
        ws, self._ws = self._ws, None
        if ws is not None:
            await ws.close()
        if self._reader is not None:
            await asyncio.gather(self._reader, return_exceptions=True)
            self._reader = None


def _refused(exc: InvalidStatus) -> GatewayError:
    response = exc.response
    try:
        frame = decode_response(bytes(response.body or b"{}"))
        return GatewayError.from_error(frame.get("error"))
    except Exception:
        return GatewayConnectionError(
            f"the gateway refused the connection: HTTP {response.status_code}"
        )
