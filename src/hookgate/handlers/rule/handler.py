"""The ``rule`` handler: judges a call by the rule's counters and the session history.

A rule runs no code on the host: a tenant admin may create one without
``--tenant-host-code``, and every edition offers it. On a store in this process (memory, the
JSON file) it is a plain function, answered without an event loop; on the gateway's SQL or
Redis store it runs on the loop. The history checks come first and the limit last, so a call
another check blocks takes no slot. A dry run (``Engine.test``) looks at the counter without
taking a slot.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from functools import partial
from typing import Any, ClassVar

from pydantic import ValidationError

from hookgate.definition import HookDefinition
from hookgate.events import get_event
from hookgate.handlers.base import Capabilities, Handler, Invocation, PlainFunction, Services
from hookgate.handlers.rule import judge
from hookgate.handlers.rule.config import HISTORY_RULE_EVENT, config_problems
from hookgate.handlers.rule.pending import OFFERED
from hookgate.hook_event import HookEvent
from hookgate.outcome import HookError, HookResult, InfrastructureError
from hookgate.state.binding import store_for
from hookgate.state.rules import Admission, LookBack, RuleStateStore, RuleStep, SteppingStore
from hookgate.state.stores import MemoryStateStore

__all__ = ["RuleHandler", "clock_of", "keeps_rules", "rule_store", "takes_steps"]


def clock_of(store: object) -> Callable[[], float]:
    """The store's clock (every hookgate store has one; tests set it): rule windows and the
    history use the time the state is kept by."""
    clock = getattr(store, "clock", None)
    return clock if callable(clock) else time.time


#: Per (store class, protocol): whether the class speaks it (a protocol check is slow: it is
#: made once per class).
_SPEAKS: dict[tuple[type, type], bool] = {}


def _speaks(store: object, protocol: type) -> bool:
    key = (type(store), protocol)
    known = _SPEAKS.get(key)
    if known is None:
        known = _SPEAKS[key] = isinstance(store, protocol)
    return known


def keeps_rules(store: object) -> bool:
    """Whether ``store`` keeps rule state."""
    return _speaks(store, RuleStateStore)


def takes_steps(store: object) -> bool:
    """Whether ``store`` takes a rule's whole step at once."""
    return _speaks(store, SteppingStore)


def rule_store(services: Services) -> RuleStateStore:
    """The engine's hook state store, which must keep rule state (every hookgate store
    does; a store of the embedding program's own may not)."""
    store = store_for(services)
    if not keeps_rules(store):
        raise HookError(f"the hook state store {type(store).__name__} keeps no rule state")
    return store  # type: ignore[return-value]


