"""``tools/call`` over stdio without the SDK server's per-request machinery.

The SDK's server path for one request (its dispatcher's task and streams, a session and a
context per request, the middleware chain) costs the proxy about what the upstream server
spends on the whole call. On stdio (one client) the proxy therefore picks ``tools/call``
requests, and cancellations of them, out of its input before the SDK sees them, and answers
them itself with the same checks the SDK makes:

* the connection's protocol era is decided by the client's first request, as the SDK does;
  on a 2026-07-28 connection the request's envelope is classified by the SDK's own ladder;
* the params are validated, and the result validated and shaped for the client's protocol
  version, by the SDK's per-version method surface (``mcp_types.methods``);
* errors are worded as the SDK's dispatcher words them.

Any request these checks would refuse, or that arrives before the handshake has finished,
goes to the SDK unchanged, so it answers exactly as before. The hooks themselves run in
:meth:`McpProxy.tool_call`, shared with the SDK path.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from typing import Any

from mcp.server.runner import modern_error_data
from mcp.shared.exceptions import MCPError
from mcp.shared.inbound import InboundLadderRejection, classify_inbound_request
from mcp.shared.jsonrpc_dispatcher import handler_exception_to_error_data
from mcp.types import (
    INTERNAL_ERROR,
    PROTOCOL_VERSION_META_KEY,
    SERVER_INFO_META_KEY,
    ErrorData,
    methods,
)
from mcp.types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import ValidationError
from pydantic_core import from_json, to_json

from hookgate.mcp_proxy.proxy import McpProxy, outbound_params
from hookgate.mcp_proxy.stdio import LineWriter

__all__ = ["FastToolCalls"]

log = logging.getLogger("hookgate.mcp_proxy")

_MODERN = "modern"
_LEGACY = "legacy"


class FastToolCalls:
    """The ``tap`` of the proxy's stdio reader: serves ``tools/call`` requests itself."""

    def __init__(self, proxy: McpProxy, writer: LineWriter) -> None:
        self._proxy = proxy
        self._writer = writer
        self._era: str | None = None
        #: Calls in flight by the client's request id (for its cancellations).
        self._calls: dict[Any, asyncio.Task[None]] = {}

    @asynccontextmanager
    async def serving(self) -> AsyncIterator[FastToolCalls]:
        try:
            yield self
        finally:
            calls = list(self._calls.values())
            for call in calls:
                call.cancel()
            if calls:
                await asyncio.gather(*calls, return_exceptions=True)

    def tap(self, line: bytes) -> bool:
        """True when ``line`` was taken here; False hands it to the SDK as it is."""
        try:
            return self._take(line)
        except Exception:  # a bug here must not end the connection: the SDK answers instead
            log.exception("the tools/call fast path failed on a message; left to the SDK")
            return False

    def _take(self, line: bytes) -> bool:
        hot = b"tools/call" in line or b"notifications/cancelled" in line
        if not hot and self._era is not None:
            return False
        try:
            message = from_json(line)
        except ValueError:
            return False
        if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
            return False
        method, params = message.get("method"), message.get("params")
        if not isinstance(method, str) or not (params is None or isinstance(params, dict)):
            return False
        if "id" not in message:
            return method == "notifications/cancelled" and self._cancel(params)
        if self._era is None:
            # The SDK's rule: the first request decides the connection's era, once.
            modern = method != "initialize" and _has_envelope(params)
            self._era = _MODERN if modern else _LEGACY
        if method != "tools/call":
            return False
        request_id = message["id"]
        if isinstance(request_id, bool) or not isinstance(request_id, str | int):
            return False
        if request_id in self._calls:
            return False  # a duplicate id is the SDK's to refuse
        version = self._version(params)
        if version is None:
            return False
        try:
            methods.validate_client_request("tools/call", version, params)
        except (KeyError, ValidationError):
            return False
        assert params is not None
        call = asyncio.get_running_loop().create_task(self._serve(request_id, params, version))
        self._calls[request_id] = call
        return True

    def _version(self, params: Mapping[str, Any] | None) -> str | None:
        """The protocol version this request is served at, or None to leave it to the SDK."""
        if self._era == _MODERN:
            route = classify_inbound_request({"method": "tools/call", "params": params})
            if isinstance(route, InboundLadderRejection):
                return None
            return route.protocol_version
        if _has_envelope(params):
            return None  # refused on a handshake connection; the SDK words it
        return self._proxy.handshake_version  # None until initialize was answered

    def _cancel(self, params: Mapping[str, Any] | None) -> bool:
        request_id = (params or {}).get("requestId")
        if isinstance(request_id, bool) or not isinstance(request_id, str | int):
            return False
        call = self._calls.get(request_id)
        if call is None:
            return False  # not one of ours: the SDK applies it
        call.cancel()
        return True

    async def _serve(self, request_id: Any, params: dict[str, Any], version: str) -> None:
        modern = version in MODERN_PROTOCOL_VERSIONS
        try:
            result = await self._proxy.tool_call(
                params["name"],
                params.get("arguments"),
                request_id=request_id,
                session_id=self._proxy.session_id,
                outbound=outbound_params(params),
                on_progress=self._progress_relay(params),
            )
            answer: dict[str, Any] = {"result": self._shaped(result, version, modern)}
        except asyncio.CancelledError:
            return  # the client cancelled: no answer (the upstream has been told)
        except Exception as exc:
            answer = {"error": _error_data(exc, modern).model_dump(by_alias=True,
                                                                  exclude_none=True)}
        finally:
            self._calls.pop(request_id, None)
        data = _dumps({"jsonrpc": "2.0", "id": request_id, **answer})
        try:
            await self._writer.write_line(data)
        except Exception:
            log.debug("the client went away before the answer to %r", request_id)

    def _shaped(self, result: dict[str, Any], version: str, modern: bool) -> dict[str, Any]:
        """The result as the SDK's server would send it at ``version``."""
        if modern and "resultType" not in result:
            result = {**result, "resultType": "complete"}
        try:
            wire = methods.serialize_server_result("tools/call", version, result)
        except ValidationError:
            log.exception("the answer to tools/call is not a valid tool result")
            invalid = "Handler returned an invalid result"  # the SDK's words
            raise MCPError(code=INTERNAL_ERROR, message=invalid) from None
        if modern:
            meta = wire.get("_meta")
            if meta is None or (isinstance(meta, dict) and meta.get(SERVER_INFO_META_KEY) is None):
                stamp = self._proxy.server.server_info_stamp
                wire["_meta"] = {**(meta or {}), SERVER_INFO_META_KEY: stamp}
        return wire

    def _progress_relay(self, params: Mapping[str, Any]) -> Any:
        """Progress from the upstream, sent to the client under the client's own token."""
        meta = params.get("_meta")
        token = meta.get("progressToken") if isinstance(meta, Mapping) else None
        if not isinstance(token, str | int) or isinstance(token, bool):
            return None
        writer = self._writer

        async def relay(progress: float, total: float | None, message: str | None) -> None:
            note: dict[str, Any] = {"progressToken": token, "progress": progress}
            if total is not None:
                note["total"] = total
            if message is not None:
                note["message"] = message
            data = {"jsonrpc": "2.0", "method": "notifications/progress", "params": note}
            await writer.write_line(_dumps(data))

        return relay


def _dumps(message: dict[str, Any]) -> bytes:
    return to_json(message)


def _has_envelope(params: Mapping[str, Any] | None) -> bool:
    meta = (params or {}).get("_meta")
    return isinstance(meta, Mapping) and PROTOCOL_VERSION_META_KEY in meta


def _error_data(exc: Exception, modern: bool) -> ErrorData:
    """The wire error for a failed call, as the SDK's serving loop of that era makes it."""
    if modern:
        return modern_error_data(exc)
    error = handler_exception_to_error_data(exc)
    if error is None:
        log.exception("tools/call failed", exc_info=exc)
        error = ErrorData(code=0, message=str(exc))
    return error
