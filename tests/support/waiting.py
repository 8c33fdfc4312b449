"""The one poll helper of the suite: wait for a condition instead of sleeping a fixed time."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable

#: How often a condition is looked at again.
POLL_S = 0.01


def wait_until(condition: Callable[[], object], what: str = "condition",
               seconds: float = 10.0, poll_s: float = POLL_S) -> None:
    """Return as soon as ``condition()`` is truthy; fail naming ``what`` after ``seconds``."""
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, f"never happened within {seconds} s: {what}"
        time.sleep(poll_s)


async def wait_until_async(condition: Callable[[], object | Awaitable[object]],
                           what: str = "condition", seconds: float = 10.0,
                           poll_s: float = POLL_S) -> None:
    """The same on an event loop; ``condition`` may be a plain function or return an awaitable."""
    deadline = time.monotonic() + seconds
    while True:
        value = condition()
        if isinstance(value, Awaitable):
            value = await value
        if value:
            return
        assert time.monotonic() < deadline, f"never happened within {seconds} s: {what}"
        await asyncio.sleep(poll_s)
