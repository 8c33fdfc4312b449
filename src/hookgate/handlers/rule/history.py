"""The session history rule hooks read: the engine's record of tool calls.

A rule hook's matcher selects the calls it judges, not the calls its ``after``, ``require``
and ``sequence`` look back at (``no WebFetch after a Read of a secret``: the hook matches
``WebFetch``, the history must hold the ``Read``). So the engine, not the hook, keeps it: for
each ``pre_tool_use`` it admits (and each ``post_tool_use``, a call that succeeded) whose tool
name matches a pattern some rule hook of the event's tenant and agent names, it stamps the
time under (tenant, kind, per, session or agent id, pattern). Only those patterns are kept,
and nothing when no rule hook looks back, so an engine without rules pays one set lookup.

The patterns come from the ``pre_tool_use`` rule hooks the event's tenant and agent resolve
to (the hooks that judge tool calls); the plan is made once per resolved hook list and kept
on it (:attr:`HookList.history_plan`).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final, Protocol

from hookgate.compiled_hook import HookList
from hookgate.events import EVENTS_BY_NAME
from hookgate.handlers.rule import judge
from hookgate.handlers.rule.config import HISTORY_RULE_EVENT
from hookgate.handlers.rule.handler import clock_of, keeps_rules, takes_steps
from hookgate.handlers.rule.pending import OFFERED, OfferedStamps
from hookgate.log import log_event
from hookgate.outcome import HookError, Outcome
from hookgate.state.binding import store_for
from hookgate.state.rules import RuleKey, RuleStateStore, Stamp
from hookgate.state.stores import MemoryStateStore

if TYPE_CHECKING:
    from hookgate.compiled_hook import CompiledHook
    from hookgate.handlers.base import Handler, Services
    from hookgate.registry import HookSource

__all__ = ["HISTORY_EVENTS", "HistoryPlan", "RuleHost", "SessionHistory"]

#: The events whose calls are recorded, and the stamp kind each writes.
HISTORY_EVENTS: Final = {"pre_tool_use": judge.SEEN, "post_tool_use": judge.SUCCEEDED}
_RULE_EVENT: Final = HISTORY_RULE_EVENT
_NO_STAMPS: Final[tuple[Stamp, ...]] = ()


@dataclass(frozen=True, slots=True)
class HistoryPlan:
    """The tool patterns one resolved hook list watches (merged: one per pattern, per and
    kind, with the longest TTL any rule wants)."""

    watches: tuple[judge.Watch, ...]
    #: The stamps' keys and TTLs an event writes, by (stamp kind, tool name, tenant, session,
    #: agent): worked out on the first such event (an agent calls a few tools over and over
    #: in a session: one dict lookup instead of a pattern search and a key per watch);
    #: dropped whole past :data:`_KEYS_KEPT`.
    keyed: dict[tuple[Any, ...], tuple[tuple[RuleKey, float], ...]] = field(default_factory=dict)


_KEYS_KEPT: Final = 4096
_EMPTY: Final = HistoryPlan(())


def _keyed(
    plan: HistoryPlan, kind: str, tool: str, data: Mapping[str, Any]
) -> tuple[tuple[RuleKey, float], ...]:
    """The keys (and TTLs) of the stamps an event of ``tool`` writes under ``plan``."""
    tenant = judge.tenant_of(data)
    found = []
    for watch in plan.watches:
        if watch.kind != kind or not watch.matcher.matches(tool):
            continue
        subject = judge.subject_of(watch.per, data)
        if subject is not None:
            found.append((judge.stamp_key(tenant, kind, watch.per, subject, watch.pattern),
                          watch.ttl_s))
    return tuple(found)


class RuleHost(Protocol):
    """What the history needs of its engine."""

    source: HookSource
    services: Services

    def handler(self, handler_type: str) -> Handler: ...


class SessionHistory:
    """The engine's writer of rule history (see the module docstring)."""

    def __init__(self, engine: RuleHost) -> None:
        self.engine = engine

    def stamps(self, event: str, data: Mapping[str, Any]) -> tuple[Stamp, ...]:
        """What to record for this event once it is admitted (usually nothing)."""
        kind = HISTORY_EVENTS.get(event)
        if kind is None:
            return _NO_STAMPS
        source = self.engine.source
        if not source.has_event(_RULE_EVENT):
            return _NO_STAMPS
        tool = data.get("tool_name")
        if not isinstance(tool, str):
            return _NO_STAMPS
        tenant_id, agent_id = data.get("tenant_id"), data.get("agent_id")
        hooks = source.resolve(_RULE_EVENT, tenant_id, agent_id)
        plan: HistoryPlan | None = hooks.history_plan if isinstance(hooks, HookList) else None
        if plan is None:
            plan = self._plan(hooks)
        if not plan.watches:
            return _NO_STAMPS
        session_id = data.get("session_id")
        memo = (kind, tool, tenant_id, session_id, agent_id)
        # Ids are agent input of any JSON type: only strings (or none) make a memo key.
        hashable = (
            (tenant_id is None or tenant_id.__class__ is str)
            and (session_id is None or session_id.__class__ is str)
            and (agent_id is None or agent_id.__class__ is str)
        )
        keyed = plan.keyed.get(memo) if hashable else None
        if keyed is None:
            keyed = _keyed(plan, kind, tool, data)
            if hashable:
                if len(plan.keyed) >= _KEYS_KEPT:
                    plan.keyed.clear()
                plan.keyed[memo] = keyed
        if not keyed:
            return _NO_STAMPS
        store = store_for(self.engine.services)
        now = clock_of(store)()
        stamps = tuple([Stamp(key, now, ttl_s) for key, ttl_s in keyed])
        if stamps and type(store) is not MemoryStateStore and takes_steps(store):
            self._offer(event, data, stamps)
        return stamps

    def _offer(self, event: str, data: Mapping[str, Any], stamps: tuple[Stamp, ...]) -> None:
        """Offer the stamps to the selection's last enforce hook when it is a rule hook
        (:mod:`.pending`): its one step keeps them."""
        select = getattr(self.engine.source, "select", None)
        spec = EVENTS_BY_NAME.get(event)
        last = None
        if select is not None and spec is not None:
            for compiled in reversed(select(spec, data)):
                definition = compiled.definition
                if definition.enabled and definition.mode != "shadow":
                    last = definition
                    break
        offered = None
        if last is not None and last.handler_type == "rule":
            offered = OfferedStamps(stamps, data, last.id)
        OFFERED.set(offered)

    def _plan(self, hooks: Sequence[CompiledHook]) -> HistoryPlan:
        handler: Any = None
        merged: dict[tuple[str, str, str], judge.Watch] = {}
        for compiled in hooks:
            definition = compiled.definition
            if definition.handler_type != "rule" or not definition.enabled:
                continue
            if handler is None:
                handler = self.engine.handler("rule")
            try:
                rule = handler.compiled(definition)
            except HookError:
                continue  # the hook itself fails (and blocks) when it runs
            for watch in rule.watches:
                key = (watch.pattern, watch.per, watch.kind)
                held = merged.get(key)
                if held is None or held.ttl_s < watch.ttl_s:
                    merged[key] = watch
        plan = HistoryPlan(tuple(merged.values())) if merged else _EMPTY
        if isinstance(hooks, HookList):
            hooks.history_plan = plan
        return plan

    # -- writing -------------------------------------------------------------------------------

    def _store(self) -> RuleStateStore | None:
        store = store_for(self.engine.services)
        return store if keeps_rules(store) else None  # type: ignore[return-value]

    async def keep(self, stamps: Sequence[Stamp], outcome: Outcome | None) -> None:
        """Record ``stamps`` for an event that was not blocked. A ``pre_tool_use`` whose
        history cannot be written is blocked (``outcome``): a later ``after`` check would
        miss it. A ``post_tool_use`` (``outcome`` None) only logs: a missing success stamp
        makes a later ``require`` block, never pass."""
        offered = OFFERED.get()
        if offered is not None and offered.kept and offered.stamps is stamps:
            return  # the rule hook kept them in its own step
        store = self._store()
        try:
            if store is None:
                raise HookError("the hook state store keeps no rule state")
            await store.record(stamps)
        except Exception as exc:
            self._failed(exc, outcome)

    def keep_now(self, stamps: Sequence[Stamp], outcome: Outcome | None) -> bool:
        """:meth:`keep` without an event loop; False when the store needs one."""
        store = store_for(self.engine.services)
        if not isinstance(store, MemoryStateStore):
            return False
        try:
            store.record_now(stamps)
        except Exception as exc:
            self._failed(exc, outcome)
        return True

    @staticmethod
    def _failed(exc: BaseException, outcome: Outcome | None) -> None:
        log_event("hookgate.rules.history_failed", level=logging.WARNING,
                  error=f"{type(exc).__name__}: {exc}")
        if outcome is not None:
            outcome.decision = "block"
            outcome.reason = f"the session history of rule hooks was not saved: {exc}"
