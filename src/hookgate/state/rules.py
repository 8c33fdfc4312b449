"""Rule state: the counters and the session history of ``rule`` hooks, in the hook state
store.

Two kinds of entry, each under a :class:`RuleKey` with a TTL:

* a **counter** (``limit``): :meth:`RuleStateStore.admit` adds one only while it is below the
  limit, in one atomic step, so replicas sharing a store never both take the last call;
* a **stamp** (the session history of ``after``, ``require`` and ``sequence``): the latest
  time a call of some tool pattern was admitted (or succeeded) in a session or for an agent.

Every store of :mod:`hookgate.state` implements this next to its ``load``/``apply``: memory
and the JSON file (the library), SQL (SQLite and PostgreSQL, table ``rule_state``) and Redis.
Keys are built by :mod:`hookgate.handlers.rule` from trusted fields only (the event's tenant,
the hook's id, the rule's own pattern), never from a tool's input.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from typing import NamedTuple, Protocol, runtime_checkable

__all__ = ["Admission", "RuleKey", "RuleStateStore", "Stamp", "hashed_name"]


class RuleKey(NamedTuple):
    """One counter or stamp. ``parts`` name it within the tenant (kind, the rule's identity
    or pattern, ``per``, the session or agent id, the window); a JSON list keeps them apart
    whatever characters an agent puts in its session id. (A NamedTuple: made per event.)"""

    tenant_id: str
    parts: tuple[str | int, ...]


class Admission(NamedTuple):
    """What :meth:`RuleStateStore.admit` decided: ``calls`` is the new count when admitted,
    the count that filled the limit when not."""

    admitted: bool
    calls: int


class Stamp(NamedTuple):
    key: RuleKey
    at: float
    ttl_s: float


def hashed_name(key: RuleKey) -> str:
    """A fixed-size name for ``key`` (SQL rows, Redis keys): session ids are agent input of
    any length, so they are hashed rather than spliced in."""
    raw = json.dumps([key.tenant_id, *key.parts], separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(raw.encode()).hexdigest()


@runtime_checkable
class RuleStateStore(Protocol):
    async def admit(self, key: RuleKey, limit: int, ttl_s: float) -> Admission:
        """Add one to the counter unless it already holds ``limit``; a new counter lives
        ``ttl_s`` seconds. Atomic: concurrent callers, in any process, never overshoot."""
        ...

    async def peek(self, key: RuleKey) -> int:
        """The counter's live value (0 when absent): a dry run's look without counting."""
        ...

    async def record(self, stamps: Sequence[Stamp]) -> None:
        """Keep each stamp (the later time wins), with its TTL."""
        ...

    async def recall(self, keys: Sequence[RuleKey]) -> dict[RuleKey, float]:
        """The live stamps among ``keys`` (absent ones are left out)."""
        ...
