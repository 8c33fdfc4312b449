"""One hook's work on the event loop, under its deadline: cancelled when its time is up."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable
from typing import Any

from hookgate.chain import HookReply

__all__ = ["run_with_deadline"]


class _Expiry:
    """Cancels a task when a hook's time is up, and remembers that it did."""

    __slots__ = ("fired", "task")

    def __init__(self, task: asyncio.Task[Any]) -> None:
        self.task = task
        self.fired = False

    def fire(self) -> None:
        self.fired = True
        self.task.cancel()


async def run_with_deadline(work: Awaitable[Any], timeout_s: float) -> HookReply:
    """Await ``work`` for at most ``timeout_s`` seconds: its answer, its error or a timeout.

    A coroutine is cancelled at its deadline. Code that never gives the loop back (a plain
    function run in place) cannot be cancelled: past its time it is a timeout all the same,
    reported when it returns. A caller's own cancellation is passed on.
    """
    started = time.perf_counter()
    # One timer that cancels this task: cheaper per call than asyncio.timeout()'s context
    # manager, and ``uncancel`` tells our expiry from a caller's cancellation.
    task = asyncio.current_task()
    assert task is not None
    expiry = _Expiry(task)
    timer = asyncio.get_running_loop().call_later(timeout_s, expiry.fire)
    try:
        answer = await work
    except asyncio.CancelledError:
        if expiry.fired and task.uncancel() == 0:
            return HookReply(None, None, True, (time.perf_counter() - started) * 1000)
        raise
    except Exception as exc:
        return HookReply(None, exc, False, (time.perf_counter() - started) * 1000)
    finally:
        timer.cancel()
    elapsed = time.perf_counter() - started
    if expiry.fired:
        # The handler swallowed the cancellation and answered late: still a timeout.
        task.uncancel()
        return HookReply(None, None, True, elapsed * 1000)
    if elapsed > timeout_s:
        return HookReply(None, None, True, elapsed * 1000)  # it held the loop past its time
    return HookReply(answer, None, False, elapsed * 1000)
