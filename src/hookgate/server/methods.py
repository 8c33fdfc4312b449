"""The ``hooks.*`` methods: one implementation each, shared by the WebSocket and REST.

A :class:`Method` names its minimum role, its params model and its REST route; the method
body receives the gateway, the authenticated principal and the validated params, and
returns the payload dict. Errors are raised as :class:`ApiError` (store and validation
errors are translated here, in one place). The table of every method is
:mod:`hookgate.server.method_table`.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Final

from pydantic import BaseModel, ValidationError

from hookgate.builtins import builtin_description
from hookgate.definition import DefinitionError, HookDefinition
from hookgate.definition_model import REQUIRED_MESSAGE, validate_definition
from hookgate.events import CATALOGUE, UnknownEventError, get_event, normalize_payload
from hookgate.payload_limits import payload_problem
from hookgate.secrets.keyring import is_sealed_text
from hookgate.server import schemas
from hookgate.server.approvals import approval_requester, approval_wait_limit
from hookgate.server.auth import Principal, require_role
from hookgate.server.errors import ApiError
from hookgate.server.hook_secrets import prepare_api_key, prepare_secret_headers
from hookgate.server.timestamps import iso
from hookgate.server.tracing import parse_traceparent
from hookgate.server.url_warnings import url_warnings
from hookgate.store import (
    ExecutionQuery,
    ExecutionRow,
    Forbidden,
    HookFilter,
    HookRecord,
    NotFound,
    ReadOnlyHook,
    StoreError,
    VersionConflict,
)

if TYPE_CHECKING:
    from hookgate.server.gateway import Gateway

__all__ = ["Method", "call_method", "definition_error", "parse_params", "store_error"]

MASTER_MESSAGE: Final = "this action requires master tenant scope"
#: Fields a client may not set: the server owns a hook's identity and bookkeeping.
_SERVER_FIELDS: Final = frozenset(
    {
        "id",
        "version",
        "source",
        "order",
        "created_by",
        "updated_by",
        "created_at",
        "updated_at",
        "breaker",
    }
)

Body = Callable[["Gateway", Principal, Any], Awaitable[dict[str, Any]]]


@dataclass(frozen=True, slots=True)
class Method:
    name: str
    role: str
    params: type[BaseModel]
    payload: type[BaseModel]
    body: Body
    summary: str
    #: REST mirror: HTTP method and path under ``/api/v1``; path parameters come from params.
    http: tuple[str, str]
    #: Pass params through as a dict: the body validates them (hook definitions, whose
    #: validator reports the seed's messages).
    raw: bool = False


def parse_params(model: type[BaseModel], params: Any) -> Any:
    """Validate ``params``; every problem is reported with its field."""
    if params is None:
        params = {}
    if not isinstance(params, Mapping):
        raise ApiError("INVALID_REQUEST", "params must be a JSON object")
    try:
        return model.model_validate(params)
    except ValidationError as exc:
        problems = [
            {
                "field": ".".join(str(part) for part in err["loc"]) or "params",
                "message": err["msg"],
            }
            for err in exc.errors(include_url=False, include_context=False, include_input=False)
        ]
        message = "; ".join(f"{p['field']}: {p['message']}" for p in problems)
        raise ApiError("INVALID_REQUEST", message, details={"problems": problems}) from None


def definition_error(exc: DefinitionError) -> ApiError:
    problems = [{"field": p.field, "message": p.message} for p in exc.problems]
    if any(p.message == REQUIRED_MESSAGE for p in exc.problems):
        message = REQUIRED_MESSAGE
    else:
        message = "; ".join(str(p) for p in exc.problems)
    return ApiError("INVALID_REQUEST", message, details={"problems": problems})


def store_error(exc: StoreError) -> ApiError:
    if isinstance(exc, NotFound):
        return ApiError("NOT_FOUND", str(exc) or "no such hook")
    if isinstance(exc, ReadOnlyHook):
        return ApiError("READ_ONLY", str(exc) or "builtin hooks are read-only except 'enabled'")
    if isinstance(exc, Forbidden):
        return ApiError("UNAUTHORIZED", str(exc) or MASTER_MESSAGE)
    if isinstance(exc, VersionConflict):
        return ApiError("CONFLICT", str(exc))
    return ApiError("INVALID_REQUEST", str(exc))


async def call_method(gateway: Gateway, method: Method, who: Principal, params: Any) -> Any:
    """Check the role, validate params and run the method."""
    require_role(who, method.role, method.name)
    if method.raw:
        if not isinstance(params, Mapping):
            raise ApiError("INVALID_REQUEST", "params must be a JSON object")
        parsed: Any = params
    else:
        parsed = parse_params(method.params, params)
    try:
        return await method.body(gateway, who, parsed)
    except DefinitionError as exc:
        raise definition_error(exc) from None
    except StoreError as exc:
        raise store_error(exc) from None


# --- views ------------------------------------------------------------------------------------


def hide_secrets(value: Any) -> Any:
    # Sealed values (encrypted header values and the like) are never returned by a read.
    if isinstance(value, Mapping):
        return {k: hide_secrets(v) for k, v in value.items()}
    if isinstance(value, list):
        return [hide_secrets(v) for v in value]
    return None if is_sealed_text(value) else value


def hook_view(gateway: Gateway, record: HookRecord) -> dict[str, Any]:
    data = record.to_dict()
    data["config"] = hide_secrets(data.get("config") or {})
    secret = sorted(
        key
        for key, value in (record.definition.config.get("headers") or {}).items()
        if is_sealed_text(value)
    ) if isinstance(record.definition.config.get("headers"), Mapping) else []
    if secret:
        data["config"]["secret_headers"] = sorted(
            set(secret) | set(data["config"].get("secret_headers") or [])
        )
    data["created_at"] = iso(record.created_at)
    data["updated_at"] = iso(record.updated_at)
    live = gateway.engine.breakers.status(record.id)
    breaker = live.to_dict() if live.state != "closed" or live.faults else data["breaker"]
    data["breaker"] = {
        "state": breaker.get("state", "closed"),
        "recent_faults": breaker.get("recent_faults", 0),
        "last_fault": breaker.get("last_fault"),
    }
    data.pop("order", None)
    if record.definition.source == "builtin":
        data["description"] = builtin_description(record.definition.name, record.definition.event)
    return data


def execution_view(gateway: Gateway, who: Principal, row: ExecutionRow) -> dict[str, Any]:
    data = row.to_dict()
    data["created_at"] = iso(row.created_at)
    data["error_detail"] = gateway.open_error_detail(row) if who.has_role("admin") else None
    return data


def _timestamp(value: str | float | None, field: str) -> float | None:
    if value is None:
        return None
    if isinstance(value, int | float):
        return float(value)
    try:
        return float(value)
    except ValueError:
        pass
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise ApiError(
            "INVALID_REQUEST", f"{field}: not an ISO 8601 time or epoch seconds: {value!r}"
        ) from None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    return parsed.timestamp()


def _tenant_filter(who: Principal, tenant_id: str | None) -> str | None:
    if tenant_id is None or tenant_id == who.tenant_id:
        return tenant_id
    if not who.master:
        raise ApiError("UNAUTHORIZED", MASTER_MESSAGE)
    return tenant_id


def _check_event(name: str | None) -> str | None:
    if name is None:
        return None
    try:
        return get_event(name).name
    except UnknownEventError as exc:
        raise ApiError("INVALID_REQUEST", f"event: {exc}") from None


# --- the methods --------------------------------------------------------------------------------


async def hooks_list(gateway: Gateway, who: Principal, p: schemas.ListParams) -> dict[str, Any]:
    filters = HookFilter(
        event=_check_event(p.event),
        handler_type=p.handler_type,
        scope=p.scope,
        enabled=p.enabled,
        name=p.name,
        agent_id=p.agent_id,
        tenant_id=_tenant_filter(who, p.tenant_id),
    )
    records = await gateway.store.list_hooks(who.caller, filters)
    return {"hooks": [hook_view(gateway, record) for record in records]}


async def hooks_get(gateway: Gateway, who: Principal, p: schemas.HookIdParams) -> dict[str, Any]:
    record = await gateway.store.get_hook(who.caller, p.hook_id)
    return {"hook": hook_view(gateway, record)}


def check_code(gateway: Gateway, who: Principal, raw: Mapping[str, Any], action: str) -> None:
    """The gateway's rules for a raw definition, before validation (which may import code):
    the callable allowlist, then the host-code boundary. Builtins are hookgate's own code
    (``source`` is a server field: a client's raw definition never carries it)."""
    if raw.get("source") == "builtin":
        return
    config = raw.get("config")
    gateway.check_allowed(raw.get("handler_type"), config)
    gateway.check_host_code(who, raw.get("handler_type"), config, action)


def writable(raw: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in raw.items() if k not in _SERVER_FIELDS}


async def hooks_create(gateway: Gateway, who: Principal, p: Any) -> dict[str, Any]:
    raw = writable(p)
    tenant_id = raw.get("tenant_id")
    if tenant_id not in (None, "", who.tenant_id) and not who.master:
        raise ApiError("UNAUTHORIZED", MASTER_MESSAGE)
    # A global hook belongs to no tenant (the store files it under the sentinel tenant).
    raw["tenant_id"] = None if raw.get("scope") == "global" else (tenant_id or who.tenant_id)
    check_code(gateway, who, raw, "defining")
    definition = validate_definition(raw, edition=gateway.edition, default_scope=None)
    if definition.scope == "global" and not who.master:
        raise ApiError("UNAUTHORIZED", MASTER_MESSAGE)
    gateway.check_credentials(definition)
    sealed = prepare_secret_headers(definition.config, definition.id, gateway.keyring).config
    sealed = prepare_api_key(sealed, definition.id, gateway.keyring)
    definition = replace(definition, config=sealed)
    record = await gateway.store.create_hook(who.caller, definition, actor=who.actor)
    await gateway.hooks_changed()
    return {"hookId": record.id}


async def hooks_update(gateway: Gateway, who: Principal, p: schemas.UpdateParams) -> dict[str, Any]:
    updates = writable(p.updates)
    updates.pop("tenant_id", None)
    dropped: tuple[str, ...] = ()
    current = await gateway.store.get_hook(who.caller, p.hook_id)
    # Changing a hook that runs host code, or turning one into such a hook, is defining it.
    check_code(gateway, who, current.definition.to_dict(), "changing")
    check_code(gateway, who, {**current.definition.to_dict(), **updates}, "defining")
    if "config" in updates:
        # Secret headers sent back as null keep their stored value; new ones are sealed.
        stored = current.definition.config
        headers = prepare_secret_headers(updates["config"], current.id, gateway.keyring, stored)
        dropped = headers.dropped
        updates["config"] = prepare_api_key(headers.config, current.id, gateway.keyring, stored)
    merged = {**current.definition.to_dict(), **updates}
    if "global" in (merged.get("scope"), current.definition.scope) and not who.master:
        raise ApiError("UNAUTHORIZED", MASTER_MESSAGE)
    if current.definition.source != "builtin":
        # Check the merged definition here too, so edition and callable rules apply.
        candidate = validate_definition(
            writable(merged), edition=gateway.edition, default_scope=None
        )
        gateway.check_credentials(candidate)
    record = await gateway.store.update_hook(
        who.caller,
        p.hook_id,
        updates,
        expected_version=p.expected_version,
        edition=gateway.edition,
        actor=who.actor,
    )
    gateway.forget_hook(current.definition)
    await gateway.hooks_changed()
    answer: dict[str, Any] = {"hookId": record.id, "version": record.version}
    if dropped:
        # The URL changed: these secret headers were not sent along (give them again).
        answer["droppedSecretHeaders"] = list(dropped)
    return answer


async def hooks_delete(gateway: Gateway, who: Principal, p: schemas.HookIdParams) -> dict[str, Any]:
    current = await gateway.store.get_hook(who.caller, p.hook_id)
    if current.definition.scope == "global" and not who.master:
        raise ApiError("UNAUTHORIZED", MASTER_MESSAGE)
    await gateway.store.delete_hook(who.caller, p.hook_id, actor=who.actor)
    gateway.forget_hook(current.definition)
    await gateway.hooks_changed()
    return {"hookId": p.hook_id}


async def hooks_check(gateway: Gateway, who: Principal, p: schemas.HookIdParams) -> dict[str, Any]:
    """What a saved hook will run into although it is valid: a webhook URL the SSRF guard
    refuses (loopback, private, not resolving), with the allow-list that would admit it."""
    definition = (await gateway.store.get_hook(who.caller, p.hook_id)).definition
    warnings = await url_warnings(definition.handler_type, definition.config, gateway.settings)
    return {"hookId": definition.id, "warnings": warnings}


async def hooks_promote(
    gateway: Gateway, who: Principal, p: schemas.PromoteParams
) -> dict[str, Any]:
    """A shadow hook decides from now on (``mode: enforce``), and nothing else changes.
    Open to operators: the code the hook runs is the code it already ran in shadow, so the
    host-code rules of a change do not apply and who wrote it is kept; the tenant and
    global-scope rules of an update do."""
    current = await gateway.store.get_hook(who.caller, p.hook_id)
    if current.definition.scope == "global" and not who.master:
        raise ApiError("UNAUTHORIZED", MASTER_MESSAGE)
    if current.definition.mode != "shadow":
        raise ApiError("INVALID_REQUEST", f"hook {p.hook_id} is not in shadow mode")
    record = await gateway.store.update_hook(
        who.caller,
        p.hook_id,
        {"mode": "enforce"},
        expected_version=p.expected_version,
        edition=gateway.edition,
        actor=who.actor,
        keep_writer=True,
    )
    gateway.forget_hook(current.definition)
    await gateway.hooks_changed()
    return {"hookId": record.id, "version": record.version}


async def hooks_toggle(gateway: Gateway, who: Principal, p: schemas.ToggleParams) -> dict[str, Any]:
    current = await gateway.store.get_hook(who.caller, p.hook_id)
    if current.definition.scope == "global" and not who.master:
        raise ApiError("UNAUTHORIZED", MASTER_MESSAGE)
    record = await gateway.store.set_enabled(who.caller, p.hook_id, p.enabled, actor=who.actor)
    if p.enabled:
        gateway.engine.breakers.reset(p.hook_id)  # re-enabling a hook closes its breaker
        await gateway.breakers_settled()  # on every replica (they read the shared state)
    await gateway.hooks_changed()
    return {"hookId": record.id, "enabled": record.definition.enabled}


async def hooks_test(gateway: Gateway, who: Principal, p: schemas.TestParams) -> dict[str, Any]:
    definition: HookDefinition
    if p.hook_id is not None:
        if p.config is not None:
            raise ApiError("INVALID_REQUEST", "give either config or hookId, not both")
        definition = (await gateway.store.get_hook(who.caller, p.hook_id)).definition
        check_code(gateway, who, definition.to_dict(), "testing")
    elif p.config is not None:
        raw = writable(p.config)
        raw["tenant_id"] = who.tenant_id
        check_code(gateway, who, raw, "testing")
        definition = validate_definition(raw, edition=gateway.edition, default_scope="tenant")
        gateway.check_credentials(definition)
    else:
        raise ApiError("INVALID_REQUEST", "hooks.test needs config (a hook definition) or hookId")
    # Passed the boundary above: this dry run is the caller's (a master key's) to run.
    definition = replace(definition, written_by_master=who.master)
    sample = normalize_payload(p.sample_event)
    problem = payload_problem(sample)
    if problem is not None:
        raise ApiError("INVALID_INPUT", f"sampleEvent: {problem}")
    if not who.master or "tenant_id" not in sample:
        sample["tenant_id"] = who.tenant_id
    outcome = await gateway.engine.test(definition, sample)
    return {"result": test_result(outcome)}


def _chain_entry(definition: HookDefinition) -> dict[str, Any]:
    return {
        "hookId": definition.id,
        "name": definition.name,
        "scope": definition.scope,
        "handlerType": definition.handler_type,
        "enabled": definition.enabled,
        "matcher": definition.matcher,
        "ifExpr": definition.if_expr,
        "priority": definition.priority,
        "mode": definition.mode,
    }


async def hooks_chain(gateway: Gateway, who: Principal, p: schemas.ChainParams) -> dict[str, Any]:
    tenant = _tenant_filter(who, p.tenant_id) or who.tenant_id
    events = []
    for spec in CATALOGUE:
        hooks = gateway.engine.source.resolve(spec.name, tenant, p.agent_id)
        events.append({
            "event": spec.name,
            "blocking": spec.blocking,
            "hooks": [_chain_entry(hook.definition) for hook in hooks],
        })
    return {"tenantId": tenant, "agentId": p.agent_id, "events": events}


async def hooks_simulate(
    gateway: Gateway, who: Principal, p: schemas.SimulateParams
) -> dict[str, Any]:
    spec = get_event(_check_event(p.event) or p.event)
    sample = normalize_payload(p.sample_event)
    problem = payload_problem(sample)
    if problem is not None:
        raise ApiError("INVALID_INPUT", f"sampleEvent: {problem}")
    # The caller's tenant, whatever the sample says; master scope may name another one.
    sample["tenant_id"] = _tenant_filter(who, p.tenant_id) or who.tenant_id
    if p.agent_id is not None:
        sample["agent_id"] = p.agent_id
    resolved = gateway.engine.source.resolve(spec.name, sample["tenant_id"], sample.get("agent_id"))
    runnable, refused = [], {}
    for hook in resolved:
        try:  # the host-code boundary holds for dry runs too: such a hook is listed, not run
            check_code(gateway, who, hook.definition.to_dict(), "testing")
        except ApiError as exc:
            refused[hook.definition.id] = exc.message
            continue
        runnable.append(hook)
    outcome = await gateway.engine.simulate(spec.name, sample, runnable)
    answers = {entry.hook_id: entry for entry in outcome.trace}
    hooks = []
    for hook in resolved:
        definition = hook.definition
        entry = answers.get(definition.id)
        details = dict(entry.details) if entry is not None else {}
        hooks.append({
            "hookId": definition.id,
            "name": definition.name,
            "scope": definition.scope,
            "handlerType": definition.handler_type,
            "enabled": definition.enabled,
            "matcher": definition.matcher,
            "ifExpr": definition.if_expr,
            "mode": definition.mode,
            "matched": bool(entry and entry.matched),
            "skipped": refused.get(definition.id) or (entry.skipped if entry else "not reached"),
            "decision": entry.decision if entry is not None else None,
            "reason": details.get("reason"),
            "error": entry.error if entry is not None else None,
            "durationMs": round(entry.duration_ms, 3) if entry is not None else 0.0,
        })
    # When a hook could not be run for this key, the folded outcome is only a partial one.
    return {
        "decision": outcome.decision,
        "reason": outcome.reason,
        "complete": not refused,
        "hooks": hooks,
    }


def test_result(outcome: Any) -> dict[str, Any]:
    """The seed's test-panel fields, from the dry run's outcome and its one trace entry."""
    trace = outcome.trace
    entry = trace[0] if trace else None
    details: dict[str, Any] = dict(entry.details) if entry is not None else {}
    status = details.get("status_code", details.get("http_status"))
    result: dict[str, Any] = {
        "decision": outcome.decision,
        "hookDecision": entry.decision if entry is not None else None,
        "matched": bool(entry and entry.matched),
        "skipped": entry.skipped if entry is not None else None,
        "durationMs": round(entry.duration_ms, 3) if entry is not None else 0.0,
        "reason": outcome.reason or details.get("reason"),
        "error": entry.error if entry is not None else None,
        "stdout": details.get("stdout"),
        "stderr": details.get("stderr"),
        "statusCode": status if isinstance(status, int) else None,
        "model": details.get("prompt_model", details.get("model")),
        "updatedInput": outcome.updated_input,
        "additionalContext": list(outcome.additional_context),
        "result": outcome.result,
        "details": details,
    }
    return result


def history_query(who: Principal, p: schemas.HistoryParams) -> ExecutionQuery:
    """The store query for history filters, checked against the caller's scope."""
    return ExecutionQuery(
        hook_id=p.hook_id,
        session_id=p.session_id,
        decision=p.decision,
        event=_check_event(p.event),
        agent_id=p.agent_id,
        tool_name=p.tool_name,
        hook_name=p.hook_name,
        since=_timestamp(p.since, "since"),
        until=_timestamp(p.until, "until"),
        tenant_id=_tenant_filter(who, p.tenant_id),
        limit=p.limit,
        cursor=p.cursor,
    )


async def hooks_history(
    gateway: Gateway, who: Principal, p: schemas.HistoryParams
) -> dict[str, Any]:
    query = history_query(who, p)
    try:
        page = await gateway.store.query_executions(who.caller, query)
    except NotFound as exc:
        raise ApiError("NOT_FOUND", str(exc)) from None
    except StoreError as exc:  # a cursor that does not decode, and the like
        raise ApiError("INVALID_REQUEST", str(exc)) from None
    return {
        "executions": [execution_view(gateway, who, row) for row in page.items],
        "nextCursor": page.next_cursor,
    }


async def hooks_dispatch(
    gateway: Gateway, who: Principal, p: schemas.DispatchParams
) -> dict[str, Any]:
    started = time.perf_counter()
    try:
        spec = get_event(p.event)
    except UnknownEventError as exc:
        raise ApiError("INVALID_REQUEST", f"event: {exc}") from None
    data = normalize_payload(p.input)
    # An agent acts for its key's tenant; only master scope may name another one.
    if not who.master or not data.get("tenant_id"):
        data["tenant_id"] = who.tenant_id
    parent = parse_traceparent(p.traceparent)
    if parent is not None:
        data["trace_id"] = parent[1]
    if not data.get("event_id"):
        data["event_id"] = gateway.new_event_id()
    problem = payload_problem(data)
    if problem is not None:
        # Refused before any hook runs, and still audited: a probe leaves a trace.
        refused = gateway.engine.refuse_input(spec.name, data, problem)
        await gateway.audit.wait_durable()
        gateway.metrics.observe_dispatch(spec.name, "block", time.perf_counter() - started)
        raise ApiError(
            "INVALID_INPUT", f"input: {problem}", details={"dispatchId": refused.dispatch_id}
        )
    tracer = gateway.tracer
    if parent is not None and tracer is not None:
        tracer.expect(str(data["event_id"]), parent[0])
    # A name that is a synchronous stage (delegation.completed, after_tool) is waited for,
    # as in `hookgate fire`.
    wait = spec.waits(p.event, p.wait)
    limit = approval_wait_limit.set(p.approval_wait_s)
    requester = approval_requester.set(who.key_id)
    try:
        outcome = await gateway.engine.fire(p.event, data, wait=wait)
    finally:
        approval_requester.reset(requester)
        approval_wait_limit.reset(limit)
    # Answered once its breaker faults are shared: the next dispatch, on any replica, counts them.
    await gateway.breakers_settled()
    if tracer is not None and parent is not None and wait:
        tracer.forget(str(data["event_id"]))
    gateway.metrics.observe_dispatch(spec.name, outcome.decision, time.perf_counter() - started)
    return outcome.to_dict()
