"""Running a proxy: on stdio (one client) or as a streamable-HTTP server (many clients)."""

from __future__ import annotations

import logging
from typing import Any

from mcp.server.runner import serve_dual_era_loop

from hookgate.mcp_proxy.fast_calls import FastToolCalls
from hookgate.mcp_proxy.http_guard import BearerAuth, HttpGuard
from hookgate.mcp_proxy.proxy import McpProxy
from hookgate.mcp_proxy.stdio import LineReader, LineWriter, proxy_stdio

__all__ = ["serve_http", "serve_stdio"]

log = logging.getLogger("hookgate.mcp_proxy")


async def serve_stdio(proxy: McpProxy) -> None:
    """Serve one client on this process's stdin/stdout until it closes stdin."""
    async with proxy.running(), proxy_stdio() as (read, write):
        if isinstance(read, LineReader) and isinstance(write, LineWriter):
            # tools/call is answered by the fast path; everything else by the SDK's server.
            fast = FastToolCalls(proxy, write)
            read.tap = fast.tap
            async with fast.serving():
                await _serve(proxy, read, write)
        else:
            await _serve(proxy, read, write)


async def _serve(proxy: McpProxy, read: Any, write: Any) -> None:
    # No fixed initialization options: the answer to `initialize` is built when it
    # arrives, from the upstream's capabilities (see McpProxy.capabilities).
    await serve_dual_era_loop(proxy.server, read, write, lifespan_state={})


async def serve_http(
    proxy: McpProxy, host: str, port: int, *, path: str = "/mcp", guard: HttpGuard | None = None
) -> None:
    """Serve streamable HTTP at ``http://host:port/mcp`` until cancelled, admitting only
    requests ``guard`` allows (by default: loopback and the listen address, no token)."""
    import uvicorn

    guard = guard or HttpGuard.build(host, port)
    app: Any = proxy.server.streamable_http_app(
        streamable_http_path=path, host=host, transport_security=guard.transport_security()
    )
    if guard.token is not None:
        app = BearerAuth(app, guard.token)
    elif host not in ("127.0.0.1", "localhost", "::1"):
        log.warning("hookgate mcp-proxy: listening on %s without a bearer token "
                    "(--auth-token-file); any client that reaches it may call tools", host)
    config = uvicorn.Config(app, host=host, port=port, log_level="warning", lifespan="on")
    server = uvicorn.Server(config)
    async with proxy.running():
        log.warning("hookgate mcp-proxy: serving MCP at http://%s:%d%s", host, port, path)
        await server.serve()
