"""The engine's side of hook state: state in before a hook runs, changes out after.

A callable hook gets live :class:`HookStateView` objects in ``event.state``; every other
handler gets plain JSON. A hook's changes are applied only when it answered (not when it
failed or timed out), and a change that breaks the limits fails the hook like any other
malformed answer.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from hookgate.definition import HookDefinition
from hookgate.log import log_event
from hookgate.outcome import HookResult, InfrastructureError
from hookgate.state.model import (
    MAX_KEYS_PER_SCOPE,
    HookStateView,
    ScopeKey,
    ScopeView,
    StateChange,
    StateError,
    StateSpec,
    parse_changes,
    scope_keys,
    state_spec,
)
from hookgate.state.stores import FileStateStore, MemoryStateStore, StateStore


class StateHolder(Protocol):
    """Where the hook-state store lives: :class:`hookgate.handlers.Services`, named by its
    shape (the handlers sit above hook state)."""

    hook_state: StateStore | None

__all__ = ["STATE_CHANGES_DETAIL", "PendingState", "commit_state", "prepare_state", "store_for"]

#: Where a handler that coerces its own answer leaves the ``state`` it was given.
STATE_CHANGES_DETAIL = "state_changes"


def store_for(services: StateHolder) -> StateStore:
    """The configured state store (``services.hook_state``); else a file store at
    ``$HOOKGATE_STATE_FILE``, else one in memory."""
    if services.hook_state is None:
        path = os.environ.get("HOOKGATE_STATE_FILE")
        services.hook_state = FileStateStore(path) if path else MemoryStateStore()
    return services.hook_state


@dataclass(slots=True)
class PendingState:
    spec: StateSpec
    keys: dict[str, ScopeKey]
    loaded: dict[ScopeKey, dict[str, Any]]
    view: HookStateView | None


async def prepare_state(
    store: StateStore, hook: HookDefinition, payload: Mapping[str, Any]
) -> tuple[Mapping[str, Any], PendingState | None]:
    """The payload with ``state`` added for ``hook``, or the payload as it was."""
    spec = state_spec(hook.config, hook.name or hook.id)
    if spec is None:
        return payload, None
    if hook.scope != "global":
        # A tenant's own hooks get namespaces apart from the operator's global hooks, so a
        # tenant cannot read or rewrite what a global guard keeps about its sessions.
        spec = StateSpec(f"tenant:{spec.namespace}", spec.ttl_s)
    keys = scope_keys(spec, payload)
    try:
        loaded = await store.load(list(keys.values())) if keys else {}
    except Exception as exc:  # Redis or the database: the gateway's failure, not the hook's
        raise InfrastructureError(f"hook state unavailable: {exc}") from None
    view = None
    if hook.handler_type == "callable":
        views = {scope: ScopeView(key, loaded.get(key, {}), spec.ttl_s)
                 for scope, key in keys.items()}
        view = HookStateView(session=views.get("session"), run=views.get("run"))
        state: Any = view
    else:
        state = {scope: loaded.get(key, {}) for scope, key in keys.items()}
    return {**payload, "state": state}, PendingState(spec, keys, loaded, view)


def _answer_changes(answer: Any, pending: PendingState) -> tuple[Any, list[StateChange]]:
    raw: Any = None
    if isinstance(answer, HookResult):
        raw = answer.details.pop(STATE_CHANGES_DETAIL, None)
    elif isinstance(answer, Mapping) and "state" in answer:
        raw = answer["state"]
        answer = {key: value for key, value in answer.items() if key != "state"}
        if not answer:
            answer = None
    if raw is None:
        return answer, []
    return answer, parse_changes(raw, pending.keys, pending.spec.ttl_s)


async def commit_state(store: StateStore, pending: PendingState, answer: Any) -> Any:
    """Apply the hook's changes; return its answer without the ``state`` part."""
    answer, changes = _answer_changes(answer, pending)
    if pending.view is not None:
        changes = pending.view.changes() + changes
    if not changes:
        return answer
    for key in {change.key for change in changes}:
        names = set(pending.loaded.get(key, {}))
        for change in changes:
            if change.key == key:
                (names.discard if change.value is None else names.add)(change.name)
        if len(names) > MAX_KEYS_PER_SCOPE:
            raise StateError(f"a state scope holds at most {MAX_KEYS_PER_SCOPE} keys")
    try:
        await store.apply(changes)
    except Exception as exc:
        raise InfrastructureError(f"hook state not saved: {exc}") from None
    log_event("hookgate.state.changed", level=logging.DEBUG, namespace=pending.spec.namespace,
              changes=len(changes))
    return answer
