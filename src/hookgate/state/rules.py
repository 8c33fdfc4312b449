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

__all__ = [
    "Admission",
    "LookBack",
    "RuleAnswer",
    "RuleKey",
    "RuleStateStore",
    "RuleStep",
    "Stamp",
    "SteppingStore",
    "hashed_name",
]


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


class LookBack(NamedTuple):
    """One history check of a :class:`RuleStep`, over the next ``keys`` of its history keys:
    ``absent`` (``after``: none may hold a live stamp) or present in order (``require``,
    ``sequence``: each must, each no earlier than the one before). A stamp older than
    ``within_s`` is not live."""

    absent: bool
    keys: int
    within_s: float | None


class RuleStep(NamedTuple):
    """All a rule hook does to its store for one event, to be done in one atomic step (one
    round trip): read the ``history`` keys and judge ``checks`` on them at ``now``; only when
    they pass, admit on ``limit`` (key, count, ttl_s), and only when that admits too, keep
    ``stamps`` (the event's session history, when the rule has the chain's last word)."""

    history: Sequence[RuleKey]
    checks: Sequence[LookBack]
    limit: tuple[RuleKey, int, float] | None
    stamps: Sequence[Stamp]
    now: float


class RuleAnswer(NamedTuple):
    """What a :class:`RuleStep` found: whether the history checks passed, the admission
    (``None`` when they did not, or without a limit), and the live stamps read."""

    passed: bool
    admission: Admission | None
    history: dict[RuleKey, float]


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


@runtime_checkable
class SteppingStore(Protocol):
    """A store that takes a rule's whole :class:`RuleStep` in one round trip (Redis)."""

    async def rule_step(self, step: RuleStep) -> RuleAnswer:
        """Do ``step`` atomically: no other replica's step runs between its parts."""
        ...
