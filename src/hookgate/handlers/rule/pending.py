"""The session history an event is about to record, offered to the rule hook that has its
chain's last word, so that on a store that takes a rule's whole step at once (Redis) the
history read, the admit and the history stamp are one round trip.

The engine asks :class:`~hookgate.handlers.rule.history.SessionHistory` for an event's stamps
before its chain runs and has them kept after it, unless the chain blocked. When the last
enforce hook of the event's selection is a rule hook, no later hook can block once it admits:
the history offers the stamps here (a context variable: the event's own task, the tasks it
starts and the coroutines ``fire_sync`` hands to the engine's loop thread see it), the rule
hook keeps them in its own step when it admits, and the history then skips them. Anything
else (another hook last, a payload an earlier hook rewrote, a dry run) leaves them to the
history, written after the chain as before.
"""

from __future__ import annotations

from collections.abc import Mapping
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

from hookgate.state.rules import Stamp

__all__ = ["OFFERED", "OfferedStamps"]


@dataclass(slots=True)
class OfferedStamps:
    stamps: tuple[Stamp, ...]
    #: The event's payload (the one the chain starts with: a rewritten payload is not it).
    payload: Mapping[str, Any]
    #: The hook that may keep them: the selection's last enforce hook.
    hook_id: str
    kept: bool = False


#: The stamps the current event offers (see the module docstring).
OFFERED: ContextVar[OfferedStamps | None] = ContextVar("hookgate_rule_offered", default=None)
