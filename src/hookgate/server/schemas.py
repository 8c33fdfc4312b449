"""Request and response models of the ``hooks.*`` methods.

The request models validate ``params`` (both the snake_case and the camelCase spelling of a
field are accepted; the camelCase one is what the seed's frames use). The response models
exist to describe payloads in the generated OpenAPI document; the hot path builds plain dicts.
Hook definitions have one schema, :class:`hookgate.definition_model.DefinitionModel`:
``hooks.create`` validates its params with it (through
:func:`hookgate.definition_model.validate_definition`, whose messages name each bad field) and the
OpenAPI document describes them with it.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from hookgate.definition_model import ApprovalModel, DefinitionFields, Policy, Scope
from hookgate.host_code import Edition

__all__ = [
    "Approval",
    "ApprovalDecideParams",
    "ApprovalIdParams",
    "ApprovalListParams",
    "ApprovalPayload",
    "ApprovalWaitParams",
    "ApprovalWatchParams",
    "ApprovalWatchPayload",
    "ApprovalsPayload",
    "ConnectParams",
    "CreateParams",
    "Dispatch",
    "DispatchIdParams",
    "DispatchListParams",
    "DispatchParams",
    "DispatchPayload",
    "DispatchesPayload",
    "Execution",
    "HistoryParams",
    "FiguresParams",
    "RevisionsParams",
    "RevisionsPayload",
    "HookRevisionView",
    "FiguresPayload",
    "HookFigures",
    "HistoryPayload",
    "Hook",
    "HookIdParams",
    "HookIdPayload",
    "HookPayload",
    "HooksPayload",
    "InfoPayload",
    "ListParams",
    "OutcomePayload",
    "TestParams",
    "TestPayload",
    "ToggleParams",
    "TogglePayload",
    "UpdateParams",
]

_HOOK_ID = Field(alias="hookId", min_length=1, max_length=200)


class _Params(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)


class ConnectParams(BaseModel):
    """``connect``: the browser's way to present a key; other clients may call it for info."""

    model_config = ConfigDict(extra="allow", populate_by_name=True)
    api_key: str | None = Field(default=None, alias="apiKey", max_length=500)


class ListParams(_Params):
    event: str | None = Field(default=None, max_length=64)
    scope: Scope | None = None
    handler_type: str | None = Field(default=None, alias="handlerType", max_length=32)
    enabled: bool | None = None
    agent_id: str | None = Field(default=None, alias="agentId", max_length=200)
    name: str | None = Field(default=None, max_length=200)
    #: Master scope only: narrow to one tenant.
    tenant_id: str | None = Field(default=None, alias="tenantId", max_length=200)


class HookIdParams(_Params):
    hook_id: str = _HOOK_ID


class RevisionsParams(_Params):
    hook_id: str = _HOOK_ID
    limit: int = Field(default=50, ge=1, le=500)


class CreateParams(DefinitionFields):
    """``hooks.create``: a hook definition, validated by the definition schema itself."""


class UpdateParams(_Params):
    hook_id: str = _HOOK_ID
    updates: dict[str, Any]
    expected_version: int | None = Field(default=None, alias="expectedVersion", ge=1)


class PromoteParams(_Params):
    """``hooks.promote``: a shadow hook starts to decide (``mode: enforce``)."""

    hook_id: str = _HOOK_ID
    expected_version: int | None = Field(default=None, alias="expectedVersion", ge=1)


class ToggleParams(_Params):
    hook_id: str = _HOOK_ID
    enabled: bool


class TestParams(_Params):
    """Dry run of an unsaved ``config`` or of a saved hook (``hookId``)."""

    config: dict[str, Any] | None = None
    hook_id: str | None = Field(default=None, alias="hookId", max_length=200)
    sample_event: dict[str, Any] = Field(default_factory=dict, alias="sampleEvent")