class RuleHandler(Handler):
    handler_type: ClassVar[str] = "rule"
    capabilities: ClassVar[Capabilities] = Capabilities()
    config_model: ClassVar[str] = "hookgate.handlers.rule.config:RuleConfig"

    def __init__(self, services: Services) -> None:
        super().__init__(services)
        self._rules: dict[tuple[str, int], judge.CompiledRule] = {}

    @classmethod
    def validate_config(cls, config: Mapping[str, Any]) -> list[str]:
        return config_problems(config)

    def compiled(self, hook: HookDefinition) -> judge.CompiledRule:
        """The hook's rule, compiled once per version."""
        key = (hook.id, hook.version)
        rule = self._rules.get(key)
        if rule is None:
            try:
                rule = judge.compile_rule(hook)
            except ValidationError as exc:
                raise HookError(f"invalid rule config: {exc.error_count()} problem(s)") from None
            if rule.needs and get_event(hook.event).name != HISTORY_RULE_EVENT:
                # The engine writes the history for pre_tool_use rules only: elsewhere an
                # after-check would never see a call, so the hook fails (and blocks) instead.
                raise HookError(
                    "after, require and sequence judge pre_tool_use calls only (the session "
                    f"history is kept for them); this rule hook is on {hook.event}"
                )
            if len(self._rules) > 4096:
                self._rules.clear()
            self._rules[key] = rule
        return rule

    def forget(self, hook_id: str) -> None:
        for key in [k for k in self._rules if k[0] == hook_id]:
            del self._rules[key]

    # -- in this process: a plain function ----------------------------------------------------

    def sync_function(self, hook: HookDefinition) -> PlainFunction | None:
        store = store_for(self.services)
        if not isinstance(store, MemoryStateStore):
            return None  # a database or Redis: the loop's path
        try:
            rule = self.compiled(hook)
        except HookError:
            return None  # run() reports it
        return PlainFunction(partial(self._judge_now, rule, store), isolated=False)

    def _judge_now(
        self, rule: judge.CompiledRule, store: MemoryStateStore, event: HookEvent
    ) -> HookResult | None:
        payload = event.payload
        refused = judge.missing_subject(rule, payload)
        if refused is not None:
            return refused
        now = store.clock()
        if rule.needs:
            keys = judge.history_keys(rule, payload)
            verdict = judge.history_verdict(rule, payload, keys, store.recall_now(keys), now)
            if verdict is not None:
                return verdict
        limit = rule.config.limit
        if limit is None:
            return None
        key, ends_in = judge.limit_key(rule, payload, now)
        admission = store.admit_now(key, limit.count, ends_in)
        if admission.admitted:
            return None  # the common answer, without a call to say so
        return judge.limit_verdict(rule, admission, ends_in)

    # -- on the loop (any store) -------------------------------------------------------------

    async def run(self, call: Invocation) -> HookResult | Mapping[str, Any] | None:
        rule = self.compiled(call.hook)
        payload = call.payload
        refused = judge.missing_subject(rule, payload)
        if refused is not None:
            return refused
        store = rule_store(self.services)
        now = clock_of(store)()
        if not call.dry_run and takes_steps(store):
            return await self._step(rule, call, store, now)  # type: ignore[arg-type]
        try:
            if rule.needs:
                keys = judge.history_keys(rule, payload)
                stamps = await store.recall(keys)
                verdict = judge.history_verdict(rule, payload, keys, stamps, now)
                if verdict is not None:
                    return verdict
            if rule.config.limit is None:
                return None
            key, ends_in = judge.limit_key(rule, payload, now)
            limit = rule.config.limit.count
            if call.dry_run:  # a look: what admit would answer, without taking the slot
                held = await store.peek(key)
                admission = Admission(held < limit, held + 1 if held < limit else held)
            else:
                admission = await store.admit(key, limit, ends_in)
        except Exception as exc:  # the database or Redis: the gateway's failure, not the rule's
            raise InfrastructureError(f"rule state unavailable: {exc}") from None
        return judge.limit_verdict(rule, admission, ends_in)

    async def _step(
        self, rule: judge.CompiledRule, call: Invocation, store: SteppingStore, now: float
    ) -> HookResult | None:
        """The rule on a store that takes its whole step at once: history checks, admit and
        (when this hook has the chain's last word) the event's history stamps, in one round
        trip (:mod:`.pending`)."""
        payload = call.payload
        keys = judge.history_keys(rule, payload) if rule.needs else ()
        checks = [
            LookBack(need.role == "after", len(need.patterns), need.within_s) for need in rule.needs
        ]
        limit = rule.config.limit
        ends_in = 0.0
        counter = None
        if limit is not None:
            key, ends_in = judge.limit_key(rule, payload, now)
            counter = (key, limit.count, ends_in)
        offered = OFFERED.get()
        if offered is not None and (
            offered.kept or offered.hook_id != call.hook.id or offered.payload is not payload
        ):
            offered = None
        stamps = offered.stamps if offered is not None else ()
        try:
            answer = await store.rule_step(RuleStep(keys, checks, counter, stamps, now))
        except Exception as exc:  # Redis: the gateway's failure, not the rule's
            raise InfrastructureError(f"rule state unavailable: {exc}") from None
        if not answer.passed:
            verdict = judge.history_verdict(rule, payload, keys, answer.history, now)
            return verdict or judge.block(rule, "the session history does not allow this call")
        if offered is not None and (answer.admission is None or answer.admission.admitted):
            offered.kept = True
        if answer.admission is None:
            return None
        return judge.limit_verdict(rule, answer.admission, ends_in)
