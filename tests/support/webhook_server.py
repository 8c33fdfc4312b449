"""A scripted webhook server on loopback, run on its own thread so any test can use it.

    with WebhookServer() as server:
        server.script(Reply(200, {"decision": "block", "reason": "no"}))
        ... post to server.url("/hook") ...
        assert server.requests[0].json["tool_name"] == "exec"

Replies are served in order; when the script runs out, ``default`` answers. Every request
is recorded with the time it arrived (for retry timing).
"""

from __future__ import annotations

import asyncio
import gzip
import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web


@dataclass(slots=True)
class Reply:
    status: int = 200
    body: Any = None  # dict/list -> JSON, str/bytes -> as is, None -> empty
    headers: dict[str, str] = field(default_factory=dict)
    delay_s: float = 0.0
    #: Send the body without Content-Length (chunked), or gzip-compressed.
    chunked: bool = False
    gzip: bool = False

    def encode(self) -> bytes:
        if self.body is None:
            return b""
        if isinstance(self.body, bytes):
            return self.body
        if isinstance(self.body, str):
            return self.body.encode()
        return json.dumps(self.body).encode()


@dataclass(slots=True)
class Seen:
    path: str
    headers: dict[str, str]
    body: bytes
    at: float

    @property
    def json(self) -> Any:
        return json.loads(self.body)


class WebhookServer:
    def __init__(self, default: Reply | None = None, host: str = "127.0.0.1") -> None:
        self.default = default or Reply(200, {"decision": "allow"})
        self.host = host
        self.port = 0
        self.requests: list[Seen] = []
        self.respond: Callable[[Seen], Reply] | None = None
        self._script: list[Reply] = []
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._runner: web.AppRunner | None = None

    def script(self, *replies: Reply) -> None:
        self._script.extend(replies)

    def url(self, path: str = "/hook", host: str | None = None) -> str:
        return f"http://{host or self.host}:{self.port}{path}"

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        seen = Seen(request.path_qs, dict(request.headers), await request.read(), time.monotonic())
        self.requests.append(seen)
        if self.respond is not None:
            reply = self.respond(seen)
        else:
            reply = self._script.pop(0) if self._script else self.default
        if reply.delay_s:
            await asyncio.sleep(reply.delay_s)
        body = reply.encode()
        if reply.gzip:
            body = gzip.compress(body)
            reply.headers.setdefault("Content-Encoding", "gzip")
        if not reply.chunked:
            return web.Response(status=reply.status, body=body, headers=reply.headers)
        stream = web.StreamResponse(status=reply.status, headers=reply.headers)
        stream.enable_chunked_encoding()
        await stream.prepare(request)
        for start in range(0, len(body), 64 * 1024):
            await stream.write(body[start : start + 64 * 1024])
        await stream.write_eof()
        return stream

    async def _start(self) -> None:
        app = web.Application(client_max_size=4 * 1024 * 1024)
        app.router.add_route("*", "/{tail:.*}", self._handle)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, self.host, 0)
        await site.start()
        server = site._server
        assert server is not None
        self.port = server.sockets[0].getsockname()[1]  # type: ignore[union-attr]

    async def _stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()

    def start(self) -> WebhookServer:
        self._thread.start()
        asyncio.run_coroutine_threadsafe(self._start(), self._loop).result(10)
        return self

    def stop(self) -> None:
        asyncio.run_coroutine_threadsafe(self._stop(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(5)
        if not self._thread.is_alive():  # an unclosed loop leaks its self-pipe sockets
            self._loop.close()

    def __enter__(self) -> WebhookServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
