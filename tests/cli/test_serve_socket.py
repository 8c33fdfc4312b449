"""The gateway's listening socket, accepted the way uvicorn accepts connections (asyncio)."""

from __future__ import annotations

import asyncio
import socket

import pytest

from hookgate.cli.serve import _bind


@pytest.mark.parametrize("host", ["127.0.0.1", "::1"])
async def test_connections_send_small_writes_at_once(host: str) -> None:
    """Nagle off on every accepted connection: a response's headers and body are two writes,
    and with Nagle on a keep-alive client waited for its own delayed ACK (40 ms) before each
    body arrived (every REST request after a connection's first took 44 ms instead of 2)."""
    sock = _bind(host, 0)
    nodelay: asyncio.Future[int] = asyncio.get_running_loop().create_future()

    async def accepted(_reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        nodelay.set_result(writer.get_extra_info("socket").getsockopt(
            socket.IPPROTO_TCP, socket.TCP_NODELAY))
        writer.close()

    server = await asyncio.start_server(accepted, sock=sock)
    async with server:
        _reader, writer = await asyncio.open_connection(host, sock.getsockname()[1])
        try:
            assert await asyncio.wait_for(nodelay, 10) == 1
        finally:
            writer.close()
            await writer.wait_closed()
