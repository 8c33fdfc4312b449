"""Where the engine finds the hooks for an event.

A :class:`CompiledHook` is a definition with its matcher and ``if_expr`` compiled, made once
per hook version. A :class:`HookSource` answers "which hooks, in which order, for this event
of this tenant and agent". :class:`HookRegistry` is the in-memory source used by the library;
the gateway's database-backed source has the same two methods.
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

from hookgate.compiled_hook import CompiledHook, HookList
from hookgate.definition import HookDefinition
from hookgate.events import LONG_WAIT_ABOVE_S, EventSpec
from hookgate.matcher_index import SelectingSource, Selections, keep_for
from hookgate.matching import compile_if_expr, compile_matcher

__all__ = [
    "CompiledHook",
    "HookRegistry",
    "HookSource",
    "MatchingSource",
    "applies_to",
    "compile_hook",
    "sort_key",
]


def sort_key(priority: int, order: int, hook_id: str) -> tuple[int, int, str]:
    """The documented order: priority descending, then ``order`` ascending, then id.

    Fixed when a hook is compiled, so a chain runs its hooks as they come.
    """
    return (-priority, order, hook_id)


def compile_hook(definition: HookDefinition) -> CompiledHook:
    matcher = compile_matcher(definition.matcher)
    condition = compile_if_expr(definition.if_expr)
    timeout_s = definition.timeout_ms / 1000.0
    approval = definition.approval
    order = sort_key(definition.priority, definition.order, definition.id)
    unconditional_once_matched = (
        definition.enabled
        and condition is None
        and (approval is None or not approval.required)
        and timeout_s <= LONG_WAIT_ABOVE_S
    )
    compiled = CompiledHook(
        definition=definition,
        matcher=matcher,
        condition=condition,
        timeout_s=timeout_s,
        sort_key=order,
        unconditional=unconditional_once_matched and matcher is None,
    )
    if matcher is not None:
        matched = CompiledHook(
            definition, None, condition, timeout_s, order, unconditional_once_matched
        )
        object.__setattr__(compiled, "when_matched", matched)
    return compiled


def applies_to(definition: HookDefinition, tenant_id: str | None, agent_id: str | None) -> bool:
    """Scope rule: global hooks apply everywhere; tenant hooks to their tenant; agent hooks
    to the listed agents of their tenant."""
    if definition.scope == "global":
        return True
    # A hook with no tenant (library use, hooks files) belongs to whoever runs the engine.
    if definition.tenant_id is not None and definition.tenant_id != tenant_id:
        return False
    if definition.scope == "agent":
        return agent_id is not None and agent_id in definition.agent_ids
    return True


@runtime_checkable
class HookSource(Protocol):
    def resolve(
        self, event: str, tenant_id: str | None, agent_id: str | None
    ) -> Sequence[CompiledHook]:
        """Hooks for the event, sorted by the chain order. Must not touch a database."""
        ...

    def has_event(self, event: str) -> bool:
        """Whether any hook at all exists for ``event`` (the no-hook fast path)."""
        ...


@runtime_checkable
class MatchingSource(HookSource, Protocol):
    """A source that also applies the matchers (both sources of hookgate do; the engine tests
    ``isinstance`` once, and leaves the matchers of another source to the chain)."""

    def select(self, spec: EventSpec, data: Mapping[str, Any]) -> Sequence[CompiledHook]:
        """The hooks :meth:`resolve` gives for the event's tenant and agent whose matcher
        accepts its match field, each as :attr:`CompiledHook.when_matched`
        (:class:`hookgate.matcher_index.SelectingSource`)."""
        ...


class HookRegistry(SelectingSource):
    """In-memory hooks, resolved per (event, tenant, agent) and cached until a change."""

    def __init__(self, definitions: Iterable[HookDefinition] = ()) -> None:
        self._lock = threading.Lock()
        self._hooks: dict[str, CompiledHook] = {}
        self._cache: dict[tuple[str, str | None, str | None], HookList] = {}
        self._events: frozenset[str] = frozenset()
        #: The handler types of the hooks held (the engine records rule history only while a
        #: ``rule`` hook is among them).
        self.handler_types: frozenset[str] = frozenset()
        self._selections = Selections()
        self._sequence = itertools.count(1)
        for definition in definitions:
            self.put(definition)

    def next_order(self) -> int:
        return next(self._sequence)

    def put(self, definition: HookDefinition) -> CompiledHook:
        """Add or replace (by id) a hook."""
        compiled = compile_hook(definition)
        with self._lock:
            self._hooks[definition.id] = compiled
            self._changed()
        return compiled

    def remove(self, hook_id: str) -> HookDefinition | None:
        with self._lock:
            compiled = self._hooks.pop(hook_id, None)
            self._changed()
        return compiled.definition if compiled else None

    def get(self, hook_id: str) -> HookDefinition | None:
        compiled = self._hooks.get(hook_id)
        return compiled.definition if compiled else None

    def definitions(self) -> list[HookDefinition]:
        ordered = sorted(self._hooks.values(), key=lambda c: (c.definition.event, c.sort_key))
        return [c.definition for c in ordered]

    def __len__(self) -> int:
        return len(self._hooks)

    def has_event(self, event: str) -> bool:
        return event in self._events

    def resolve(self, event: str, tenant_id: str | None, agent_id: str | None) -> HookList:
        key = (event, tenant_id, agent_id)
        cached = self._cache.get(key)
        if cached is not None:
            return cached
        with self._lock:
            hooks = HookList(
                sorted(
                    (
                        c
                        for c in self._hooks.values()
                        if c.definition.event == event
                        and applies_to(c.definition, tenant_id, agent_id)
                    ),
                    key=lambda c: c.sort_key,
                )
            )
            if keep_for(self._cache, tenant_id, agent_id):
                self._cache[key] = hooks
        return hooks

    def _changed(self) -> None:
        self._cache = {}
        self._events = frozenset(c.definition.event for c in self._hooks.values())
        self.handler_types = frozenset(c.definition.handler_type for c in self._hooks.values())
        # Last: a selection made from here on resolves through the new cache.
        self._selections = Selections()
