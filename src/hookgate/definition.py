"""Hook definitions and their validation.

A :class:`HookDefinition` is plain data: GoClaw's field set (event, handler_type, scope,
name, matcher, if_expr, timeout_ms, on_timeout, priority, enabled, config, agent_ids) plus
``version``, ``source``, the owning ``tenant_id``, hookgate's ``on_error`` policy and an
``order`` used as the documented tie-break. :func:`validate_definition` builds one from
untrusted input and reports every problem with the field it belongs to.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Final, Literal, cast

from hookgate.errors import HookgateError
from hookgate.events import MAX_TIMEOUT_MS, UnknownEventError, get_event
from hookgate.host_code import edition_refusal, runs_host_code
from hookgate.matching import FilterError, compile_if_expr, compile_matcher
from hookgate.state.model import state_problems

__all__ = [
    "DEFAULT_APPROVAL_TIMEOUT_MS",
    "DEFAULT_TIMEOUT_MS",
    "GLOBAL_TENANT",
    "MAX_APPROVAL_TIMEOUT_MS",
    "MAX_TIMEOUT_MS",
    "ApprovalPolicy",
    "DefinitionError",
    "HookDefinition",
    "Problem",
    "validate_definition",
]

DEFAULT_TIMEOUT_MS: Final = 5000
#: How long a person has to decide an approval the hook asked for (PicoClaw's default).
DEFAULT_APPROVAL_TIMEOUT_MS: Final = 60_000
#: Approvals may wait for hours, not forever: a day at most.
MAX_APPROVAL_TIMEOUT_MS: Final = 24 * 3600 * 1000
#: The sentinel tenant id global hooks are stored under (GoClaw's master tenant).
GLOBAL_TENANT: Final = "0193a5b0-7000-7000-8000-000000000001"

SCOPES: Final = ("global", "tenant", "agent")
POLICIES: Final = ("block", "allow")
SOURCES: Final = ("builtin", "user")
Scope = Literal["global", "tenant", "agent"]
Policy = Literal["block", "allow"]


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


_FIELDS: Final = frozenset(
    {
        "event",
        "handler_type",
        "scope",
        "config",
        "name",
        "matcher",
        "if_expr",
        "timeout_ms",
        "on_timeout",
        "on_error",
        "priority",
        "enabled",
        "agent_ids",
        "agent_id",
        "tenant_id",
        "id",
        "version",
        "source",
        "order",
        "metadata",
        "created_at",
        "updated_at",
        "created_by",
        "description",
        "approval",
    }
)


def parse_approval(raw: Any, problems: list[Problem]) -> ApprovalPolicy | None:
    """``approval``: ``"required"``, ``"on_ask"`` or ``{required?, timeout_ms?, on_timeout?}``."""
    if raw is None or raw == "on_ask":
        return None
    if raw == "required":
        return ApprovalPolicy(required=True)
    if not isinstance(raw, Mapping):
        problems.append(
            Problem(
                "approval",
                "must be 'required', 'on_ask' or an object {required, timeout_ms, on_timeout}",
            )
        )
        return None
    unknown = sorted(set(raw) - {"required", "timeout_ms", "on_timeout"})
    for key in unknown:
        problems.append(Problem(f"approval.{key}", "unknown field"))
    required = raw.get("required", False)
    if not isinstance(required, bool):
        problems.append(Problem("approval.required", "must be true or false"))
        required = False
    timeout_ms = raw.get("timeout_ms", DEFAULT_APPROVAL_TIMEOUT_MS)
    if (
        not isinstance(timeout_ms, int)
        or isinstance(timeout_ms, bool)
        or not 1000 <= timeout_ms <= MAX_APPROVAL_TIMEOUT_MS
    ):
        problems.append(
            Problem(
                "approval.timeout_ms",
                f"must be an integer between 1000 and {MAX_APPROVAL_TIMEOUT_MS} ms "
                f"(24 hours), got {timeout_ms!r}",
            )
        )
        timeout_ms = DEFAULT_APPROVAL_TIMEOUT_MS
    on_timeout = raw.get("on_timeout", "block")
    if on_timeout not in POLICIES:
        problems.append(
            Problem("approval.on_timeout", f"must be 'block' or 'allow', got {on_timeout!r}")
        )
        on_timeout = "block"
    if unknown:
        return None
    return ApprovalPolicy(
        required=required, timeout_ms=timeout_ms, on_timeout=cast(Policy, on_timeout)
    )


def validate_definition(
    raw: Mapping[str, Any],
    *,
    edition: str = "lite",
    known_handler_types: Iterable[str] | None = None,
    default_scope: Scope | None = None,
    check_handler_config: bool = True,
) -> HookDefinition:
    """Build a :class:`HookDefinition` from untrusted input, or raise :class:`DefinitionError`.

    Every problem is reported, each naming its field. ``default_scope`` lets a hooks file or
    code registration omit ``scope``; the WebSocket API passes ``None`` so scope stays required.
    """
    from hookgate.handlers import available_handler_types, handler_class

    problems: list[Problem] = []
    if not isinstance(raw, Mapping):
        raise DefinitionError([Problem("hook", "a hook definition must be an object")])

    unknown = sorted(set(raw) - _FIELDS)
    for key in unknown:
        problems.append(Problem(key, "unknown field"))

    missing = [
        key
        for key in ("handler_type", "event", "scope")
        if raw.get(key) in (None, "") and not (key == "scope" and default_scope)
    ]
    if missing:
        problems.append(Problem(missing[0], "handler_type, event, and scope are required"))

    event_name = raw.get("event")
    spec = None
    if event_name not in (None, ""):
        if not isinstance(event_name, str):
            problems.append(Problem("event", "must be a string"))
        else:
            try:
                spec = get_event(event_name)
            except UnknownEventError as exc:
                problems.append(Problem("event", str(exc)))

    handler_type = raw.get("handler_type")
    types = set(known_handler_types or available_handler_types())
    if handler_type not in (None, ""):
        if not isinstance(handler_type, str):
            # Untrusted JSON: an object here must be a problem, not an unhashable-type crash.
            problems.append(Problem("handler_type", "must be a string"))
            handler_type = None
        elif handler_type not in types:
            problems.append(
                Problem(
                    "handler_type",
                    f"unknown handler type {handler_type!r}; expected one of "
                    f"{', '.join(sorted(types))}",
                )
            )

    scope = raw.get("scope") or default_scope
    if scope is not None and scope not in SCOPES:
        problems.append(Problem("scope", f"must be one of {', '.join(SCOPES)}, got {scope!r}"))

    agent_ids_raw = raw.get("agent_ids")
    if agent_ids_raw is None and raw.get("agent_id"):
        agent_ids_raw = [raw["agent_id"]]
    agent_ids: tuple[str, ...] = ()
    if agent_ids_raw is not None:
        if isinstance(agent_ids_raw, list | tuple) and all(
            isinstance(a, str) and a for a in agent_ids_raw
        ):
            agent_ids = tuple(agent_ids_raw)
        else:
            problems.append(Problem("agent_ids", "must be a list of agent id strings"))
    if scope == "agent" and not agent_ids:
        problems.append(Problem("agent_ids", "agent scope needs at least one agent id"))

    name = raw.get("name") or ""
    if not isinstance(name, str):
        problems.append(Problem("name", "must be a string"))
        name = ""

    matcher = raw.get("matcher")
    if matcher is not None:
        if not isinstance(matcher, str):
            problems.append(Problem("matcher", "must be a string (a regular expression)"))
        else:
            try:
                compile_matcher(matcher)
            except FilterError as exc:
                problems.append(Problem("matcher", str(exc)))

    if_expr = raw.get("if_expr")
    if if_expr is not None:
        if not isinstance(if_expr, str):
            problems.append(Problem("if_expr", "must be a string (a CEL expression)"))
        else:
            try:
                compile_if_expr(if_expr)
            except FilterError as exc:
                problems.append(Problem("if_expr", str(exc)))

    if handler_type == "prompt" and not (matcher or (isinstance(if_expr, str) and if_expr.strip())):
        problems.append(
            Problem(
                "matcher",
                "a prompt hook needs a matcher or an if_expr, so the model is not "
                "asked about every event",
            )
        )

    timeout_ms = raw.get("timeout_ms")
    if timeout_ms in (None, 0):
        timeout_ms = spec.default_timeout_ms if spec else DEFAULT_TIMEOUT_MS
    if not isinstance(timeout_ms, int) or isinstance(timeout_ms, bool):
        problems.append(Problem("timeout_ms", "must be an integer number of milliseconds"))
        timeout_ms = DEFAULT_TIMEOUT_MS
    else:
        # Approvals and quality gates wait for a person or a reviewer: their events allow
        # long timeouts; everything else keeps GoClaw's 10 s maximum.
        longest = spec.max_timeout_ms if spec else MAX_TIMEOUT_MS
        if not 1 <= timeout_ms <= longest:
            problems.append(
                Problem(
                    "timeout_ms",
                    f"must be between 1 and {longest} ms"
                    + (f" on {spec.name}" if spec and longest != MAX_TIMEOUT_MS else "")
                    + f", got {timeout_ms}",
                )
            )

    default_policy = spec.default_policy if spec else "block"
    on_timeout = raw.get("on_timeout") or default_policy
    if on_timeout not in POLICIES:
        problems.append(Problem("on_timeout", f"must be 'block' or 'allow', got {on_timeout!r}"))
    on_error = raw.get("on_error") or default_policy
    if on_error not in POLICIES:
        problems.append(Problem("on_error", f"must be 'block' or 'allow', got {on_error!r}"))

    priority = raw.get("priority", 0)
    if not isinstance(priority, int) or isinstance(priority, bool):
        problems.append(Problem("priority", "must be an integer"))
        priority = 0

    enabled = raw.get("enabled", True)
    if not isinstance(enabled, bool):
        problems.append(Problem("enabled", "must be true or false"))
        enabled = True

    version = raw.get("version", 1)
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        problems.append(Problem("version", "must be a positive integer"))
        version = 1

    source = raw.get("source") or "user"
    if source not in SOURCES:
        problems.append(Problem("source", f"must be 'builtin' or 'user', got {source!r}"))

    config = raw.get("config")
    if config is None:
        config = {}
    if not isinstance(config, Mapping):
        problems.append(Problem("config", "must be an object"))
        config = {}
    elif check_handler_config and handler_type in types:
        try:
            cls = handler_class(handler_type)
        except ImportError as exc:
            problems.append(Problem("handler_type", f"handler {handler_type!r} unavailable: {exc}"))
        else:
            for message in cls.validate_config(config):
                problems.append(Problem("config", message))
        for message in state_problems(config.get("state")):
            problems.append(Problem("config", message))
    if isinstance(handler_type, str) and handler_type in types and isinstance(config, Mapping):
        refusal = edition_refusal(edition, handler_type)
        if refusal is not None and runs_host_code(handler_type, dict(config)):
            problems.append(Problem("handler_type", refusal))

    approval = parse_approval(raw.get("approval"), problems)
    if approval is not None and spec is not None and not spec.blocking:
        problems.append(
            Problem("approval", f"{spec.name} is not a blocking event: nothing can wait for it")
        )

    hook_id = raw.get("id")
    if hook_id is not None and not isinstance(hook_id, str):
        problems.append(Problem("id", "must be a string"))

    if problems:
        raise DefinitionError(problems, name=name or None)

    assert spec is not None and isinstance(handler_type, str)
    extra: dict[str, Any] = {}
    if hook_id:
        extra["id"] = hook_id
    order = raw.get("order", 0)
    return HookDefinition(
        event=spec.name,
        handler_type=handler_type,
        scope=cast(Scope, scope),
        config=dict(config),
        name=name,
        matcher=matcher or None,
        if_expr=if_expr or None,
        timeout_ms=timeout_ms,
        on_timeout=cast(Policy, on_timeout),
        on_error=cast(Policy, on_error),
        priority=priority,
        enabled=enabled,
        agent_ids=agent_ids,
        tenant_id=raw.get("tenant_id"),
        version=version,
        source=cast(Literal["builtin", "user"], source),
        order=order if isinstance(order, int) else 0,
        approval=approval,
        **extra,
    )