class ChainParams(_Params):
    """The hooks each event would run for a tenant (and optionally an agent)."""

    agent_id: str | None = Field(default=None, alias="agentId", max_length=200)
    #: Master scope only: another tenant's chains.
    tenant_id: str | None = Field(default=None, alias="tenantId", max_length=200)


class SimulateParams(_Params):
    """Dry run of the whole chain an event would run for the caller's tenant (and agent)."""

    event: str = Field(min_length=1, max_length=64)
    sample_event: dict[str, Any] = Field(default_factory=dict, alias="sampleEvent")
    agent_id: str | None = Field(default=None, alias="agentId", max_length=200)
    #: Master scope only: simulate for another tenant.
    tenant_id: str | None = Field(default=None, alias="tenantId", max_length=200)


class HistoryParams(_Params):
    hook_id: str | None = Field(default=None, alias="hookId", max_length=200)
    session_id: str | None = Field(default=None, alias="sessionId", max_length=500)
    decision: str | None = Field(default=None, max_length=16)
    event: str | None = Field(default=None, max_length=64)
    agent_id: str | None = Field(default=None, alias="agentId", max_length=200)
    tool_name: str | None = Field(default=None, alias="toolName", max_length=256)
    #: The hook's name as executed (a deleted hook's rows too).
    hook_name: str | None = Field(default=None, alias="hookName", max_length=200)
    #: ISO 8601 or epoch seconds; ``since`` inclusive, ``until`` exclusive.
    since: str | float | None = None
    until: str | float | None = None
    cursor: str | None = Field(default=None, max_length=500)
    limit: int = Field(default=50, ge=1, le=500)
    tenant_id: str | None = Field(default=None, alias="tenantId", max_length=200)


class FiguresParams(_Params):
    """Per-hook figures over the last ``window`` (``1h``, ``24h``, ``7d`` or ``30d``)."""

    window: Literal["1h", "24h", "7d", "30d"] = "24h"
    #: Master scope only: narrow to one tenant.
    tenant_id: str | None = Field(default=None, alias="tenantId", max_length=200)


class DispatchListParams(_Params):
    """Dispatch records, newest first. ``decision``: ``allow``, ``block`` or ``ask`` (every
    dispatch that asked a person)."""

    session_id: str | None = Field(default=None, alias="sessionId", max_length=500)
    agent_id: str | None = Field(default=None, alias="agentId", max_length=200)
    tool_name: str | None = Field(default=None, alias="toolName", max_length=256)
    decision: Literal["allow", "block", "ask"] | None = None
    event: str | None = Field(default=None, max_length=64)
    #: ISO 8601 or epoch seconds; ``since`` inclusive, ``until`` exclusive.
    since: str | float | None = None
    until: str | float | None = None
    cursor: str | None = Field(default=None, max_length=500)
    limit: int = Field(default=50, ge=1, le=500)
    #: Master scope only: narrow to one tenant.
    tenant_id: str | None = Field(default=None, alias="tenantId", max_length=200)


class DispatchIdParams(_Params):
    dispatch_id: str = Field(alias="dispatchId", min_length=1, max_length=64)


class DispatchParams(_Params):
    """An agent fires an event: ``input`` holds the same fields as ``hookgate fire --input``."""

    event: str = Field(min_length=1, max_length=64)
    input: dict[str, Any] = Field(default_factory=dict)
    #: Non-blocking events are queued and answered at once unless ``wait`` is true.
    wait: bool = False
    #: W3C trace context of the caller's span (the ``traceparent`` header works too).
    traceparent: str | None = Field(default=None, max_length=200)
    #: Seconds to wait for a person when a hook asks for approval (default: the approval's
    #: own timeout, over REST as over WebSocket). Past it the answer is a block with
    #: ``approval.status: pending``, the id, and the route to wait on
    #: (``GET /api/v1/approvals/{id}/outcome``, ``approvals.wait``).
    approval_wait_s: float | None = Field(default=None, alias="approvalWaitS", ge=0, le=86400)


# --- payloads (documentation of what comes back) ----------------------------------------------


