"""The WebSocket protocol at ``/ws``: request and response frames, exactly as the seed shows.

Request ``{"type": "req", "id", "method", "params"}``; response
``{"type": "res", "id", "ok": true, "payload"}`` or ``{"type": "res", "id", "ok": false,
"error": {"code", "message", "details?"}}``. A frame that cannot be understood gets an
error response and the connection stays open; so does an unknown method or a frame over the
size limit. Requests on one connection run concurrently (answers carry their request id), up
to a bound per connection.

Authentication: ``Authorization: Bearer <key>`` on the upgrade request, or, for browsers,
which cannot set that header, a first ``connect`` frame with ``{"apiKey": …}``.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import uuid
from typing import Any, Final

import orjson
from starlette.responses import Response
from starlette.websockets import WebSocket, WebSocketDisconnect

from hookgate.log import log_event
from hookgate.server.auth import Principal, bearer_token
from hookgate.server.errors import ApiError
from hookgate.server.gateway import Gateway
from hookgate.server.method_table import METHODS, connect_payload
from hookgate.server.methods import Method, call_method

__all__ = ["MAX_INFLIGHT", "websocket_endpoint"]

#: Requests one connection may have running at once; more wait for a slot (backpressure).
MAX_INFLIGHT: Final = 64
#: Close code for a key that stopped being valid (4000-4999 are application codes).
CLOSE_UNAUTHORIZED: Final = 4401
_MAX_ID_LENGTH: Final = 128
#: A top-level ``"id"`` among the first keys of a frame, before any nested container: how an
#: oversized frame (never parsed) still gets an answer its sender can match to its request.
_LEADING_ID: Final = re.compile(
    rf'[{{,]\s*"id"\s*:\s*("[^"\\]{{1,{_MAX_ID_LENGTH}}}"|-?[0-9]{{1,18}})\s*[,}}]'
)
_ID_SCAN_BYTES: Final = 512


def encode(frame: dict[str, Any]) -> str:
    return orjson.dumps(frame, default=str, option=orjson.OPT_NON_STR_KEYS).decode()


def error_frame(frame_id: Any, error: ApiError) -> dict[str, Any]:
    return {"type": "res", "id": frame_id, "ok": False, "error": error.to_dict()}


def leading_id(raw: str | bytes) -> str | int | None:
    """The id of a frame too large to parse, when it stands among its first keys (hookgate's
    clients put it second, after ``type``), else ``None``: without it the sender would wait
    for an answer it cannot recognise."""
    head = raw[:_ID_SCAN_BYTES]
    text = head.decode("utf-8", "replace") if isinstance(head, bytes) else head
    start = text.find("{")
    if start < 0:
        return None
    nested = min((i for i in (text.find("{", start + 1), text.find("[", start + 1)) if i >= 0),
                 default=len(text))
    found = _LEADING_ID.search(text, start, nested + 1)
    if found is None:
        return None
    value = orjson.loads(found.group(1))
    return value if isinstance(value, str | int) else None


def denial(error: ApiError) -> Response:
    return Response(
        orjson.dumps({"error": error.to_dict()}),
        status_code=error.status,
        media_type="application/json",
    )


class _Connection:
    def __init__(self, ws: WebSocket, gateway: Gateway, principal: Principal | None) -> None:
        self.ws = ws
        self.gateway = gateway
        self.principal = principal
        self.slots = asyncio.Semaphore(MAX_INFLIGHT)
        self.tasks: set[asyncio.Task[None]] = set()
        self.closed = False

    async def send(self, frame: dict[str, Any]) -> None:
        if self.closed:
            return
        message = {"type": "websocket.send", "text": encode(frame)}
        try:
            # No lock: the server writes each frame whole once the transport is writable.
            await self.ws.send(message)
        except (WebSocketDisconnect, RuntimeError, OSError):
            self.closed = True  # the client went away; the work it asked for still finished

    async def run(self) -> None:
        limit = self.gateway.options.max_frame_bytes
        # One deadline for signing in, from the moment the socket opened: frames sent
        # meanwhile do not extend it.
        auth_deadline = asyncio.get_running_loop().time() + self.gateway.options.connect_timeout_s
        try:
            while True:
                if self.principal is None:
                    try:
                        async with asyncio.timeout_at(auth_deadline):
                            message = await self.ws.receive()
                    except TimeoutError:
                        await self.close(CLOSE_UNAUTHORIZED, "no connect frame in time")
                        return
                else:
                    message = await self.ws.receive()
                if message["type"] == "websocket.disconnect":
                    return
                raw = message.get("text")
                if raw is None:
                    raw = message.get("bytes") or b""
                if len(raw) > limit:
                    await self.send(
                        error_frame(
                            leading_id(raw),
                            ApiError(
                                "PAYLOAD_TOO_LARGE",
                                f"frame of {len(raw)} bytes is over the {limit}-byte limit",
                            ),
                        )
                    )
                    continue
                await self.handle(raw)
        finally:
            if self.tasks:
                # Requests only waiting for a person (or for a change to show) have nobody to
                # answer any more: stop them, so a closed tab or a shutdown does not wait on
                # them. The approvals stay in the store.
                approvals = self.gateway.approvals
                if approvals is not None:
                    for task in approvals.idle_waits(self.tasks):
                        task.cancel()
                # Let running requests finish: their hooks ran, and their rows must be recorded.
                await asyncio.gather(*self.tasks, return_exceptions=True)

    async def close(self, code: int, reason: str) -> None:
        self.closed = True
        with contextlib.suppress(Exception):
            await self.ws.close(code=code, reason=reason)

    async def handle(self, raw: str | bytes) -> None:
        try:
            frame = orjson.loads(raw)
        except orjson.JSONDecodeError as exc:
            await self.send(
                error_frame(None, ApiError("INVALID_FRAME", f"frame is not valid JSON: {exc}"))
            )
            return
        if not isinstance(frame, dict):
            await self.send(
                error_frame(None, ApiError("INVALID_FRAME", "a frame must be a JSON object"))
            )
            return
        frame_id = frame.get("id")
        if (
            isinstance(frame_id, bool)
            or not isinstance(frame_id, str | int)
            or (isinstance(frame_id, str) and not 0 < len(frame_id) <= _MAX_ID_LENGTH)
        ):
            await self.send(
                error_frame(
                    None,
                    ApiError(
                        "INVALID_FRAME",
                        f"a request frame needs an id (a string of 1 to {_MAX_ID_LENGTH} "
                        "characters)",
                    ),
                )
            )
            return
        if frame.get("type") != "req":
            await self.send(
                error_frame(
                    frame_id,
                    ApiError(
                        "INVALID_FRAME",
                        f"frame type must be 'req', got {frame.get('type')!r}",
                    ),
                )
            )
            return
        name = frame.get("method")
        method = METHODS.get(name) if isinstance(name, str) else None
        if method is None:
            message = (
                f"unknown method {name!r}; known methods: {', '.join(sorted(METHODS))}"
                if isinstance(name, str)
                else "a request frame needs a method (a string)"
            )
            code = "METHOD_NOT_FOUND" if isinstance(name, str) else "INVALID_FRAME"
            await self.send(error_frame(frame_id, ApiError(code, message)))
            return
        params = frame.get("params")
        if name == "connect":
            await self.connect(frame_id, params)
            return
        if self.principal is None:
            await self.send(
                error_frame(
                    frame_id,
                    ApiError.unauthenticated(
                        "not signed in: send a connect frame with your apiKey first"
                    ),
                )
            )
            return
        await self.slots.acquire()
        task = asyncio.get_running_loop().create_task(self.call(frame_id, method, params))
        self.tasks.add(task)
        task.add_done_callback(self._done)

    def _done(self, task: asyncio.Task[None]) -> None:
        self.tasks.discard(task)
        self.slots.release()

    async def connect(self, frame_id: Any, params: Any) -> None:
        key = params.get("apiKey") if isinstance(params, dict) else None
        try:
            if key is not None or self.principal is None:
                if key is not None and not isinstance(key, str):
                    raise ApiError("INVALID_REQUEST", "apiKey must be a string")
                self.principal = await self.gateway.auth.authenticate(key)
            payload = connect_payload(self.gateway, self.principal)
        except ApiError as exc:
            await self.send(error_frame(frame_id, exc))
            return
        await self.send({"type": "res", "id": frame_id, "ok": True, "payload": payload})

    async def call(self, frame_id: Any, method: Method, params: Any) -> None:
        gateway = self.gateway
        principal = self.principal
        assert principal is not None
        name = method.name
        auth = gateway.auth
        try:
            # The cache answers almost every time; the store is asked once it expires.
            if (
                auth.cached(principal.key_hash) is None
                and await auth.check_hash(principal.key_hash) is None
            ):
                await self.send(
                    error_frame(frame_id, ApiError.unauthenticated("API key revoked"))
                )
                await self.close(CLOSE_UNAUTHORIZED, "API key revoked")
                return
            gateway.enter()
            try:
                payload = await call_method(gateway, method, principal, params)
            finally:
                gateway.leave()
        except ApiError as exc:
            gateway.metrics.count_request(name, "ws", exc.code)
            await self.send(error_frame(frame_id, exc))
            return
        except Exception as exc:
            incident = uuid.uuid4().hex[:12]
            log_event("hookgate.request_failed", method=name, incident=incident, error=repr(exc))
            gateway.metrics.count_request(name, "ws", "INTERNAL")
            await self.send(
                error_frame(
                    frame_id,
                    ApiError("INTERNAL", f"internal error (incident {incident}); see the log"),
                )
            )
            return
        gateway.metrics.count_request(name, "ws", "ok")
        await self.send({"type": "res", "id": frame_id, "ok": True, "payload": payload})


async def websocket_endpoint(ws: WebSocket) -> None:
    gateway: Gateway = ws.app.state.gateway
    if gateway.draining:
        await ws.send_denial_response(
            denial(
                ApiError(
                    "UNAVAILABLE",
                    "this gateway replica is shutting down: retry on another one",
                    retryable=True,
                )
            )
        )
        return
    principal = None
    token = bearer_token(ws.headers.get("authorization"))
    if token is not None:
        try:
            principal = await gateway.auth.authenticate(token)
        except ApiError as exc:
            await ws.send_denial_response(denial(exc))
            return
    elif ws.headers.get("authorization"):
        await ws.send_denial_response(
            denial(ApiError.unauthenticated("Authorization header must be 'Bearer <key>'"))
        )
        return
    await ws.accept()
    gateway.metrics.connections.inc()
    await _Connection(ws, gateway, principal).run()
