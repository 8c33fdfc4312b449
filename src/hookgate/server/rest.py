"""The REST mirror under ``/api/v1``: the same methods as the WebSocket, one route each.

Path parameters and the query string (GET, DELETE) or the JSON body (POST, PATCH) become the
method's params. Success answers the method's payload as JSON; failure answers
``{"error": {"code", "message", "details?"}}`` with the code's HTTP status.
"""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable
from typing import Any

import orjson
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from hookgate.log import log_event
from hookgate.server.auth import Principal, bearer_token
from hookgate.server.errors import ApiError
from hookgate.server.gateway import Gateway
from hookgate.server.method_table import METHODS
from hookgate.server.methods import Method, call_method

__all__ = ["API_PREFIX", "CREATES", "authenticate", "json_response", "rest_routes"]

API_PREFIX = "/api/v1"
#: method: (param, its snake_case spelling, default seconds, most seconds). A REST call that
#: waits for a person (``hooks.dispatch``, ``approvals.wait``) may wait the approval's whole
#: lifetime, like a WebSocket call: it is not in this table.
_REST_WAITS: dict[str, tuple[str, str, float, float]] = {
    "approvals.watch": ("timeoutS", "timeout_s", 5.0, 5.0),
}


#: Methods answered with 201 Created.
CREATES = frozenset({"hooks.create", "keys.create"})


def json_response(payload: Any, status: int = 200) -> Response:
    return Response(
        orjson.dumps(payload, default=str, option=orjson.OPT_NON_STR_KEYS),
        status_code=status,
        media_type="application/json",
    )


def error_response(error: ApiError) -> Response:
    response = json_response({"error": error.to_dict()}, error.status)
    if error.status == 401:
        response.headers["WWW-Authenticate"] = 'Bearer realm="hookgate"'
    return response


async def authenticate(request: Request) -> Principal:
    gateway: Gateway = request.app.state.gateway
    header = request.headers.get("authorization")
    token = bearer_token(header)
    if token is None and header:
        raise ApiError.unauthenticated("Authorization header must be 'Bearer <key>'")
    return await gateway.auth.authenticate(token)


async def read_json(request: Request, limit: int) -> Any:
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise ApiError(
            "PAYLOAD_TOO_LARGE", f"body of {declared} bytes is over the {limit}-byte limit"
        )
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise ApiError("PAYLOAD_TOO_LARGE", f"body is over the {limit}-byte limit")
        chunks.append(chunk)
    body = b"".join(chunks)
    if not body.strip():
        return {}
    try:
        return orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        raise ApiError("INVALID_REQUEST", f"body is not valid JSON: {exc}") from None


async def params_for(method: Method, request: Request) -> dict[str, Any]:
    gateway: Gateway = request.app.state.gateway
    verb = method.http[0]
    params: dict[str, Any] = {}
    if verb in ("POST", "PATCH"):
        body = await read_json(request, gateway.options.max_frame_bytes)
        if method.name == "hooks.update":
            params = {"updates": body}
            expected = request.query_params.get("expectedVersion")
            if expected is not None:
                params["expectedVersion"] = expected
        elif isinstance(body, dict):
            params = body
            header = request.headers.get("traceparent")
            if method.name == "hooks.dispatch" and header and "traceparent" not in params:
                params["traceparent"] = header  # W3C trace context, the usual way over HTTP
        else:
            raise ApiError("INVALID_REQUEST", "the body must be a JSON object")
    elif method.name != "connect":
        for key in request.query_params:
            values = request.query_params.getlist(key)
            params[key] = values[0] if len(values) == 1 else values
    params.update(request.path_params)
    _bound_waits(method.name, params)
    return params


def _bound_waits(name: str, params: dict[str, Any]) -> None:
    """HTTP requests wait a bounded time (for a person, or for a change); the answer says
    what to ask next."""
    bound = _REST_WAITS.get(name)
    if bound is None:
        return
    key, snake, default, most = bound
    raw = params.pop(snake, params.get(key, default))
    try:
        wait = float(raw)
    except (TypeError, ValueError):
        return  # left for the params model to report
    params[key] = min(max(wait, 0.0), most)


def _endpoint(method: Method) -> Callable[[Request], Awaitable[Response]]:
    async def endpoint(request: Request) -> Response:
        gateway: Gateway = request.app.state.gateway
        try:
            principal = await authenticate(request)
            params = await params_for(method, request)
            gateway.enter()
            try:
                payload = await call_method(gateway, method, principal, params)
            finally:
                gateway.leave()
        except ApiError as exc:
            gateway.metrics.count_request(method.name, "rest", exc.code)
            return error_response(exc)
        except Exception as exc:
            incident = uuid.uuid4().hex[:12]
            log_event(
                "hookgate.request_failed", method=method.name, incident=incident, error=repr(exc)
            )
            gateway.metrics.count_request(method.name, "rest", "INTERNAL")
            return error_response(
                ApiError("INTERNAL", f"internal error (incident {incident}); see the log")
            )
        gateway.metrics.count_request(method.name, "rest", "ok")
        status = 201 if method.name in CREATES else 200
        response = json_response(payload, status)
        if method.name == "keys.create":
            response.headers["Cache-Control"] = "no-store"  # the answer holds the key's secret
        return response

    endpoint.__name__ = method.name.replace(".", "_")
    return endpoint


def rest_routes() -> list[Route]:
    # Fixed paths first, so /hooks/test is not taken for a hook id.
    ordered = sorted(METHODS.values(), key=lambda m: "{" in m.http[1])
    return [
        Route(API_PREFIX + method.http[1], _endpoint(method), methods=[method.http[0]])
        for method in ordered
    ]