class ApprovalListParams(_Params):
    #: ``pending`` (default), ``approved``, ``denied``, ``expired`` or ``all``.
    status: Literal["pending", "approved", "denied", "expired", "all"] = "pending"
    #: Master scope only: narrow to one tenant.
    tenant_id: str | None = Field(default=None, alias="tenantId", max_length=200)
    limit: int = Field(default=100, ge=1, le=500)


class ApprovalIdParams(_Params):
    approval_id: str = Field(alias="approvalId", min_length=1, max_length=100)


class ApprovalDecideParams(_Params):
    approval_id: str = Field(alias="approvalId", min_length=1, max_length=100)
    comment: str | None = Field(default=None, max_length=2000)
    #: Approve only: the input the tool runs with instead (the whole input, not a patch).
    updated_input: Any = Field(default=None, alias="updatedInput")


class ApprovalWaitParams(_Params):
    approval_id: str = Field(alias="approvalId", min_length=1, max_length=100)
    #: Seconds to wait for the decision (default: until it is decided or expires).
    timeout_s: float | None = Field(default=None, alias="timeoutS", ge=0, le=86400)


class ApprovalWatchParams(_Params):
    #: The ``revision`` of the last answer; the call returns when approvals changed since.
    revision: int | None = None
    timeout_s: float = Field(default=25.0, alias="timeoutS", ge=0, le=60)


class _Open(BaseModel):
    model_config = ConfigDict(extra="allow")


class Breaker(_Open):
    state: Literal["closed", "open", "half_open"]
    recent_faults: int
    last_fault: str | None = None


class Hook(_Open):
    """A stored hook: the definition schema's fields as the store keeps them (defaults
    applied), its identity and bookkeeping."""

    id: str
    tenant_id: str | None
    event: str
    handler_type: str
    scope: Scope
    name: str
    matcher: str | None
    if_expr: str | None
    timeout_ms: int
    on_timeout: Policy
    on_error: Policy
    priority: int
    enabled: bool
    config: dict[str, Any]
    agent_ids: list[str]
    version: int
    source: Literal["builtin", "user"]
    #: What a builtin hook does (builtins only).
    description: str | None = None
    approval: ApprovalModel | None = None
    #: ``shadow``: runs and is recorded as what it would have decided, never deciding.
    mode: Literal["enforce", "shadow"] = "enforce"
    created_at: str | None = None
    updated_at: str | None = None
    #: Who created / last changed the hook: an API key's name and id prefix, "system" for
    #: builtins; null when not recorded.
    created_by: str | None = None
    updated_by: str | None = None
    breaker: Breaker


class HooksPayload(BaseModel):
    hooks: list[Hook]


class HookPayload(BaseModel):
    hook: Hook


class HookIdPayload(BaseModel):
    hookId: str
    #: hooks.update: the secret headers dropped because the URL changed (give them again).
    droppedSecretHeaders: list[str] | None = None


class TogglePayload(BaseModel):
    hookId: str
    enabled: bool


class TestResult(_Open):
    decision: str
    matched: bool
    durationMs: float
    reason: str | None = None
    error: str | None = None
    stdout: str | None = None
    stderr: str | None = None
    statusCode: int | None = None
    model: str | None = None
    updatedInput: Any = None
    additionalContext: list[str] = Field(default_factory=list)


class TestPayload(BaseModel):
    result: TestResult


class ChainPayload(_Open):
    events: list[dict[str, Any]]


class SimulatePayload(_Open):
    decision: str
    reason: str | None = None
    #: False when some hook could not be dry-run with this key (its ``skipped`` says why).
    complete: bool = True
    hooks: list[dict[str, Any]]


class Execution(_Open):
    id: str
    hook_id: str | None
    hook_version: int
    event: str
    decision: str
    duration_ms: float
    session_id: str | None
    error: str | None
    metadata: dict[str, Any]
    created_at: str
    error_detail: str | None = None
    tool_name: str | None = None
    input_summary: str | None = None
    reason: str | None = None
    hook_ref: str | None = None


