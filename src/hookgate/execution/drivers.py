"""The chain's driver on the event loop, and the loop a synchronous caller's coroutines run on.

- :func:`drive_async`: executes the batches of a :class:`hookgate.chain.Chain` and hands it
  back the replies (it holds no chain rule of its own);
- :class:`LoopThread`: an event loop on a daemon thread, for ``fire_sync``'s async handlers.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable, Coroutine, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from hookgate.chain import Call, Chain, HookReply, Reply

if TYPE_CHECKING:
    from hookgate.outcome import Outcome

__all__ = ["LoopThread", "drive_async"]

T = TypeVar("T")


async def drive_async(
    chain: Chain,
    execute: Callable[[Call, Mapping[str, Any], float], Awaitable[Reply]],
    clock: Callable[[], float],
) -> Outcome:
    """Run a chain on the event loop.

    A blocking batch runs in order and stops after the first call that matters; a
    non-blocking batch runs concurrently.
    """
    step = chain.first
    while isinstance(step, tuple):
        calls, payload, deadline = step
        if deadline is None:
            replies: Sequence[Reply] = await asyncio.gather(
                *(execute(call, payload, call[1]) for call in calls)
            )
        else:
            ran: list[Reply] = []
            for call in calls:
                remaining = deadline - clock()
                if remaining <= 0:
                    break
                reply = await execute(call, payload, min(call[1], remaining))
                ran.append(reply)
                # stops_blocking_batch, inline: once per call
                if reply.__class__ is HookReply and (
                    reply[0] is not None or reply[1] is not None or reply[2]
                ):
                    break
            replies = ran
        step = chain.resume(replies)
    return step


class LoopThread:
    """An event loop on a daemon thread, for sync callers whose hooks need a loop."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._main, name="hookgate-loop", daemon=True)
        self._thread.start()

    def _main(self) -> None:
        asyncio.set_event_loop(self.loop)
        try:
            self.loop.run_forever()
        finally:
            # Closed here, on its own thread, once stop() ended it: an unclosed loop leaks
            # its self-pipe sockets.
            self.loop.close()

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result()

    def stop(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(timeout=5)
