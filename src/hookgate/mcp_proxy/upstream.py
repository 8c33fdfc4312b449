"""The MCP server behind the proxy: started (or reached) on demand, restarted after it dies.

One :class:`Upstream` owns at most one live connection at a time. The connection runs in a
task of the proxy's task group; requests from any downstream task go through its JSON-RPC
dispatcher as raw ``(method, params)`` so the proxy forwards what the client sent, untouched.
Every item the transport delivers passes a relay first: the relay notices the end of the
stream (the server exited) and anything that is not JSON-RPC (the server answered garbage),
records why, and closes the connection so waiting requests fail at once instead of hanging.
The next request then starts a fresh connection.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass, field
from typing import Any, TextIO, cast

import anyio
import anyio.abc
from mcp import types
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from mcp.shared.jsonrpc_dispatcher import JSONRPCDispatcher
from mcp.shared.message import SessionMessage
from mcp.types import CONNECTION_CLOSED, INTERNAL_ERROR, REQUEST_TIMEOUT

from hookgate.errors import HookgateError
from hookgate.handlers.subprocess.runner import shorten
from hookgate.mcp_proxy.child import ChannelClosed, ChannelTimeout, RawChannel, child_streams

__all__ = ["ServerRequests", "Upstream", "UpstreamError", "UpstreamSpec"]

log = logging.getLogger("hookgate.mcp_proxy.upstream")

#: The HTTP header the streamable-HTTP transport needs on every request after the handshake.
_PROTOCOL_HEADER = "mcp-protocol-version"

#: Read stream, write stream, and the raw channel of a command upstream (None over HTTP).
TransportStreams = tuple[Any, Any, RawChannel | None]
NotificationSink = Callable[[types.ServerNotification], Awaitable[None]]


class UpstreamError(HookgateError, MCPError):
    """The upstream could not answer: it did not start, died, timed out or sent garbage."""

    def __init__(self, message: str, code: int = INTERNAL_ERROR) -> None:
        super().__init__(code=code, message=message)


@dataclass(frozen=True, slots=True)
class UpstreamSpec:
    """Where the upstream server is: a command to start (stdio) or a streamable-HTTP URL."""

    command: tuple[str, ...] = ()
    url: str | None = None
    env: dict[str, str] | None = None
    cwd: str | None = None

    def __post_init__(self) -> None:
        if bool(self.command) == bool(self.url):
            raise ValueError("an upstream is either a command or a URL")


@dataclass(slots=True)
class ServerRequests:
    """How requests the upstream server sends to its client reach the real client.

    Each is ``None`` when the client did not declare the capability, so the upstream is not
    told the proxy can do what the client cannot.
    """

    sampling: Callable[[Any, types.CreateMessageRequestParams], Awaitable[Any]] | None = None
    elicitation: Callable[[Any, types.ElicitRequestParams], Awaitable[Any]] | None = None
    roots: Callable[[Any], Awaitable[Any]] | None = None


@dataclass(slots=True)
class _Live:
    """One connection to the upstream, from start to close."""

    dispatcher: JSONRPCDispatcher | None = None
    #: A command upstream's raw channel: the proxy's own requests skip the dispatcher.
    channel: RawChannel | None = None
    result: types.InitializeResult | None = None
    ready: anyio.Event = field(default_factory=anyio.Event)
    closed: anyio.Event = field(default_factory=anyio.Event)
    scope: anyio.CancelScope = field(default_factory=anyio.CancelScope)
    stopping: bool = False
    fault: str | None = None

    def stop(self) -> None:
        self.stopping = True
        self.scope.cancel()

    def close(self) -> None:
        """Mark the connection over; requests waiting on it fail at once."""
        self.closed.set()
        if self.channel is not None:
            self.channel.close()


class Upstream:
    """A restartable connection to one upstream MCP server."""

    def __init__(
        self,
        spec: UpstreamSpec,
        *,
        on_notification: NotificationSink,
        server_requests: Callable[[], ServerRequests] = ServerRequests,
        init_timeout_s: float = 30.0,
        request_timeout_s: float | None = 300.0,
        label: str = "upstream",
    ) -> None:
        self.spec = spec
        self.label = label
        self.init_timeout_s = init_timeout_s
        self.request_timeout_s = request_timeout_s
        self._on_notification = on_notification
        self._server_requests = server_requests
        self._group: anyio.abc.TaskGroup | None = None
        self._live: _Live | None = None
        self._lock = anyio.Lock()
        self.starts = 0

    # -- lifecycle ----------------------------------------------------------------------

    @asynccontextmanager
    async def running(self) -> AsyncIterator[Upstream]:
        """Own the task group the connections run in; close the live one on exit."""
        async with anyio.create_task_group() as group:
            self._group = group
            try:
                yield self
            finally:
                self._group = None
                if self._live is not None:
                    self._live.stop()

    @property
    def initialize_result(self) -> types.InitializeResult | None:
        live = self._live
        return live.result if live is not None and not live.closed.is_set() else None

    async def connect(self) -> _Live:
        """The live connection, started (or restarted) if there is none."""
        live = self._live
        if live is not None and live.ready.is_set() and not live.closed.is_set():
            return live
        async with self._lock:
            live = self._live
            if live is not None and live.ready.is_set() and not live.closed.is_set():
                return live
            if self._group is None:
                raise UpstreamError("the proxy is shutting down")
            live = _Live()
            self._live = live
            self.starts += 1
            if self.starts > 1:
                log.warning("MCP server %s: starting again", self.label)
            self._group.start_soon(self._serve, live)
            with anyio.move_on_after(self.init_timeout_s):
                await _first_of(live.ready, live.closed)
            if live.ready.is_set() and not live.closed.is_set():
                return live
            if live.fault is None:
                live.fault = f"did not finish initialising within {self.init_timeout_s:g}s"
            live.stop()
            # The label, not the command line: arguments may carry tokens.
            raise UpstreamError(f"MCP server {self.label} {live.fault}")

    async def request(
        self,
        method: str,
        params: dict[str, Any] | None,
        *,
        on_progress: Callable[[float, float | None, str | None], Awaitable[None]] | None = None,
    ) -> dict[str, Any]:
        """Send one request as it is; return the raw result dict.

        An error the upstream answered is raised as the same :class:`MCPError`; a dead,
        hung or garbling upstream raises :class:`UpstreamError`.
        """
        live = await self.connect()
        assert live.dispatcher is not None and live.result is not None
        if live.channel is not None:
            return await self._raw_request(live, live.channel, method, params, on_progress)
        opts: dict[str, Any] = {"headers": {_PROTOCOL_HEADER: live.result.protocol_version}}
        if self.request_timeout_s is not None:
            opts["timeout"] = self.request_timeout_s
        if on_progress is not None:
            opts["on_progress"] = on_progress
        try:
            return await live.dispatcher.send_raw_request(method, params, opts)  # type: ignore[arg-type]
        except MCPError as exc:
            if exc.code == CONNECTION_CLOSED or live.closed.is_set():
                raise UpstreamError(
                    f"MCP server {self.label} failed during {method}: "
                    f"{live.fault or 'connection closed'}; it is restarted on the next request"
                ) from None
            if exc.code == REQUEST_TIMEOUT:
                raise UpstreamError(
                    f"MCP server {self.label} did not answer {method} within "
                    f"{self.request_timeout_s:g}s",
                    code=REQUEST_TIMEOUT,
                ) from None
            raise

    async def _raw_request(
        self,
        live: _Live,
        channel: RawChannel,
        method: str,
        params: dict[str, Any] | None,
        on_progress: Callable[[float, float | None, str | None], Awaitable[None]] | None,
    ) -> dict[str, Any]:
        try:
            return await channel.request(
                method, params, timeout_s=self.request_timeout_s, on_progress=on_progress
            )
        except ChannelClosed:
            raise UpstreamError(
                f"MCP server {self.label} failed during {method}: "
                f"{live.fault or 'connection closed'}; it is restarted on the next request"
            ) from None
        except ChannelTimeout:
            raise UpstreamError(
                f"MCP server {self.label} did not answer {method} within "
                f"{self.request_timeout_s:g}s",
                code=REQUEST_TIMEOUT,
            ) from None

    async def notify(self, method: str, params: dict[str, Any] | None) -> None:
        """Forward a client notification if a connection is up (none is started for it)."""
        live = self._live
        if live is None or live.dispatcher is None or live.closed.is_set() or live.result is None:
            return
        opts: Any = {"headers": {_PROTOCOL_HEADER: live.result.protocol_version}}
        try:
            await live.dispatcher.notify(method, params, opts)
        except (MCPError, anyio.BrokenResourceError, anyio.ClosedResourceError):
            log.debug("%s: dropped %s, connection closed", self.label, method)

    # -- one connection -----------------------------------------------------------------

    async def _serve(self, live: _Live) -> None:
        try:
            with live.scope:
                await self._connection(live)
        except Exception as exc:
            if live.fault is None:
                live.fault = f"failed: {_describe(exc)}"
            log.error("MCP server %s: %s", self.label, live.fault)
        finally:
            live.close()

    async def _connection(self, live: _Live) -> None:
        async with self._transport() as (read, write, channel):
            dispatcher = JSONRPCDispatcher(_Watched(read, live, self.label), write)
            requests = self._server_requests()
            session = ClientSession(
                dispatcher=dispatcher,
                # The SDK types these as callback protocols; ours take the same arguments.
                sampling_callback=cast(Any, requests.sampling),
                elicitation_callback=cast(Any, requests.elicitation),
                list_roots_callback=cast(Any, requests.roots),
                message_handler=self._incoming,
            )
            async with session:
                try:
                    live.result = await session.initialize()
                except Exception as exc:
                    if live.fault is None:
                        live.fault = f"failed to initialise: {_describe(exc)}"
                    raise
                live.dispatcher = dispatcher
                live.channel = channel
                live.ready.set()
                log.info("%s: connected, protocol %s", self.label, live.result.protocol_version)
                await live.closed.wait()

    async def _incoming(self, message: Any) -> None:
        if isinstance(message, Exception):
            log.debug("%s: transport error %s", self.label, message)
            return
        try:
            await self._on_notification(message)
        except Exception:
            log.exception("%s: forwarding %s to the client failed", self.label,
                          getattr(message, "method", "?"))

    def _transport(self) -> AbstractAsyncContextManager[TransportStreams]:
        if self.spec.url is not None:
            return self._http(self.spec.url)
        return self._stdio()

    @asynccontextmanager
    async def _http(self, url: str) -> AsyncIterator[TransportStreams]:
        async with streamable_http_client(url) as (read, write):
            yield read, write, None

    @asynccontextmanager
    async def _stdio(self) -> AsyncIterator[TransportStreams]:
        stderr = _StderrToLog(self.label)
        try:
            async with child_streams(
                self.spec.command, self.spec.env, self.spec.cwd, stderr.writer
            ) as streams:
                stderr.spawned()
                yield streams
        finally:
            stderr.spawned()


class _Watched:
    """The transport's read stream, watched inline as the dispatcher reads it: its end (the
    server exited) and anything that is not JSON-RPC (the server answered garbage) are
    recorded as the connection's fault and end the stream, so waiting requests fail at once
    and the next request starts a new connection."""

    def __init__(self, inner: Any, live: _Live, label: str) -> None:
        self._inner = inner
        self._live = live
        self._label = label

    async def receive(self) -> SessionMessage:
        live = self._live
        if live.closed.is_set():
            raise anyio.EndOfStream
        try:
            item = await self._inner.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
            if live.fault is None:
                live.fault = "exited or closed its connection"
            if not live.stopping:
                log.error("MCP server %s %s", self._label, live.fault)
            live.close()
            raise anyio.EndOfStream from None
        if isinstance(item, Exception):
            live.fault = f"answered something that is not JSON-RPC ({shorten(str(item), 200)})"
            log.error("MCP server %s %s; closing it", self._label, live.fault)
            live.close()
            raise anyio.EndOfStream
        return item  # type: ignore[no-any-return]

    def __aiter__(self) -> _Watched:
        return self

    async def __anext__(self) -> SessionMessage:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def __aenter__(self) -> _Watched:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


class _StderrToLog:
    """A pipe for the child's stderr; a thread turns its lines into log records."""

    def __init__(self, label: str) -> None:
        read_fd, write_fd = os.pipe()
        self.writer = cast(TextIO, os.fdopen(write_fd, "w"))
        self._label = label
        self._thread = threading.Thread(target=self._pump, args=(read_fd,), daemon=True,
                                        name=f"{label}-stderr")
        self._thread.start()

    def spawned(self) -> None:
        # The child holds its own copy; ours must go or the reader never sees EOF.
        if not self.writer.closed:
            self.writer.close()

    def _pump(self, read_fd: int) -> None:
        with os.fdopen(read_fd, "r", errors="replace") as lines:
            for line in lines:
                text = line.rstrip("\n")
                if text:
                    log.warning("%s stderr: %s", self._label, text)


async def _first_of(*events: anyio.Event) -> None:
    """Wait until any of ``events`` is set."""
    async with anyio.create_task_group() as group:

        async def wait(event: anyio.Event) -> None:
            await event.wait()
            group.cancel_scope.cancel()

        for event in events:
            group.start_soon(wait, event)


def _describe(exc: BaseException) -> str:
    if isinstance(exc, MCPError):
        return exc.message
    if isinstance(exc, BaseExceptionGroup):
        return "; ".join(_describe(inner) for inner in _leaves(exc))
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


def _leaves(group: BaseExceptionGroup[BaseException]) -> Sequence[BaseException]:
    found: list[BaseException] = []
    for inner in group.exceptions:
        if isinstance(inner, BaseExceptionGroup):
            found.extend(_leaves(inner))
        else:
            found.append(inner)
    return found