class Dispatch(_Open):
    id: str
    tenant_id: str
    event: str
    event_id: str
    tool_name: str | None
    agent_id: str | None
    session_id: str | None
    decision: str
    reason: str | None
    duration_ms: float
    #: How many hooks ran; ``hooks`` lists them in chain order.
    matched: int
    hooks: list[dict[str, Any]]
    #: ``{id, status, decided_by, decided_at, expires_at, hook, comment, input_edited}``.
    approval: dict[str, Any] | None
    refused: str | None
    input_size: int | None
    input_summary: str | None
    created_at: str


class DispatchesPayload(BaseModel):
    dispatches: list[Dispatch]
    nextCursor: str | None


class DispatchPayload(BaseModel):
    dispatch: Dispatch


class HookFigures(BaseModel):
    hook_id: str | None
    hook_name: str | None
    fires: int
    blocks: int
    block_rate: float
    #: A shadow hook's executions that would have blocked (``decision: would_block``).
    would_blocks: int = 0
    p95_ms: float
    last_fired: str | None


class HookRevisionView(BaseModel):
    version: int
    action: str
    changed_at: str | None
    changed_by: str | None
    definition: dict[str, Any]


class RevisionsPayload(BaseModel):
    revisions: list[HookRevisionView]


class FiguresPayload(BaseModel):
    window: str
    since: str | None
    until: str | None
    #: Execution rows read; ``sampled`` when the window held more than the gateway reads
    #: (the figures then cover the newest rows).
    rows: int
    sampled: bool
    hooks: list[HookFigures]


class HistoryPayload(BaseModel):
    executions: list[Execution]
    nextCursor: str | None


class TraceEntry(_Open):
    hook_id: str
    name: str
    handler_type: str
    matched: bool
    decision: str | None


class OutcomePayload(BaseModel):
    """Exactly the keys of :meth:`hookgate.outcome.Outcome.to_dict`."""

    model_config = ConfigDict(populate_by_name=True)
    decision: Literal["allow", "block"]
    reason: str | None
    updated_input: Any
    additional_context: list[str]
    result: Any
    abort: Literal["turn", "hard"] | None
    continue_: bool = Field(alias="continue")
    #: Set when a quality gate blocked: ``gate``, ``feedback``, ``attempt``, ``max_retries``,
    #: ``retries_left`` (retry while it is above 0, sending ``attempt`` + 1).
    retry: dict[str, Any] | None = None
    trace: list[TraceEntry]
    #: The dispatch's audit record: ``GET /api/v1/dispatches/{dispatch_id}``.
    dispatch_id: str | None = None
    #: Present when a person was asked: ``{id, status, decided_by, comment, input_edited, …}``.
    approval: dict[str, Any] | None = None


class Approval(_Open):
    id: str
    tenant_id: str
    agent_id: str | None
    session_id: str | None
    event: str
    tool_name: str | None
    tool_input: Any
    hook_id: str | None
    hook_name: str
    reason: str | None
    status: Literal["pending", "approved", "denied", "expired"]
    on_timeout: Policy
    created_at: str
    expires_at: str
    decided_at: str | None
    decided_by: str | None
    comment: str | None
    input_edited: bool
    edited_input: Any
    #: The id of the API key whose dispatch asked (it may not decide this approval).
    requested_key_id: str | None = None


class ApprovalsPayload(BaseModel):
    approvals: list[Approval]
    pendingCount: int
    #: Pending approvals one tenant may have at once (past it, asking blocks).
    pendingLimit: int | None = None
    revision: int


class ApprovalPayload(BaseModel):
    approval: Approval


class ApprovalWatchPayload(BaseModel):
    revision: int
    pendingCount: int
    changed: bool


class EventInfo(BaseModel):
    name: str
    blocking: bool
    match_field: str | None
    input_field: str | None


class ProviderInfo(_Open):
    name: str
    format: Literal["openai", "anthropic"]
    model: str | None


