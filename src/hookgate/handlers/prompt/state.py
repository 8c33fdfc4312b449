"""State prompt hooks keep between calls: the decision cache and the per-turn counters.

Both are small protocols so a gateway with several replicas can keep them in Redis or
PostgreSQL (``Services.decision_cache`` / ``Services.turn_counter``); the in-memory
versions here serve one process.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping
from typing import Any, Final, Protocol, runtime_checkable

__all__ = [
    "DECISION_TTL_S",
    "TURN_TTL_S",
    "DecisionCache",
    "MemoryDecisionCache",
    "MemoryTurnCounter",
    "TurnCounter",
]

#: How long a prompt hook's decision is reused for the same hook version and input.
DECISION_TTL_S: Final = 60.0
#: How long a turn's counter lives after its last use.
TURN_TTL_S: Final = 3600.0


@runtime_checkable
class DecisionCache(Protocol):
    async def get(self, key: str) -> dict[str, Any] | None: ...

    async def put(self, key: str, value: Mapping[str, Any], ttl_s: float) -> None: ...


@runtime_checkable
class TurnCounter(Protocol):
    async def increment(self, key: str, ttl_s: float) -> int:
        """Add one to ``key`` (created at zero, expiring ``ttl_s`` after the last use) and
        return the new count, atomically."""
        ...


class MemoryDecisionCache:
    """Decisions with a TTL; beyond ``max_entries`` the least recently used goes first."""

    def __init__(
        self, *, max_entries: int = 1000, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.max_entries = max_entries
        self.clock = clock
        self._entries: OrderedDict[str, tuple[float, dict[str, Any]]] = OrderedDict()
        self._lock = threading.Lock()

    async def get(self, key: str) -> dict[str, Any] | None:
        with self._lock:
            entry = self._entries.get(key)
            if entry is None:
                return None
            if entry[0] <= self.clock():
                del self._entries[key]
                return None
            self._entries.move_to_end(key)  # least recently used goes first when full
            return dict(entry[1])

    async def put(self, key: str, value: Mapping[str, Any], ttl_s: float) -> None:
        with self._lock:
            self._entries[key] = (self.clock() + ttl_s, dict(value))
            self._entries.move_to_end(key)
            while len(self._entries) > self.max_entries:
                self._entries.popitem(last=False)


class MemoryTurnCounter:
    """Counters per key with a sliding expiry, bounded to ``max_keys``."""

    def __init__(
        self, *, max_keys: int = 100_000, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.max_keys = max_keys
        self.clock = clock
        self._counts: OrderedDict[str, tuple[float, int]] = OrderedDict()
        self._lock = threading.Lock()

    async def increment(self, key: str, ttl_s: float) -> int:
        now = self.clock()
        with self._lock:
            expires, count = self._counts.get(key, (0.0, 0))
            count = count + 1 if expires > now else 1
            self._counts[key] = (now + ttl_s, count)
            self._counts.move_to_end(key)
            while len(self._counts) > self.max_keys:
                self._counts.popitem(last=False)
            return count
