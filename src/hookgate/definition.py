"""Hook definitions: what the engine runs on, and the problems validation reports.

A :class:`HookDefinition` is plain data: GoClaw's field set (event, handler_type, scope,
name, matcher, if_expr, timeout_ms, on_timeout, priority, enabled, config, agent_ids) plus
``version``, ``source``, the owning ``tenant_id``, hookgate's ``on_error`` policy and an
``order`` used as the documented tie-break. ``validate_definition`` builds one from untrusted
input and reports every problem with its field (:class:`DefinitionError`); it lives with the
schema, a pydantic model, in :mod:`hookgate.definition_model`, so that this module does not
import pydantic (``hookgate claude-code`` starts once per event).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Final, Literal

from hookgate.errors import HookgateError
from hookgate.events import MAX_TIMEOUT_MS

__all__ = [
    "DEFAULT_APPROVAL_TIMEOUT_MS",
    "DEFAULT_TIMEOUT_MS",
    "GLOBAL_TENANT",
    "MAX_APPROVAL_TIMEOUT_MS",
    "MAX_TIMEOUT_MS",
    "MODES",
    "ApprovalPolicy",
    "DefinitionError",
    "HookDefinition",
    "Problem",
]

DEFAULT_TIMEOUT_MS: Final = 5000
#: How long a person has to decide an approval the hook asked for (PicoClaw's default).
DEFAULT_APPROVAL_TIMEOUT_MS: Final = 60_000
#: Approvals may wait for hours, not forever: a day at most.
MAX_APPROVAL_TIMEOUT_MS: Final = 24 * 3600 * 1000
#: The sentinel tenant id global hooks are stored under (GoClaw's master tenant).
GLOBAL_TENANT: Final = "0193a5b0-7000-7000-8000-000000000001"

Scope = Literal["global", "tenant", "agent"]
Policy = Literal["block", "allow"]
#: ``enforce``: the hook decides. ``shadow``: it runs and its answer is recorded as what it
#: would have decided, but it never changes the outcome (see :mod:`hookgate.shadow`).
Mode = Literal["enforce", "shadow"]
MODES: Final = ("enforce", "shadow")


@dataclass(frozen=True, slots=True)
class Problem:
    field: str
    message: str

    def __str__(self) -> str:
        return f"{self.field}: {self.message}"


class DefinitionError(HookgateError, ValueError):
    """A hook definition failed validation; ``problems`` lists each bad field and why."""

    def __init__(self, problems: Sequence[Problem], *, name: str | None = None) -> None:
        self.problems = list(problems)
        self.hook_name = name
        where = f"hook {name!r}: " if name else ""
        super().__init__(where + "; ".join(str(p) for p in self.problems))



def random_id() -> str:
    """A random (version 4) UUID in its canonical text form, without importing uuid (which
    imports platform: start-up time of every ``hookgate claude-code`` call)."""
    value = bytearray(os.urandom(16))
    value[6] = value[6] & 0x0F | 0x40
    value[8] = value[8] & 0x3F | 0x80
    digits = value.hex()
    return f"{digits[:8]}-{digits[8:12]}-{digits[12:16]}-{digits[16:20]}-{digits[20:]}"

@dataclass(frozen=True, slots=True)
class ApprovalPolicy:
    """How a hook's approvals behave (``approval`` in a definition).

    ``required``: every call this hook lets through (allow or abstain) waits for a person, as
    if the hook had answered ``ask``. ``timeout_ms``: how long the person has. ``on_timeout``:
    what an approval nobody decided in time becomes (deny by default).
    """

    required: bool = False
    timeout_ms: int = DEFAULT_APPROVAL_TIMEOUT_MS
    on_timeout: Policy = "block"

    def to_dict(self) -> dict[str, Any]:
        return {
            "required": self.required,
            "timeout_ms": self.timeout_ms,
            "on_timeout": self.on_timeout,
        }


#: Hooks that say nothing about approvals.
DEFAULT_APPROVAL: Final = ApprovalPolicy()


@dataclass(frozen=True, slots=True)
class HookDefinition:
    """One validated hook. Frozen: an update produces a new definition with a higher version."""

    event: str
    handler_type: str
    scope: Scope = "global"
    config: Mapping[str, Any] = field(default_factory=dict)
    name: str = ""
    matcher: str | None = None
    if_expr: str | None = None
    timeout_ms: int = DEFAULT_TIMEOUT_MS
    on_timeout: Policy = "block"
    on_error: Policy = "block"
    priority: int = 0
    enabled: bool = True
    agent_ids: tuple[str, ...] = ()
    tenant_id: str | None = None
    id: str = field(default_factory=lambda: random_id())
    version: int = 1
    source: Literal["builtin", "user"] = "user"
    #: Tie-break after priority: lower runs first (registration order, or creation time).
    order: int = 0
    #: Set by the gateway's store, never from input: a master-scope key wrote this version,
    #: so it may run code on the host (see :mod:`hookgate.host_code`).
    written_by_master: bool = field(default=False, compare=False)
    #: Human approval settings (``None``: the defaults, approval only when the hook asks).
    approval: ApprovalPolicy | None = None
    #: ``shadow``: recorded as what it would have decided, never deciding.
    mode: Mode = "enforce"

    @property
    def shadow(self) -> bool:
        return self.mode == "shadow"

    @property
    def approval_policy(self) -> ApprovalPolicy:
        return self.approval or DEFAULT_APPROVAL

    @property
    def label(self) -> str:
        return self.name or f"{self.handler_type}:{self.id[:8]}"

    def to_dict(self, *, include_identity: bool = True) -> dict[str, Any]:
        data: dict[str, Any] = {
            "event": self.event,
            "handler_type": self.handler_type,
            "scope": self.scope,
            "name": self.name,
            "matcher": self.matcher,
            "if_expr": self.if_expr,
            "timeout_ms": self.timeout_ms,
            "on_timeout": self.on_timeout,
            "on_error": self.on_error,
            "priority": self.priority,
            "enabled": self.enabled,
            "config": _plain(self.config),
            "agent_ids": list(self.agent_ids),
            "mode": self.mode,
        }
        if self.approval is not None:
            data["approval"] = self.approval.to_dict()
        if include_identity:
            data.update(
                id=self.id,
                tenant_id=self.tenant_id,
                version=self.version,
                source=self.source,
            )
        return data

    def bumped(self, **changes: Any) -> HookDefinition:
        """A copy with ``changes`` applied and the version incremented."""
        return replace(self, version=self.version + 1, **changes)


def _plain(config: Mapping[str, Any]) -> dict[str, Any]:
    # Callables registered from code are shown by their import path, never as objects.
    out: dict[str, Any] = {}
    for key, value in config.items():
        if callable(value) and not isinstance(value, type):
            module = getattr(value, "__module__", "?")
            out[key] = f"{module}:{getattr(value, '__qualname__', repr(value))}"
        else:
            out[key] = value
    return out
