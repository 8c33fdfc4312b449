"""Circuit breakers: a failing hook stops being called, without becoming an open door.

A breaker counts *faults* (errors, timeouts, malformed answers) in a rolling window.
Deliberate blocks are not faults: an attacker who can make a guard block must not be able to
switch the guard off. When ``threshold`` faults fall within ``window_s`` the breaker opens;
the chain then applies the hook's failure policy without calling it. After ``cooldown_s``
one call is let through as a probe (half-open): success closes the breaker, a fault reopens
it. Re-enabling a hook resets its breaker.

The board lives in one process. Gateway replicas share their breakers through a
:class:`BreakerSync` (``board.sync``; see :mod:`hookgate.server.shared_breakers`): the board
hands each fault to it and the shared window decides when the breaker opens; the sync applies
what other replicas decided with :meth:`BreakerBoard.apply_open` and
:meth:`BreakerBoard.apply_closed`. Every method stays synchronous: the hook chain calls them
on its hot path and never waits for a network.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal, Protocol

from hookgate.audit import redact, truncate
from hookgate.log import log_event

__all__ = ["BreakerBoard", "BreakerState", "BreakerStatus", "BreakerSync"]

BreakerState = Literal["closed", "open", "half_open"]


@dataclass(slots=True)
class BreakerStatus:
    state: BreakerState = "closed"
    faults: deque[float] = field(default_factory=deque)
    opened_at: float | None = None
    last_fault: str | None = None
    probing: bool = False

    def to_dict(self) -> dict[str, object]:
        return {
            "state": self.state,
            "recent_faults": len(self.faults),
            "last_fault": self.last_fault,
        }


class BreakerSync(Protocol):
    """Shares a board's breakers with other processes (every method returns at once)."""

    def fault(self, hook_id: str, message: str) -> bool:
        """Count a fault in the shared window; False when the shared store cannot be used
        now (the board then counts it in its own window)."""
        ...

    def reopened(self, hook_id: str) -> None:
        """A probe failed here: the breaker is open again, from now."""
        ...

    def closed(self, hook_id: str) -> None:
        """A probe succeeded here: the breaker is closed."""
        ...

    def reset(self, hook_id: str) -> None:
        """The hook was re-enabled, replaced or removed: forget its faults everywhere."""
        ...


class BreakerBoard:
    """The breakers of all hooks of one engine (in memory; a store may persist changes)."""

    def __init__(
        self,
        *,
        threshold: int = 5,
        window_s: float = 60.0,
        cooldown_s: float = 30.0,
        clock: Callable[[], float] = time.monotonic,
        on_change: Callable[[str, BreakerStatus], None] | None = None,
    ) -> None:
        self.threshold = threshold
        self.window_s = window_s
        self.cooldown_s = cooldown_s
        self.clock = clock
        self.on_change = on_change
        # Only hooks that have faulted have an entry; the common case is one dict miss.
        self._status: dict[str, BreakerStatus] = {}
        #: Shares faults and states with other replicas (``None``: this process only).
        self.sync: BreakerSync | None = None

    @property
    def statuses(self) -> dict[str, BreakerStatus]:
        """Breakers of hooks that have faulted, by hook id (read-only by convention)."""
        return self._status

    def admit(self, hook_id: str) -> BreakerState:
        """The state for this call; an open breaker past its cool-down admits one probe."""
        status = self._status.get(hook_id)
        if status is None or status.state == "closed":
            return "closed"
        if status.state == "open":
            assert status.opened_at is not None
            if self.clock() - status.opened_at >= self.cooldown_s and not status.probing:
                status.state = "half_open"
                status.probing = True
                self._changed(hook_id, status)
                return "half_open"
            return "open"
        # half-open with a probe already in flight: others wait for its verdict
        return "open"

    def fault(self, hook_id: str, message: str) -> None:
        now = self.clock()
        status = self._status.setdefault(hook_id, BreakerStatus())
        # Every role can see a hook's status: keep only the redacted, truncated form.
        status.last_fault = truncate(redact(message))
        if status.state == "half_open":
            self._open(hook_id, status, now, reason="probe failed")
            if self.sync is not None:
                self.sync.reopened(hook_id)
            return
        if self.sync is not None and self.sync.fault(hook_id, status.last_fault):
            return  # the shared window counts it; the sync opens the breaker when it trips
        self._count(hook_id, status, now)

    def count_locally(self, hook_id: str) -> None:
        """Count a fault in this process's window (the shared store could not take it)."""
        status = self._status.setdefault(hook_id, BreakerStatus())
        if status.state == "closed":
            self._count(hook_id, status, self.clock())

    def _count(self, hook_id: str, status: BreakerStatus, now: float) -> None:
        faults = status.faults
        faults.append(now)
        while faults and now - faults[0] > self.window_s:
            faults.popleft()
        if status.state == "closed" and len(faults) >= self.threshold:
            self._open(hook_id, status, now, reason=f"{len(faults)} faults in {self.window_s:g} s")

    def success(self, hook_id: str) -> None:
        status = self._status.get(hook_id)
        if status is None:
            return
        if status.state == "half_open":
            status.state = "closed"
            status.probing = False
            status.faults.clear()
            status.opened_at = None
            log_event("security.hook.circuit_breaker", hook_id=hook_id, state="closed")
            self._changed(hook_id, status)
            if self.sync is not None:
                self.sync.closed(hook_id)

    def reset(self, hook_id: str) -> None:
        """Forget everything about a hook's faults (it was re-enabled or replaced)."""
        self._forget(hook_id, reason="reset")
        if self.sync is not None:
            self.sync.reset(hook_id)

    def apply_open(self, hook_id: str, opened_at: float, last_fault: str | None) -> None:
        """Another replica opened this breaker at ``opened_at`` (this board's clock)."""
        status = self._status.setdefault(hook_id, BreakerStatus())
        if status.state == "open" and status.opened_at == opened_at:
            return
        if status.state == "half_open" and status.probing:
            return  # our own probe is out: its verdict comes first
        status.last_fault = last_fault or status.last_fault
        status.state = "open"
        status.opened_at = opened_at
        status.probing = False
        log_event(
            "security.hook.circuit_breaker", hook_id=hook_id, state="open", reason="shared",
            last_fault=status.last_fault,
        )
        self._changed(hook_id, status)

    def apply_closed(self, hook_id: str) -> None:
        """Another replica closed (or reset) this breaker."""
        self._forget(hook_id, reason="shared")

    def _forget(self, hook_id: str, *, reason: str) -> None:
        status = self._status.pop(hook_id, None)
        if status is not None and status.state != "closed":
            log_event(
                "security.hook.circuit_breaker", hook_id=hook_id, state="closed", reason=reason
            )
            self._changed(hook_id, BreakerStatus())

    def status(self, hook_id: str) -> BreakerStatus:
        return self._status.get(hook_id) or BreakerStatus()

    def _open(self, hook_id: str, status: BreakerStatus, now: float, *, reason: str) -> None:
        status.state = "open"
        status.opened_at = now
        status.probing = False
        log_event(
            "security.hook.circuit_breaker",
            hook_id=hook_id,
            state="open",
            reason=reason,
            last_fault=status.last_fault,
        )
        self._changed(hook_id, status)

    def _changed(self, hook_id: str, status: BreakerStatus) -> None:
        if self.on_change is not None:
            self.on_change(hook_id, status)