class HostCodeInfo(_Open):
    """Handler types that run code on the gateway host, and whether this key may use them."""

    handlerTypes: list[str]
    allowed: bool
    reason: str | None


class InfoPayload(_Open):
    edition: Edition
    role: Literal["viewer", "approver", "operator", "admin"]
    tenantId: str
    isMasterScope: bool
    keyName: str
    version: str
    handlerTypes: list[str]
    #: Each of those types' config as JSON Schema, from its config model: the panel's forms.
    handlerConfigs: dict[str, Any] = {}
    hostCode: HostCodeInfo
    #: The model providers prompt and agent hooks may name (no URL, no key).
    llmProviders: list[ProviderInfo] = []
    events: list[EventInfo]
    methods: list[str]


# --- API keys, hooks files and save-time warnings (the panel's admin tools) --------------------


class KeyListParams(_Params):
    #: Master scope only: narrow to one tenant.
    tenant_id: str | None = Field(default=None, alias="tenantId", min_length=1, max_length=200)
    include_revoked: bool = Field(default=False, alias="includeRevoked")


class KeyCreateParams(_Params):
    role: Literal["viewer", "approver", "operator", "admin"]
    #: Default: the caller's tenant; another one needs master scope.
    tenant_id: str | None = Field(default=None, alias="tenantId", min_length=1, max_length=200)
    #: Master scope for the new key; needs master scope.
    master: bool = False
    name: str = Field(default="", max_length=200)


class KeyIdParams(_Params):
    key_id: str = Field(alias="keyId", min_length=1, max_length=100)


class ApiKeyInfo(_Open):
    """An API key as reads show it: never its secret or hash."""

    id: str
    tenant_id: str
    role: Literal["viewer", "approver", "operator", "admin"]
    master: bool
    name: str
    #: The first characters of the secret, to tell keys apart.
    prefix: str
    created_at: str | None
    revoked_at: str | None


class KeysPayload(BaseModel):
    keys: list[ApiKeyInfo]


class KeyPayload(BaseModel):
    key: ApiKeyInfo


class KeyCreatedPayload(BaseModel):
    key: ApiKeyInfo
    #: The key itself: shown in this answer only, never readable again.
    secret: str


class FieldMessage(BaseModel):
    """A problem or a warning at a field (a webhook URL the SSRF guard refuses)."""

    field: str
    message: str


class CheckPayload(BaseModel):
    hookId: str
    warnings: list[FieldMessage]


class ExportParams(_Params):
    #: Master scope only: another tenant's hooks.
    tenant_id: str | None = Field(default=None, alias="tenantId", min_length=1, max_length=200)
    format: Literal["yaml", "json"] = "yaml"


class ExportPayload(BaseModel):
    filename: str
    format: Literal["yaml", "json"]
    content: str
    count: int


class ImportParams(_Params):
    #: The file's text: hookgate's hooks file (``{hooks: [...]}``) as YAML or JSON.
    content: str = Field(max_length=1_000_000)
    #: Master scope only: import into another tenant.
    tenant_id: str | None = Field(default=None, alias="tenantId", min_length=1, max_length=200)
    #: Check every hook and report; write nothing.
    dry_run: bool = Field(default=False, alias="dryRun")


class ImportEntry(_Open):
    index: int
    name: str | None
    #: ``create``/``update``/``unchanged`` (what was done, or would be on a dry run), or
    #: ``invalid`` with its problems.
    action: Literal["create", "update", "unchanged", "invalid"]
    hookId: str | None = None
    problems: list[FieldMessage] = Field(default_factory=list)
    warnings: list[FieldMessage] = Field(default_factory=list)


class ImportPayload(BaseModel):
    #: False when any hook was invalid (then nothing was written) or on a dry run.
    applied: bool
    hooks: list[ImportEntry]
    #: A problem with the file as a whole (not YAML/JSON, no hooks list), else null.
    error: str | None = None
