"""The common lifecycle of the scripted servers in tests/support: an aiohttp app on a loopback
port, run by its own event loop on its own thread, so sync code, async tests and subprocesses
can all reach it. A subclass adds its routes in ``_routes``; a scripted model API
(:class:`ScriptedModel`) also its replies."""

from __future__ import annotations

import asyncio
import threading
from typing import Generic, Self, TypeVar

from aiohttp import web

ReplyT = TypeVar("ReplyT")
CallT = TypeVar("CallT")


class LoopbackServer:
    host: str = "127.0.0.1"
    #: Largest request body accepted (aiohttp's default is 1 MiB).
    max_body: int = 1024**2

    def _init_server(self) -> None:
        self.port = 0
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._runner: web.AppRunner | None = None

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def _routes(self, app: web.Application) -> None:
        raise NotImplementedError

    async def _start(self) -> None:
        app = web.Application(client_max_size=self.max_body)
        self._routes(app)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, self.host, 0)
        await site.start()
        assert site._server is not None
        self.port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]

    def start(self) -> Self:
        self._thread.start()
        asyncio.run_coroutine_threadsafe(self._start(), self._loop).result(10)
        return self

    def stop(self) -> None:
        if self._runner is not None:
            asyncio.run_coroutine_threadsafe(self._runner.cleanup(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(5)
        if not self._thread.is_alive():  # an unclosed loop leaks its self-pipe sockets
            self._loop.close()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


class ScriptedModel(LoopbackServer, Generic[ReplyT, CallT]):
    """A model API on loopback that answers each request with the next scripted reply (a
    reply saying "(script ended)" once they run out) and keeps every request as a call."""

    max_body = 64 * 1024 * 1024

    def __init__(self, *replies: ReplyT) -> None:
        self._init_server()
        self._script = list(replies)
        self._lock = threading.Lock()
        self.calls: list[CallT] = []

    def script(self, *replies: ReplyT) -> None:
        with self._lock:
            self._script = list(replies)

    def _ended(self) -> ReplyT:
        raise NotImplementedError

    def _answer(self, call: CallT) -> tuple[int, ReplyT]:
        """Keep ``call``; its number (from 1) and the reply it gets."""
        with self._lock:
            self.calls.append(call)
            return len(self.calls), self._script.pop(0) if self._script else self._ended()
