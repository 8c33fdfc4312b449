"""The hook definition schema: one pydantic model for every way a hook arrives.

Hooks files, code registration, the store's updates and the gateway's API all validate
through :class:`DefinitionModel`, and the OpenAPI document is generated from it. The engine
runs on the plain :class:`~hookgate.definition.HookDefinition` this model builds, so that
importing the engine does not import pydantic (``hookgate claude-code`` starts once per
event); this module is imported only when something is validated.

Problems keep hookgate's own wording, each naming its field (``timeout_ms: must be between
1 and 10000 ms, got 60000``): pydantic's errors are translated in one place,
:func:`problems_from`, and the rules a handler type brings are checked in one place,
:func:`hookgate.handlers.checks.handler_problems`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Annotated, Any, Final, Literal, cast

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)
from pydantic_core import PydanticCustomError

from hookgate.definition import (
    DEFAULT_APPROVAL_TIMEOUT_MS,
    MAX_APPROVAL_TIMEOUT_MS,
    MAX_TIMEOUT_MS,
    ApprovalPolicy,
    DefinitionError,
    HookDefinition,
    Problem,
)
from hookgate.events import EventSpec, UnknownEventError, get_event
from hookgate.handlers import available_handler_types, is_handler_type
from hookgate.handlers.checks import handler_problems
from hookgate.matching import FilterError, compile_if_expr, compile_matcher

__all__ = [
    "REQUIRED_MESSAGE",
    "ApprovalModel",
    "DefinitionFields",
    "DefinitionModel",
    "problems_from",
    "validate_definition",
]

#: The seed's message for a definition without handler_type, event or scope.
REQUIRED_MESSAGE: Final = "handler_type, event, and scope are required"
_REQUIRED: Final = ("handler_type", "event", "scope")
#: The error type of a problem hookgate words itself (``ctx["problems"]``: (field, message)).
_OWN: Final = "hookgate_problems"

Scope = Literal["global", "tenant", "agent"]
Policy = Literal["block", "allow"]
Mode = Literal["enforce", "shadow"]


def _problem(field: str, message: str) -> PydanticCustomError:
    return _problems([(field, message)])


def _problems(found: Iterable[tuple[str, str]]) -> PydanticCustomError:
    found = tuple(found)
    summary = "; ".join(message for _, message in found)
    # The template is a placeholder, never the message: a message may hold braces.
    return PydanticCustomError(_OWN, "{summary}", {"summary": summary, "problems": found})


def _none_if_empty(value: Any) -> Any:
    # GoClaw's forms send "" for a field left blank: the default applies.
    return None if value == "" else value


def _list_if_tuple(value: Any) -> Any:
    return list(value) if isinstance(value, tuple) else value


def _int_or_zero(value: Any) -> int:
    # ``order`` is bookkeeping (registration order): anything else means "first".
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _plain_dict(value: Any) -> Any:
    return dict(value) if isinstance(value, Mapping) and not isinstance(value, dict) else value


class ApprovalModel(BaseModel):
    """How a hook's approvals behave: ``required`` makes every call it lets through wait for
    a person; ``timeout_ms`` is how long the person has; ``on_timeout`` is what an approval
    nobody decided in time becomes."""

    model_config = ConfigDict(extra="forbid", strict=True, title="ApprovalPolicy")

    required: bool = False
    timeout_ms: int = Field(DEFAULT_APPROVAL_TIMEOUT_MS, ge=1000, le=MAX_APPROVAL_TIMEOUT_MS)
    on_timeout: Policy = "block"


def _approval_shorthand(value: Any) -> Any:
    if value is None or value == "on_ask":
        return None
    if value == "required":
        return {"required": True}
    if isinstance(value, Mapping):
        return dict(value)
    raise _problem(
        "approval", "must be 'required', 'on_ask' or an object {required, timeout_ms, on_timeout}"
    )


def _document_shorthand(schema: dict[str, Any]) -> None:
    schema.setdefault("anyOf", []).insert(0, {"type": "string", "enum": ["required", "on_ask"]})


def _spec(info: ValidationInfo) -> EventSpec | None:
    # ``event`` comes first and leaves its spec in the context (None when it failed).
    if isinstance(info.context, dict) and "spec" in info.context:
        return cast(EventSpec | None, info.context["spec"])
    name = info.data.get("event")
    return get_event(name) if isinstance(name, str) else None


def _context(info: ValidationInfo) -> Mapping[str, Any]:
    return info.context or {}


class DefinitionFields(BaseModel):
    """A hook definition as its author writes it (GoClaw's field set, snake_case).

    ``event``, ``handler_type`` and ``scope`` are required (a hooks file or code
    registration may leave ``scope`` to its default). Field order matters: a field's checks
    may read the fields validated before it.
    """

    model_config = ConfigDict(extra="forbid", strict=True, title="HookDefinition")

    event: str = Field(
        description="Lifecycle event name (GoClaw's, Claude Code's or PicoClaw's spelling)."
    )
    handler_type: str = Field(
        description="What runs the hook: command, http, prompt, agent, callable, process, "
        "quality_gate (the gateway's info lists the ones it accepts)."
    )
    scope: Scope = Field(description="global (master scope only), tenant or agent.")
    agent_ids: Annotated[
        list[str] | None, BeforeValidator(_list_if_tuple), Field(validate_default=True)
    ] = Field(None, description="Restrict the hook to these agents (needed for scope agent).")
    agent_id: str | None = Field(None, description="GoClaw's single agent id: agent_ids [id].")
    name: str | None = Field(None, description="Human-readable label.")
    if_expr: str | None = Field(
        None, description='CEL expression over the event (tool_name == "exec" && depth < 2).'
    )
    matcher: str | None = Field(
        None, description="RE2 regular expression the event's tool name must match."
    )
    timeout_ms: int | None = Field(
        None,
        description="Per-hook timeout; 0 or absent: the event's default (5000 ms, at most "
        "10000 except on approval and quality-gate events).",
    )
    on_timeout: Annotated[Policy | None, BeforeValidator(_none_if_empty)] = Field(
        None,
        description="What a timeout becomes; absent: block on blocking events, else allow.",
    )
    on_error: Annotated[Policy | None, BeforeValidator(_none_if_empty)] = Field(
        None, description="What a handler failure becomes; default as on_timeout."
    )
    priority: int = Field(0, description="Higher runs first.")
    enabled: bool = True
    tenant_id: str | None = Field(
        None, description="Master scope only: the tenant the hook belongs to."
    )
    description: str | None = None
    metadata: dict[str, Any] | None = None
    approval: Annotated[
        ApprovalModel | None,
        BeforeValidator(_approval_shorthand),
        Field(json_schema_extra=_document_shorthand),
    ] = Field(
        None,
        description="When a person decides: 'on_ask' (the default: when the hook asks), "
        "'required' (every call it lets through) or an object.",
    )
    config: Annotated[
        dict[str, Any], BeforeValidator(lambda v: {} if v is None else _plain_dict(v))
    ] = Field(default_factory=dict, description="Handler-specific settings.")
    mode: Annotated[Mode, BeforeValidator(lambda v: "enforce" if v in (None, "") else v)] = Field(
        "enforce",
        description="enforce (the hook decides) or shadow (it runs and its answer is recorded "
        "as what it would have decided; it never changes the outcome).",
    )

    @model_validator(mode="before")
    @classmethod
    def _shape(cls, data: Any, info: ValidationInfo) -> Any:
        if not isinstance(data, Mapping):
            raise _problem("hook", "a hook definition must be an object")
        data = {k: v for k, v in data.items() if not (k in _REQUIRED and v in (None, ""))}
        default_scope = _context(info).get("default_scope")
        if default_scope:
            data.setdefault("scope", default_scope)
        if data.get("agent_ids") is None and data.get("agent_id"):
            data["agent_ids"] = [data["agent_id"]]
        return data

    @field_validator("event")
    @classmethod
    def _known_event(cls, name: str, info: ValidationInfo) -> str:
        try:
            spec = get_event(name)
        except UnknownEventError as exc:
            raise _problem("event", str(exc)) from None
        if isinstance(info.context, dict):
            info.context["spec"] = spec  # for the fields whose rules depend on the event
        return spec.name

    @field_validator("handler_type")
    @classmethod
    def _known_handler_type(cls, name: str, info: ValidationInfo) -> str:
        types = _context(info).get("known_handler_types")
        if not (name in types if types else is_handler_type(name)):
            types = types or available_handler_types()
            raise _problem(
                "handler_type",
                f"unknown handler type {name!r}; expected one of {', '.join(sorted(types))}",
            )
        return name

    @field_validator("agent_ids")
    @classmethod
    def _agents(cls, ids: list[str] | None, info: ValidationInfo) -> list[str] | None:
        if ids is not None and not all(ids):
            raise _problem("agent_ids", "must be a list of agent id strings")
        if info.data.get("scope") == "agent" and not ids:
            raise _problem("agent_ids", "agent scope needs at least one agent id")
        return ids

    @field_validator("if_expr")
    @classmethod
    def _compiles_as_cel(cls, source: str | None) -> str | None:
        try:
            compile_if_expr(source)
        except FilterError as exc:
            raise _problem("if_expr", str(exc)) from None
        return source

    @field_validator("matcher")
    @classmethod
    def _compiles_as_re2(cls, pattern: str | None) -> str | None:
        try:
            compile_matcher(pattern)
        except FilterError as exc:
            raise _problem("matcher", str(exc)) from None
        return pattern

    @field_validator("timeout_ms")
    @classmethod
    def _timeout_in_range(cls, timeout_ms: int | None, info: ValidationInfo) -> int | None:
        if not timeout_ms:
            return None  # the event's default
        spec = _spec(info)
        # Approvals and quality gates wait for a person or a reviewer: their events allow
        # long timeouts; everything else keeps GoClaw's 10 s maximum.
        longest = spec.max_timeout_ms if spec else MAX_TIMEOUT_MS
        if not 1 <= timeout_ms <= longest:
            where = f" on {spec.name}" if spec and longest != MAX_TIMEOUT_MS else ""
            raise _problem(
                "timeout_ms", f"must be between 1 and {longest} ms{where}, got {timeout_ms}"
            )
        return timeout_ms

    @field_validator("approval")
    @classmethod
    def _blocking_event(cls, approval: ApprovalModel | None, info: ValidationInfo) -> Any:
        spec = _spec(info)
        if approval is not None and spec is not None and not spec.blocking:
            raise _problem(
                "approval", f"{spec.name} is not a blocking event: nothing can wait for it"
            )
        return approval

    @field_validator("config")
    @classmethod
    def _handler_rules(cls, config: dict[str, Any], info: ValidationInfo) -> dict[str, Any]:
        data = info.data  # a fresh dict on every access
        handler_type = data.get("handler_type")
        if handler_type is None:  # missing or unknown: reported on its own field
            return config
        # A filter missing from ``data`` failed to compile: that problem is reported alone.
        matcher = data.get("matcher", "failed")
        if_expr = data.get("if_expr", "failed")
        filtered = bool(matcher) or bool((if_expr or "").strip())
        context = _context(info)
        found = handler_problems(
            handler_type,
            config,
            edition=context.get("edition", "lite"),
            filtered=filtered,
            check_config=context.get("check_handler_config", True),
        )
        if found:
            raise _problems(found)
        return config


class DefinitionModel(DefinitionFields):
    """A whole definition: what the author writes plus the identity a stored hook, a hooks
    file or an export carries (the gateway's API sets these itself)."""

    id: str | None = None
    version: int = Field(1, ge=1)
    source: Annotated[Literal["builtin", "user"] | None, BeforeValidator(_none_if_empty)] = None
    #: Tie-break after priority: lower runs first (registration order, or creation time).
    order: Annotated[int, BeforeValidator(_int_or_zero)] = 0
    #: Bookkeeping a stored hook carries; ignored.
    created_at: Any = None
    updated_at: Any = None
    created_by: Any = None

    def to_definition(self) -> HookDefinition:
        """The engine's plain, frozen :class:`HookDefinition`, with the event's defaults for
        what the definition left out."""
        spec = get_event(self.event)
        policy = cast(Policy, spec.default_policy)
        approval = self.approval
        extra: dict[str, Any] = {"id": self.id} if self.id else {}
        return HookDefinition(
            event=self.event,
            handler_type=self.handler_type,
            scope=self.scope,
            config=self.config,
            name=self.name or "",
            matcher=self.matcher or None,
            if_expr=self.if_expr or None,
            timeout_ms=self.timeout_ms or spec.default_timeout_ms,
            on_timeout=self.on_timeout or policy,
            on_error=self.on_error or policy,
            priority=self.priority,
            enabled=self.enabled,
            agent_ids=tuple(self.agent_ids or ()),
            tenant_id=self.tenant_id,
            version=self.version,
            source=self.source or "user",
            order=self.order,
            approval=None
            if approval is None
            else ApprovalPolicy(approval.required, approval.timeout_ms, approval.on_timeout),
            mode=self.mode,
            **extra,
        )


# --- pydantic's errors in hookgate's words ----------------------------------------------------


def _got(message: str) -> Callable[[Any], str]:
    return lambda value: f"{message}, got {value!r}"


#: Per field: the message when the value has the wrong type or is out of range.
_MESSAGES: Final[dict[str, str | Callable[[Any], str]]] = {
    "event": "must be a string",
    "handler_type": "must be a string",
    "scope": _got("must be one of global, tenant, agent"),
    "agent_ids": "must be a list of agent id strings",
    "agent_id": "must be a string",
    "name": "must be a string",
    "if_expr": "must be a string (a CEL expression)",
    "matcher": "must be a string (a regular expression)",
    "timeout_ms": "must be an integer number of milliseconds",
    "on_timeout": _got("must be 'block' or 'allow'"),
    "on_error": _got("must be 'block' or 'allow'"),
    "priority": "must be an integer",
    "enabled": "must be true or false",
    "tenant_id": "must be a string",
    "description": "must be a string",
    "metadata": "must be an object",
    "config": "must be an object",
    "id": "must be a string",
    "version": "must be a positive integer",
    "source": _got("must be 'builtin' or 'user'"),
    "approval.required": "must be true or false",
    "approval.timeout_ms": lambda value: (
        f"must be an integer between 1000 and {MAX_APPROVAL_TIMEOUT_MS} ms (24 hours), "
        f"got {value!r}"
    ),
    "approval.on_timeout": _got("must be 'block' or 'allow'"),
    "mode": _got("must be 'enforce' or 'shadow'"),
}
_ORDER: Final = {name: index for index, name in enumerate(DefinitionModel.model_fields)}


def problems_from(exc: ValidationError) -> list[Problem]:
    """Each of pydantic's errors as a :class:`Problem` in hookgate's wording: unknown fields
    first, one seed message for the missing required fields, then in field order."""
    unknown: list[Problem] = []
    found: list[Problem] = []
    missing: set[str] = set()
    for error in exc.errors(include_url=False):
        loc = [str(part) for part in error["loc"] if not isinstance(part, int)]
        where = ".".join(loc) or "hook"
        kind = error["type"]
        if kind == _OWN:
            found.extend(Problem(f, m) for f, m in error["ctx"]["problems"])
        elif kind == "extra_forbidden":
            unknown.append(Problem(where, "unknown field"))
        elif kind == "missing" and where in _REQUIRED:
            missing.add(where)
        else:
            message = _MESSAGES.get(where, error["msg"])
            if callable(message):
                message = message(error.get("input"))
            found.append(Problem(where, message))
    if missing:
        first = next(name for name in _REQUIRED if name in missing)
        found.append(Problem(first, REQUIRED_MESSAGE))
    found.sort(key=lambda p: _ORDER.get(p.field.partition(".")[0], len(_ORDER)))
    unknown.sort(key=lambda p: p.field)
    # A list with several bad items is one problem with the list.
    return list(dict.fromkeys(unknown + found))


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
    code registration omit ``scope``; the WebSocket API passes ``None`` so scope stays
    required. Import this where pydantic's import time does not matter, or lazily (the
    engine does).
    """
    context: dict[str, Any] = {
        "spec": None,
        "edition": edition,
        "known_handler_types": None if known_handler_types is None else list(known_handler_types),
        "default_scope": default_scope,
        "check_handler_config": check_handler_config,
    }
    try:
        model = DefinitionModel.model_validate(raw, context=context)
    except ValidationError as exc:
        name = raw.get("name") if isinstance(raw, Mapping) else None
        raise DefinitionError(
            problems_from(exc), name=name if isinstance(name, str) and name else None
        ) from None
    return model.to_definition()
