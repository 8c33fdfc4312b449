"""Hook state: a small key-value map per session and per run, each entry with a TTL.

A hook opts in with ``config.state``: ``true`` or ``{"namespace": "...", "ttl_s": 600}``.
Hooks that share a namespace share state (the four hooks of a narration guard); the
namespace defaults to the hook's name. On the gateway every scope is also keyed by the
event's tenant, which the gateway sets from the caller's key, so tenants never meet.

* Callable hooks read and write ``event.state.session`` / ``event.state.run`` (a mapping
  with ``set(key, value, ttl_s=...)``); changes are applied when the hook returns.
* Command, http and process hooks get ``"state": {"session": {...}, "run": {...}}`` in
  their input and may answer ``"state": {"session": {"key": value, "gone": null}}``: a
  value sets the key, ``null`` deletes it.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator, Mapping, MutableMapping
from dataclasses import dataclass, field
from typing import Any, Final

from hookgate.errors import HookgateError

__all__ = [
    "DEFAULT_TTL_S",
    "MAX_KEYS_PER_SCOPE",
    "MAX_VALUE_BYTES",
    "SCOPES",
    "HookStateView",
    "ScopeKey",
    "ScopeView",
    "StateChange",
    "StateError",
    "StateSpec",
    "parse_changes",
    "scope_keys",
    "state_problems",
    "state_spec",
]

SCOPES: Final = ("session", "run")
DEFAULT_TTL_S: Final = 600.0
MAX_TTL_S: Final = 30 * 86400.0
MAX_KEY_CHARS: Final = 200
MAX_VALUE_BYTES: Final = 16 * 1024
MAX_KEYS_PER_SCOPE: Final = 256
_SPEC_KEYS: Final = frozenset({"namespace", "ttl_s"})


class StateError(HookgateError, ValueError):
    """A state change that breaks the limits, or a scope the event does not have."""


@dataclass(frozen=True, slots=True)
class ScopeKey:
    tenant_id: str
    namespace: str
    scope: str  # "session" or "run"
    scope_id: str


@dataclass(frozen=True, slots=True)
class StateChange:
    key: ScopeKey
    name: str
    value: Any  # None deletes
    ttl_s: float


@dataclass(frozen=True, slots=True)
class StateSpec:
    namespace: str
    ttl_s: float


def state_problems(raw: Any) -> list[str]:
    """Problems with a hook's ``config.state``; empty when it is usable."""
    if raw is None or isinstance(raw, bool):
        return []
    if not isinstance(raw, Mapping):
        return ["state must be true, false or {namespace, ttl_s}"]
    problems = [f"state: unknown key {key!r}" for key in sorted(set(raw) - _SPEC_KEYS)]
    namespace = raw.get("namespace")
    if namespace is not None and (not isinstance(namespace, str) or not namespace
                                  or len(namespace) > MAX_KEY_CHARS):
        problems.append(f"state.namespace must be a non-empty string of at most "
                        f"{MAX_KEY_CHARS} characters")
    ttl = raw.get("ttl_s")
    if ttl is not None and (isinstance(ttl, bool) or not isinstance(ttl, int | float)
                            or not 0 < ttl <= MAX_TTL_S):
        problems.append(f"state.ttl_s must be a number of seconds in (0, {int(MAX_TTL_S)}]")
    return problems


def state_spec(config: Mapping[str, Any], hook_name: str) -> StateSpec | None:
    """The hook's state settings, ``None`` when it did not opt in."""
    raw = config.get("state")
    if not raw:
        return None
    if raw is True:
        return StateSpec(hook_name, DEFAULT_TTL_S)
    return StateSpec(str(raw.get("namespace") or hook_name),
                     float(raw.get("ttl_s") or DEFAULT_TTL_S))


def _run_id(payload: Mapping[str, Any]) -> str | None:
    value = payload.get("run_id") or payload.get("turn_id")
    return str(value) if value else None


