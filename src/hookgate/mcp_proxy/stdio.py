"""The proxy's own stdin/stdout as MCP message streams, without a thread per line.

The SDK's ``stdio_server`` reads and writes through ``anyio.wrap_file``, which hands every
line to a worker thread and back; on the proxy's hot path that costs more than the rest of a
forwarded call. When stdin and stdout are pipes (how MCP clients start servers) the same
streams are served by the event loop directly; otherwise the SDK's transport is used.

Like the SDK's, this keeps the wire clean: while serving, fd 0 reads /dev/null and fd 1
points at stderr, so a hook's stray ``print`` or a child's output cannot corrupt the
protocol stream.
"""

from __future__ import annotations

import asyncio
import os
import stat
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import anyio
from mcp import types
from mcp.server.stdio import stdio_server
from mcp.shared.message import SessionMessage

__all__ = ["LINE_LIMIT", "LineReader", "LineWriter", "proxy_stdio"]

LINE_LIMIT = 64 * 1024 * 1024  # one JSON-RPC message per line; tool results can be large


def _is_pipe(fd: int) -> bool:
    try:
        mode = os.fstat(fd).st_mode
    except OSError:
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)


@asynccontextmanager
async def proxy_stdio() -> AsyncIterator[tuple[Any, Any]]:
    """``(read_stream, write_stream)`` over this process's stdin and stdout."""
    if not (_is_pipe(0) and _is_pipe(1)):
        async with stdio_server() as streams:
            yield streams
        return
    wire_in, wire_out = os.dup(0), os.dup(1)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    os.dup2(2, 1)
    try:
        async with _pipe_streams(wire_in, wire_out) as streams:
            yield streams
    finally:
        # A hook's buffered print must reach the log, not the wire restored below.
        sys.stdout.flush()
        os.dup2(wire_in, 0)
        os.dup2(wire_out, 1)
        os.close(wire_in)
        os.close(wire_out)


@asynccontextmanager
async def _pipe_streams(fd_in: int, fd_out: int) -> AsyncIterator[tuple[Any, Any]]:
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=LINE_LIMIT)
    in_file = os.fdopen(os.dup(fd_in), "rb", buffering=0)
    out_file = os.fdopen(os.dup(fd_out), "wb", buffering=0)
    read_transport, _ = await loop.connect_read_pipe(
        lambda: asyncio.StreamReaderProtocol(reader), in_file
    )
    write_transport, protocol = await loop.connect_write_pipe(
        asyncio.streams.FlowControlMixin, out_file
    )
    writer = asyncio.StreamWriter(write_transport, protocol, None, loop)
    try:
        yield LineReader(reader), LineWriter(writer)
    finally:
        read_transport.close()
        write_transport.close()


class LineReader:
    """The SDK's read-stream protocol over a pipe: one JSON-RPC message per line, parsed in
    the reading task itself (no relay task, no memory stream in between).

    ``tap``, when set, sees each raw line first; a line it returns True for was handled
    there (the proxy's fast paths) and never reaches the SDK.
    """

    def __init__(
        self, reader: asyncio.StreamReader, tap: Callable[[bytes], bool] | None = None
    ) -> None:
        self._reader = reader
        self.tap = tap

    async def receive(self) -> SessionMessage | Exception:
        while True:
            line = await self._reader.readline()
            if not line:
                raise anyio.EndOfStream
            if line.strip():
                item = self.handle(line)
                if item is not None:
                    return item

    def handle(self, line: bytes) -> SessionMessage | Exception | None:
        """One line as the SDK's message (an exception for a malformed one, which the SDK
        answers or reports), or None when ``tap`` took it."""
        if self.tap is not None and self.tap(line):
            return None
        try:
            message = types.jsonrpc_message_adapter.validate_json(line, by_name=False)
        except Exception as exc:  # the dispatcher answers a parse error for it
            return exc
        return SessionMessage(message)

    def __aiter__(self) -> LineReader:
        return self

    async def __anext__(self) -> SessionMessage | Exception:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    async def aclose(self) -> None:
        return None

    async def __aenter__(self) -> LineReader:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


class LineWriter:
    """The SDK's write-stream protocol over a pipe: each message written by its sender.

    ``write_line`` sends a message already in wire form (the fast paths); every message is
    one ``write`` of a whole line, so lines from different tasks never interleave.
    """

    def __init__(self, writer: asyncio.StreamWriter) -> None:
        self._writer = writer

    async def send(self, item: SessionMessage, /) -> None:
        data = item.message.model_dump_json(by_alias=True, exclude_unset=True)
        await self.write_line(data.encode())

    async def write_line(self, data: bytes) -> None:
        self.write_now(data)
        await self._writer.drain()

    def write_now(self, data: bytes) -> None:
        """Queue one line without waiting for the pipe (small messages: notifications)."""
        if self._writer.is_closing():
            raise anyio.ClosedResourceError
        self._writer.write(data + b"\n")

    async def aclose(self) -> None:
        return None  # the pipe is closed with the context that opened it

    async def __aenter__(self) -> LineWriter:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()
