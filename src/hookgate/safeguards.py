"""Circuit breakers: a failing hook stops being called, without becoming an open door.

A breaker counts *faults* (errors, timeouts, malformed answers) in a rolling window.
Deliberate blocks are not faults: an attacker who can make a guard block must not be able to
switch the guard off. When ``threshold`` faults fall within ``window_s`` the breaker opens;
the chain then applies the hook's failure policy without calling it. After ``cooldown_s``
one call is let through as a probe (half-open): success closes the breaker, a fault reopens
it. Re-enabling a hook resets its breaker.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

from hookgate.audit import redact, truncate
from hookgate.log import log_event

__all__ = ["BreakerBoard", "BreakerState", "BreakerStatus"]

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
            return
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

    def reset(self, hook_id: str) -> None:
        """Forget everything about a hook's faults (it was re-enabled or replaced)."""
        status = self._status.pop(hook_id, None)
        if status is not None and status.state != "closed":
            log_event(
                "security.hook.circuit_breaker", hook_id=hook_id, state="closed", reason="reset"
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
