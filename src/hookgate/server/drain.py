"""SIGTERM drains the gateway before uvicorn closes a single socket.

uvicorn's own handling closes the listener and every connection first (WebSocket close 1012,
REST read errors) and only then tells the application, so work in flight was lost and the
readiness probe never said 503. :class:`DrainingServer` reverses the order: the first SIGTERM
(or SIGINT) starts :meth:`hookgate.server.gateway.Gateway.drain` while every socket stays open
(readiness 503, new requests refused with a retryable ``UNAVAILABLE``, requests in flight
answered, waiting approvals answered ``pending`` with their id, the audit flushed); once it is
done, or after the drain timeout, uvicorn's shutdown closes the sockets. A second signal stops
waiting and shuts down at once.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from types import FrameType

import uvicorn
from starlette.applications import Starlette

__all__ = ["DrainingServer", "drain_app"]


def drain_app(app: Starlette, timeout_s: float) -> Callable[[], Awaitable[object]]:
    """The drain of the gateway ``app``'s lifespan started (nothing when it never started)."""

    async def drain() -> object:
        gateway = getattr(app.state, "gateway", None)
        if gateway is None:
            return None
        return await gateway.drain(timeout_s)

    return drain


class DrainingServer(uvicorn.Server):
    def __init__(self, config: uvicorn.Config, drain: Callable[[], Awaitable[object]]) -> None:
        super().__init__(config)
        self._drain = drain
        self._drain_requested = False
        self._drain_task: asyncio.Task[None] | None = None

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        if not self.started or self._drain_requested:
            # Before start-up there is nothing to drain; a second signal: stop waiting.
            super().handle_exit(sig, frame)
            return
        # Kept so uvicorn re-raises it once shut down (the exit status is the signal's).
        self._captured_signals.append(sig)
        self._drain_requested = True

    async def on_tick(self, counter: int) -> bool:
        if self._drain_requested and self._drain_task is None:
            self._drain_task = asyncio.get_running_loop().create_task(self._run_drain())
        return await super().on_tick(counter)

    async def _run_drain(self) -> None:
        try:
            await self._drain()
        finally:
            self.should_exit = True  # now uvicorn closes the listener and the connections
