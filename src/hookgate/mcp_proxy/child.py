"""A command upstream as a child process, its requests sent and answered as raw lines.

The SDK's ``stdio_client`` moves every message through two relay tasks and memory streams
and validates it twice; on the proxy's hot path that costs about as much as the upstream's
own work. Here the child's pipes are served by the event loop directly: the proxy's own
requests (:meth:`RawChannel.request`) are written as JSON lines with ids of their own, and
their answers and progress are picked out of the child's output as it is read. Everything
else the child writes (its notifications, its requests to the client, the answer to the
SDK's ``initialize``) is validated with the SDK's types and handed to the SDK's dispatcher.

Shutdown follows the SDK's: close stdin, wait, then SIGTERM and SIGKILL to the process group.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import os
import signal
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any, TextIO

import anyio
from mcp import types
from mcp.client.stdio import get_default_environment
from mcp.shared.exceptions import MCPError
from mcp.shared.message import SessionMessage
from pydantic_core import from_json, to_json

from hookgate.errors import HookgateError
from hookgate.mcp_proxy.stdio import LINE_LIMIT, LineReader, LineWriter

__all__ = ["ChannelClosed", "ChannelTimeout", "ProgressSink", "RawChannel", "child_streams"]

log = logging.getLogger("hookgate.mcp_proxy.upstream")

#: Progress from the upstream for one request: (progress, total, message).
ProgressSink = Callable[[float, float | None, str | None], Awaitable[None]]
#: Seconds the child has to exit after its stdin closes, then after SIGTERM (the SDK's).
_EXIT_GRACE_S = 2.0
#: The id prefix of the proxy's own requests; the SDK's dispatcher numbers its own.
_ID_PREFIX = "hookgate-"


class ChannelClosed(HookgateError):
    """The connection ended while a request was waiting (the caller words the error)."""


class ChannelTimeout(HookgateError):
    """No answer within the request's timeout (the upstream has been told to cancel)."""


class RawChannel:
    """The proxy's own requests to one child, written and answered as raw JSON lines."""

    def __init__(self, writer: LineWriter) -> None:
        self._writer = writer
        self._ids = itertools.count(1)
        self._pending: dict[str, asyncio.Future[dict[str, Any]]] = {}
        self._progress: dict[str, ProgressSink] = {}
        self.closed = False

    async def request(
        self,
        method: str,
        params: dict[str, Any] | None,
        *,
        timeout_s: float | None,
        on_progress: ProgressSink | None = None,
    ) -> dict[str, Any]:
        """The result dict; an error answer raises :class:`MCPError` as the upstream sent it,
        a closed connection :class:`ChannelClosed`, no answer in time :class:`ChannelTimeout`."""
        if self.closed:
            raise ChannelClosed
        loop = asyncio.get_running_loop()
        request_id = f"{_ID_PREFIX}{next(self._ids)}"
        if on_progress is not None:
            # Progress comes back under a token of the proxy's, the request's own id.
            params = dict(params or {})
            params["_meta"] = {**(params.get("_meta") or {}), "progressToken": request_id}
            self._progress[request_id] = on_progress
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params is not None:
            message["params"] = params
        answer: asyncio.Future[dict[str, Any]] = loop.create_future()
        self._pending[request_id] = answer
        timer = None if timeout_s is None else loop.call_later(timeout_s, _expire, answer)
        try:
            try:
                # Not waiting for the pipe to drain: an upstream that stops reading must
                # still meet the request's timeout, which only the answer's wait is under.
                self._writer.write_now(to_json(message))
            except (anyio.ClosedResourceError, OSError):
                raise ChannelClosed from None
            response = await answer
        except ChannelTimeout:
            self._cancel_upstream(request_id, f"no answer within {timeout_s:g}s")
            raise
        except asyncio.CancelledError:
            self._cancel_upstream(request_id, "cancelled by the client")
            raise
        finally:
            if timer is not None:
                timer.cancel()
            self._pending.pop(request_id, None)
            self._progress.pop(request_id, None)
        error = response.get("error")
        if error is not None:
            raise MCPError(code=error["code"], message=error["message"], data=error.get("data"))
        return response["result"]  # type: ignore[no-any-return]

    def take(self, message: Any) -> bool | Awaitable[None]:
        """Settle ``message`` if it answers one of our requests (True); for progress on one
        of them, the relay to await (before reading on, so it reaches the client before the
        answer); False for anything else."""
        if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
            return False
        if "method" not in message:
            request_id = message.get("id")
            answer = self._pending.get(request_id) if isinstance(request_id, str) else None
            if answer is None or not _well_formed_response(message):
                return False  # the SDK's, or garbage its validation closes the connection for
            if not answer.done():
                answer.set_result(message)
            return True
        if message["method"] != "notifications/progress" or "id" in message:
            return False
        params = message.get("params")
        token = params.get("progressToken") if isinstance(params, dict) else None
        sink = self._progress.get(token) if isinstance(token, str) else None
        if sink is None or not isinstance(params, dict):
            return False
        progress, total = params.get("progress"), params.get("total")
        if not isinstance(progress, int | float) or isinstance(progress, bool):
            return False
        if total is not None and (not isinstance(total, int | float) or isinstance(total, bool)):
            return False
        note = params.get("message")
        return sink(float(progress), None if total is None else float(total),
                    note if isinstance(note, str) else None)

    def close(self) -> None:
        """The connection ended: every waiting request fails at once."""
        self.closed = True
        for answer in self._pending.values():
            if not answer.done():
                answer.set_exception(ChannelClosed())

    def _cancel_upstream(self, request_id: str, reason: str) -> None:
        if self.closed:
            return
        note = {"jsonrpc": "2.0", "method": "notifications/cancelled",
                "params": {"requestId": request_id, "reason": reason}}
        with contextlib.suppress(anyio.ClosedResourceError, OSError):
            self._writer.write_now(to_json(note))


