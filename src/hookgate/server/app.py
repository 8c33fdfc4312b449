"""The ASGI application: ``/ws``, the REST mirror, ``/healthz`` and ``/readyz``, ``/metrics``
and the panel.

:func:`create_app` takes an async factory for the :class:`Gateway` so the store is opened on
the server's own event loop; the app's lifespan starts the gateway and, on shutdown, closes
it gracefully (in-flight requests finish, background hooks drain, the audit log is flushed).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Final

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Mount, Route, WebSocketRoute
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from hookgate.integration_registry import integrations, resolve
from hookgate.server.audit_export import export_routes
from hookgate.server.errors import ApiError
from hookgate.server.gateway import Gateway
from hookgate.server.metrics import CONTENT_TYPE
from hookgate.server.openapi import openapi_document
from hookgate.server.probes import HEALTH_PATH, READY_PATH, healthz, readyz
from hookgate.server.rest import (
    API_PREFIX,
    authenticate,
    error_response,
    json_response,
    rest_routes,
)
from hookgate.server.ws import websocket_endpoint

__all__ = ["STATIC_DIR", "create_app"]

#: The web panel's files (issue #7); served at ``/``.
STATIC_DIR: Final = Path(__file__).parent / "static"
_PANEL_HEADERS: Final = (
    (b"content-security-policy", b"default-src 'self'; connect-src 'self'"),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
)


class _PanelFiles:
    """Static files with the panel's security headers."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = [*message.get("headers", []), *_PANEL_HEADERS]
            await send(message)

        await self.app(scope, receive, send_with_headers)


async def metrics(request: Request) -> Response:
    gateway: Gateway = request.app.state.gateway
    try:
        who = await authenticate(request)
        if not who.master:
            # Hook ids, breaker states and traffic of every tenant: the operator's view.
            raise ApiError("UNAUTHORIZED", "/metrics covers every tenant: it needs master scope")
    except ApiError as exc:
        return error_response(exc)
    return Response(gateway.metrics.render(), media_type=CONTENT_TYPE)


async def openapi(request: Request) -> Response:
    try:
        await authenticate(request)
    except ApiError as exc:
        return error_response(exc)
    return json_response(request.app.state.openapi)


def _integration_routes() -> list[BaseRoute]:
    """The routes the integrations' records name (Claude Code's hook endpoint)."""
    return [
        route for record in integrations() for path in record.routes for route in resolve(path)()
    ]


def create_app(make_gateway: Callable[[], Awaitable[Gateway]]) -> Starlette:
    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        gateway = await make_gateway()
        await gateway.start()
        app.state.gateway = gateway
        try:
            yield
        finally:
            await gateway.close()

    routes = [
        Route(HEALTH_PATH, healthz, methods=["GET"]),
        Route(READY_PATH, readyz, methods=["GET"]),
        Route("/metrics", metrics, methods=["GET"]),
        Route(API_PREFIX + "/openapi.json", openapi, methods=["GET"]),
        WebSocketRoute("/ws", websocket_endpoint),
        *export_routes(),
        *rest_routes(),
        *_integration_routes(),
        Mount("/", app=_PanelFiles(StaticFiles(directory=STATIC_DIR, html=True)), name="panel"),
    ]
    app = Starlette(routes=routes, lifespan=lifespan)
    app.state.openapi = openapi_document()
    return app
