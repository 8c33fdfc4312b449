"""The common lifecycle of the scripted servers in tests/support: an aiohttp app on a loopback
port, run by its own event loop on its own thread, so sync code, async tests and subprocesses
can all reach it. A subclass adds its routes in ``_routes``."""

from __future__ import annotations

import asyncio
import threading
from typing import Self

from aiohttp import web


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