def scope_keys(spec: StateSpec, payload: Mapping[str, Any]) -> dict[str, ScopeKey]:
    """The scopes this event has: ``session`` when it names a session, ``run`` when it
    names a run (``run_id``, or ``turn_id`` which spans the agent's whole turn)."""
    tenant = str(payload.get("tenant_id") or "")
    keys = {}
    session = payload.get("session_id")
    if session:
        keys["session"] = ScopeKey(tenant, spec.namespace, "session", str(session))
    run = _run_id(payload)
    if run:
        keys["run"] = ScopeKey(tenant, spec.namespace, "run", run)
    return keys


def _checked(name: Any, value: Any) -> None:
    if not isinstance(name, str) or not name or len(name) > MAX_KEY_CHARS:
        raise StateError(f"state keys must be strings of 1..{MAX_KEY_CHARS} characters, "
                         f"got {name!r:.60}")
    if value is not None:
        try:
            size = len(json.dumps(value, separators=(",", ":")).encode())
        except (TypeError, ValueError) as exc:
            raise StateError(f"state value for {name!r} is not JSON: {exc}") from None
        if size > MAX_VALUE_BYTES:
            raise StateError(f"state value for {name!r} is {size} bytes; the limit is "
                             f"{MAX_VALUE_BYTES}")


def parse_changes(raw: Any, keys: Mapping[str, ScopeKey], ttl_s: float) -> list[StateChange]:
    """A JSON hook's ``state`` answer as changes; raise :class:`StateError` when it is bad."""
    if not isinstance(raw, Mapping):
        raise StateError("'state' in a hook answer must be an object of scopes")
    changes = []
    for scope, entries in raw.items():
        if scope not in SCOPES:
            raise StateError(f"unknown state scope {scope!r}; expected session or run")
        if not isinstance(entries, Mapping):
            raise StateError(f"state.{scope} must be an object of key: value")
        key = keys.get(scope)
        if key is None:
            raise StateError(f"the event has no {scope} id, so state.{scope} cannot be kept")
        for name, value in entries.items():
            _checked(name, value)
            changes.append(StateChange(key, name, value, ttl_s))
    return changes


class ScopeView(MutableMapping[str, Any]):
    """One scope's entries as a callable hook sees them; writes are collected."""

    def __init__(self, key: ScopeKey, entries: Mapping[str, Any], ttl_s: float) -> None:
        self.key = key
        self._entries = dict(entries)
        self._ttl_s = ttl_s
        self.changes: dict[str, StateChange] = {}

    def __getitem__(self, name: str) -> Any:
        return self._entries[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._entries)

    def __len__(self) -> int:
        return len(self._entries)

    def __setitem__(self, name: str, value: Any) -> None:
        self.set(name, value)

    def __delitem__(self, name: str) -> None:
        del self._entries[name]
        self.changes[name] = StateChange(self.key, name, None, self._ttl_s)

    def set(self, name: str, value: Any, *, ttl_s: float | None = None) -> None:
        """Set ``name``; ``ttl_s`` overrides the hook's TTL for this entry."""
        if value is None:
            self.pop(name, None)
            return
        _checked(name, value)
        ttl = self._ttl_s if ttl_s is None else float(ttl_s)
        if not 0 < ttl <= MAX_TTL_S:
            raise StateError(f"ttl_s must be in (0, {int(MAX_TTL_S)}]")
        if name not in self._entries and len(self._entries) >= MAX_KEYS_PER_SCOPE:
            raise StateError(f"a state scope holds at most {MAX_KEYS_PER_SCOPE} keys")
        self._entries[name] = value
        self.changes[name] = StateChange(self.key, name, value, ttl)

    def __repr__(self) -> str:
        return f"ScopeView({self.key.scope}={self.key.scope_id!r}, {self._entries!r})"


@dataclass(slots=True)
class HookStateView:
    """``event.state`` for a callable hook: ``.session`` and ``.run`` (``None`` when the event
    has no session or run id)."""

    session: ScopeView | None = None
    run: ScopeView | None = None
    loaded_at: float = field(default_factory=time.time)

    def changes(self) -> list[StateChange]:
        return [change for view in (self.session, self.run) if view is not None
                for change in view.changes.values()]