def _expire(answer: asyncio.Future[dict[str, Any]]) -> None:
    if not answer.done():
        answer.set_exception(ChannelTimeout())


def _well_formed_response(message: dict[str, Any]) -> bool:
    if "result" in message:
        return isinstance(message["result"], dict) and "error" not in message
    error = message.get("error")
    return (
        isinstance(error, dict)
        and isinstance(error.get("code"), int)
        and isinstance(error.get("message"), str)
    )


class _ChildReader(LineReader):
    """The child's stdout: our requests' answers settled here, the rest to the SDK."""

    def __init__(self, reader: asyncio.StreamReader, channel: RawChannel) -> None:
        super().__init__(reader)
        self._channel = channel

    async def receive(self) -> SessionMessage | Exception:
        while True:
            line = await self._reader.readline()
            if not line:
                raise anyio.EndOfStream
            if not line.strip():
                continue
            try:
                message = from_json(line)
            except ValueError as exc:
                return exc  # not JSON-RPC: the connection is closed as garbage
            taken = self._channel.take(message)
            if taken is False:
                try:
                    return SessionMessage(
                        types.jsonrpc_message_adapter.validate_python(message, by_name=False)
                    )
                except Exception as exc:
                    return exc
            if taken is not True:
                try:
                    await taken
                except Exception:
                    log.debug("progress for a client that went away", exc_info=True)


@asynccontextmanager
async def child_streams(
    command: tuple[str, ...], env: dict[str, str] | None, cwd: str | None, errlog: TextIO
) -> AsyncIterator[tuple[LineReader, LineWriter, RawChannel]]:
    """Start ``command``; yield its stdout and stdin as SDK streams and the raw channel."""
    process = await asyncio.create_subprocess_exec(
        *command,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=errlog,
        env=get_default_environment() | (env or {}),
        cwd=cwd,
        limit=LINE_LIMIT,
        start_new_session=True,  # its own process group, so the whole tree can be stopped
    )
    assert process.stdin is not None and process.stdout is not None
    writer = LineWriter(process.stdin)
    channel = RawChannel(writer)
    try:
        yield _ChildReader(process.stdout, channel), writer, channel
    finally:
        channel.close()
        with anyio.CancelScope(shield=True):
            await _stop(process)
        _close_pipes(process)


def _close_pipes(process: asyncio.subprocess.Process) -> None:
    """Close our ends of the child's pipes now. Its stdout otherwise stays open until the loop
    reads the EOF, which a loop closing right after us never does: the pipe then leaks until
    garbage collection, which complains into whatever runs then."""
    transport: asyncio.SubprocessTransport | None = getattr(process, "_transport", None)
    if transport is not None:
        transport.close()  # also kills the child if it is somehow still there


async def _stop(process: asyncio.subprocess.Process) -> None:
    assert process.stdin is not None
    process.stdin.close()
    if await _exited(process):
        return
    for sig in (signal.SIGTERM, signal.SIGKILL):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, sig)
        if await _exited(process):
            return
    log.warning("MCP server process %d did not exit", process.pid)


async def _exited(process: asyncio.subprocess.Process) -> bool:
    with anyio.move_on_after(_EXIT_GRACE_S):
        await process.wait()
        return True
    return False
