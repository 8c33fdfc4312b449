"""The background queue: chains of non-blocking events, run by a few worker tasks so the
agent never waits for them, with a bound on how many may wait (the rest are dropped and
counted)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from hookgate.log import log_event

if TYPE_CHECKING:
    from hookgate.events import EventSpec
    from hookgate.registry import CompiledHook

__all__ = ["BackgroundQueue", "RunChain"]

#: How the queue runs one event's chain (the engine's own ``_run``).
RunChain = Callable[
    ["EventSpec", Mapping[str, Any], Sequence["CompiledHook"], "str | None"], Awaitable[object]
]

#: An event, its payload, its hooks and the id its dispatch record takes (None: a new one).
_Item = tuple["EventSpec", Mapping[str, Any], Sequence["CompiledHook"], "str | None"]


class BackgroundQueue:
    """Runs queued chains on the loop that submitted the first one.

    The queue and its workers belong to that loop; a submission from another loop starts
    a fresh queue there (an engine may outlive one ``asyncio.run``).
    """

    def __init__(self, run: RunChain, *, size: int, workers: int) -> None:
        self._run = run
        self._size = size
        self._worker_count = workers
        self._queue: asyncio.Queue[_Item]
        self.loop: asyncio.AbstractEventLoop | None = None
        self._workers: list[asyncio.Task[None]] = []
        self.queued = 0
        self.dropped = 0
        self.failed = 0

    def submit(
        self,
        spec: EventSpec,
        data: Mapping[str, Any],
        hooks: Sequence[CompiledHook],
        dispatch_id: str | None = None,
    ) -> None:
        """Queue one chain (call on a running loop); a full queue drops it and logs why."""
        if not hooks:
            return
        loop = asyncio.get_running_loop()
        if self.loop is not loop:
            self._start_workers(loop)
        try:
            self._queue.put_nowait((spec, data, hooks, dispatch_id))
        except asyncio.QueueFull:
            self.dropped += 1
            log_event(
                "hookgate.background.dropped",
                event=spec.name,
                dropped_total=self.dropped,
                queue_size=self._size,
            )
            return
        self.queued += 1

    def _start_workers(self, loop: asyncio.AbstractEventLoop) -> None:
        self._queue = asyncio.Queue(maxsize=self._size)
        self.loop = loop
        self._workers = [
            loop.create_task(self._worker(), name=f"hookgate-background-{n}")
            for n in range(self._worker_count)
        ]

    async def _worker(self) -> None:
        queue = self._queue
        while True:
            spec, data, hooks, dispatch_id = await queue.get()
            try:
                await self._run(spec, data, hooks, dispatch_id)
            except Exception as exc:  # isolated: a background failure never reaches the agent
                self.failed += 1
                log_event("hookgate.background.failed", event=spec.name, error=str(exc))
            finally:
                queue.task_done()

    async def join(self) -> None:
        """Wait until every queued chain has run (from any loop)."""
        if self.loop is None:
            return
        if self.loop is asyncio.get_running_loop():
            await self._queue.join()
        else:
            fut = asyncio.run_coroutine_threadsafe(self._queue.join(), self.loop)
            await asyncio.wrap_future(fut)

    async def stop(self) -> None:
        """On the queue's own loop: let queued chains finish, then end the workers."""
        if self.loop is not asyncio.get_running_loop():
            return
        await self._queue.join()
        for task in self._workers:
            task.cancel()
        await asyncio.gather(*self._workers, return_exceptions=True)
