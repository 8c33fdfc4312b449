"""One PostgreSQL ``LISTEN`` connection that comes back by itself.

A replica hears other replicas' changes (hooks, key revocations, approvals) by ``NOTIFY`` on
one dedicated connection. That connection can be lost at any time: ``pg_terminate_backend``,
a server restart, a network blip. :class:`Notifications` notices (asyncpg's termination
callback at once; a ``SELECT 1`` every ``check_interval_s`` for a silent network), reconnects
with exponential backoff (0.1 s doubling to 5 s, with jitter so replicas do not reconnect in
step) and listens again. Whatever was announced while it was down is lost, so after every
reconnection it calls ``on_restored``: the store's owners resync (reload every hook, forget
cached keys, look again at the approvals they wait on).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Final

import asyncpg

from hookgate.log import log_event

__all__ = ["Backoff", "LISTEN_APPLICATION", "Notifications"]

#: ``application_name`` of the listening connection (how an operator finds it in
#: ``pg_stat_activity``).
LISTEN_APPLICATION: Final = "hookgate-listen"
#: Seconds one reconnection attempt (connect and LISTEN) may take.
OPEN_TIMEOUT_S: Final = 10.0


@dataclass(frozen=True, slots=True)
class Backoff:
    """Delays between reconnection attempts: ``first`` doubling up to ``most`` seconds, each
    drawn between half and all of the current step."""

    first: float = 0.1
    most: float = 5.0

    def delay(self, attempt: int) -> float:
        step = min(self.most, self.first * 2.0 ** min(attempt, 16))
        return step * random.uniform(0.5, 1.0)


Handler = Callable[[str], None]


class Notifications:
    """``LISTEN`` on ``channels`` (name → handler of the payload) over one connection made
    by ``connect``, kept up until :meth:`close`."""

    def __init__(
        self,
        connect: Callable[[], Awaitable[asyncpg.Connection]],
        channels: Mapping[str, Handler],
        on_restored: Callable[[], None],
        *,
        check_interval_s: float = 5.0,
        backoff: Backoff = Backoff(),
    ) -> None:
        self._connect = connect
        self._channels = dict(channels)
        self._on_restored = on_restored
        self.check_interval_s = check_interval_s
        self.backoff = backoff
        self._conn: asyncpg.Connection | None = None
        self._lost = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        #: How many times the connection was lost and made again.
        self.reconnects = 0

    @property
    def up(self) -> bool:
        """Listening right now (a change committed now will be heard)."""
        return self._conn is not None and not self._lost.is_set()

    @property
    def server_pid(self) -> int | None:
        """The PostgreSQL backend serving the LISTEN connection (``pg_stat_activity.pid``)."""
        return self._conn.get_server_pid() if self.up and self._conn is not None else None

    async def start(self) -> None:
        """Connect and listen (raises if the first connection fails), then keep it up."""
        if self._task is not None:
            return
        await self._open()
        self._task = asyncio.get_running_loop().create_task(
            self._supervise(), name="hookgate-listen"
        )

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
        await self._drop()

    async def _open(self) -> None:
        conn = await self._connect()
        lost = asyncio.Event()
        try:
            conn.add_termination_listener(lambda _conn: lost.set())
            for channel, handler in self._channels.items():
                await conn.add_listener(channel, _callback(handler))
        except BaseException:
            conn.terminate()
            raise
        self._conn, self._lost = conn, lost

    async def _drop(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None and not conn.is_closed():
            with contextlib.suppress(Exception):
                async with asyncio.timeout(2):
                    await conn.close()
            if not conn.is_closed():
                conn.terminate()

    async def _supervise(self) -> None:
        while True:
            await self._until_lost()
            lost_at = time.monotonic()
            log_event("hookgate.store.listen_lost", level=logging.WARNING)
            self._lost.set()
            await self._drop()
            attempt = 0
            while True:
                await asyncio.sleep(self.backoff.delay(attempt))
                attempt += 1
                try:
                    # Bounded: a network that accepts the connection and then drops
                    # everything must not stall the reconnection for good.
                    async with asyncio.timeout(OPEN_TIMEOUT_S):
                        await self._open()
                    break
                except (
                    OSError, TimeoutError, asyncpg.PostgresError, asyncpg.InterfaceError
                ) as exc:
                    if attempt == 1 or attempt % 10 == 0:
                        log_event(
                            "hookgate.store.listen_retry", attempt=attempt, error=repr(exc)
                        )
            self.reconnects += 1
            log_event(
                "hookgate.store.listen_restored",
                level=logging.INFO,
                attempts=attempt,
                down_s=round(time.monotonic() - lost_at, 3),
            )
            try:
                self._on_restored()
            except Exception as exc:  # a resync that failed must not stop the listening
                log_event("hookgate.store.resync_failed", error=str(exc))

    async def _until_lost(self) -> None:
        """Return once the connection is gone: closed by the server (at once) or not
        answering a check (a network that drops packets silently)."""
        conn, lost = self._conn, self._lost
        assert conn is not None
        while True:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(self.check_interval_s):
                    await lost.wait()
                return
            try:
                async with asyncio.timeout(self.check_interval_s):
                    await conn.execute("SELECT 1")
            except Exception:  # any failure of the check means the connection is unusable
                return


def _callback(handler: Handler) -> Callable[[object, int, str, str], None]:
    def on_notify(_conn: object, _pid: int, _channel: str, payload: str) -> None:
        try:
            handler(payload)
        except Exception as exc:  # one bad payload must not stop the others
            log_event("hookgate.store.notify_failed", error=str(exc))

    return on_notify
