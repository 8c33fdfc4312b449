"""``hooks.replay`` (WebSocket and ``POST /api/v1/hooks/replay``): what a candidate hook, or
a candidate hooks file, would have decided on the tenant's recorded traffic.

Operators and admins. The candidate is the tenant's hooks as they are (its own and the
global ones), with the candidate's hooks in place of those of the same id or name and the
others added; each candidate hook passes the checks ``hooks.test`` makes (the callable
allow-list and the host-code boundary before validation). Records are the caller's tenant's
only (master scope may name ``tenantId``). Hooks that call out always answer from their
recorded replies: an API replay never reaches the network, starts a program or calls a
model (``--live`` is the CLI's, for the operator). A replay is bounded (``limit`` records,
``timeS`` seconds, :data:`MAX_CONCURRENT` at once per gateway) and yields to the event loop
as it goes, so it cannot starve the gateway's dispatches.
"""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Final

import yaml
from pydantic import BaseModel, ConfigDict, Field

from hookgate.definition import DefinitionError, HookDefinition
from hookgate.definition_model import validate_definition
from hookgate.handlers import Services
from hookgate.replay.replayer import Replayer
from hookgate.replay.run import ReplayBounds, replay_rows
from hookgate.replay.sources import store_rows
from hookgate.server.auth import Principal
from hookgate.server.errors import ApiError
from hookgate.server.methods import (
    MASTER_MESSAGE,
    _check_event,
    _tenant_filter,
    _timestamp,
    check_code,
    writable,
)
from hookgate.store import Caller, DispatchQuery, HookFilter

if TYPE_CHECKING:
    from hookgate.server.gateway import Gateway

__all__ = ["MAX_CONCURRENT", "ReplayParams", "ReplayPayload", "hooks_replay"]

#: Replays running at once on one gateway; more are refused (retryable) rather than queued.
MAX_CONCURRENT: Final = 2
#: The most hooks a candidate file may hold.
MAX_CANDIDATE_HOOKS: Final = 500
_running: weakref.WeakKeyDictionary[Any, int] = weakref.WeakKeyDictionary()


class ReplayParams(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)
    #: One candidate hook definition (with ``id`` or ``name`` of a hook it replaces).
    hook: dict[str, Any] | None = None
    #: A candidate hooks file's text (``{hooks: [...]}``, YAML or JSON).
    content: str | None = Field(default=None, max_length=1_000_000)
    #: ISO 8601 or epoch seconds; ``since`` inclusive, ``until`` exclusive.
    since: str | float | None = None
    until: str | float | None = None
    event: str | None = Field(default=None, max_length=64)
    #: Records replayed at most (oldest first within the window).
    limit: int = Field(default=1000, ge=1, le=10_000)
    #: Seconds a replay may run at most.
    time_s: float = Field(default=5.0, alias="timeS", gt=0, le=30)
    #: Changes listed at most (the counts are always whole).
    max_changes: int = Field(default=100, alias="maxChanges", ge=1, le=1000)
    #: Master scope only: another tenant's records and hooks.
    tenant_id: str | None = Field(default=None, alias="tenantId", max_length=200)


class ReplayPayload(BaseModel):
    model_config = ConfigDict(extra="allow")
    replayed: int
    changed: int
    unknown: int
    unreadable: int
    changes: list[dict[str, Any]]
    complete: bool
    #: ``{hooks, replaced, added}``: the candidate policy replayed.
    candidate: dict[str, Any]


def _candidate_raws(p: ReplayParams) -> list[dict[str, Any]]:
    if (p.hook is None) == (p.content is None):
        raise ApiError(
            "INVALID_REQUEST",
            "hooks.replay needs hook (a definition) or content (a hooks file), one of the two",
        )
    if p.hook is not None:
        return [dict(p.hook)]
    try:
        document = yaml.safe_load(p.content or "")
    except yaml.YAMLError as exc:
        raise ApiError("INVALID_REQUEST", f"content: not YAML or JSON: {exc}") from None
    hooks = document.get("hooks") if isinstance(document, Mapping) else None
    if not isinstance(hooks, list) or not all(isinstance(h, Mapping) for h in hooks):
        raise ApiError("INVALID_REQUEST", "content: a hooks file is {hooks: [definitions]}")
    if len(hooks) > MAX_CANDIDATE_HOOKS:
        raise ApiError("INVALID_REQUEST", f"content: at most {MAX_CANDIDATE_HOOKS} hooks")
    return [dict(h) for h in hooks]


def _candidate(
    gateway: Gateway,
    who: Principal,
    tenant: str,
    raws: Sequence[dict[str, Any]],
    current: Sequence[HookDefinition],
) -> tuple[list[HookDefinition], dict[str, Any]]:
    """The tenant's hooks with the candidate's in place; each candidate checked as
    ``hooks.test`` checks a definition."""
    policy = {d.id: d for d in current}
    by_name = {(d.scope == "global", d.name): d.id for d in current if d.name}
    replaced: list[str] = []
    added: list[str] = []
    for index, entry in enumerate(raws):
        raw = writable(entry)
        where = f"hooks[{index}]" if len(raws) > 1 else "hook"
        named = raw.get("tenant_id")
        if named not in (None, "", tenant):
            raise ApiError("INVALID_REQUEST", f"{where}.tenant_id: this replay is of {tenant!r}")
        is_global = raw.get("scope") == "global"
        if is_global and not who.master:
            raise ApiError("UNAUTHORIZED", f"{where}: {MASTER_MESSAGE}")
        raw["tenant_id"] = None if is_global else tenant
        wanted = entry.get("id")  # writable() drops it: the hook this one stands in for
        target = wanted if isinstance(wanted, str) and wanted in policy else None
        target = target or by_name.get((is_global, str(raw.get("name") or "")))
        if target is not None:
            raw["id"] = target
            raw.setdefault("order", policy[target].order)
        else:
            raw.pop("id", None)
        try:
            check_code(gateway, who, raw, "replaying")
            definition = validate_definition(raw, edition=gateway.edition, default_scope="tenant")
        except ApiError as exc:
            raise ApiError(exc.code, f"{where}: {exc.message}", details=exc.details) from None
        except DefinitionError as exc:
            raise ApiError("INVALID_REQUEST", f"{where}: {exc}") from None
        # Passed the boundary above: this replay runs it as the caller's (as hooks.test).
        definition = replace(definition, written_by_master=who.master)
        (replaced if target is not None else added).append(definition.name or definition.id)
        policy[definition.id] = definition
    summary = {"hooks": len(policy), "replaced": replaced, "added": added}
    return list(policy.values()), summary


async def hooks_replay(gateway: Gateway, who: Principal, p: ReplayParams) -> dict[str, Any]:
    tenant = _tenant_filter(who, p.tenant_id) or who.tenant_id
    keyring = gateway.keyring
    if keyring is None:
        raise ApiError(
            "INVALID_REQUEST",
            "this gateway has no key, so it keeps no inputs to replay (set HOOKGATE_SECRET_KEY)",
        )
    raws = _candidate_raws(p)
    scope = Caller.for_tenant(tenant)
    stored = [r.definition for r in await gateway.store.list_hooks(scope, HookFilter())]
    current = [d for d in stored if d.scope == "global" or d.tenant_id == tenant]
    definitions, summary = _candidate(gateway, who, tenant, raws, current)
    query = DispatchQuery(
        tenant_id=tenant,
        event=_check_event(p.event),
        since=_timestamp(p.since, "since"),
        until=_timestamp(p.until, "until"),
    )
    running = _running.get(gateway, 0)
    if running >= MAX_CONCURRENT:
        raise ApiError(
            "UNAVAILABLE",
            f"{running} replays are running on this gateway; try again when one is done",
            retryable=True,
        )
    _running[gateway] = running + 1
    engine = gateway.engine
    replayer = Replayer(
        definitions, settings=engine.settings, services=Services(settings=engine.settings)
    )
    replayer.engine.host_code_policy = engine.host_code_policy
    bounds = ReplayBounds(
        max_records=p.limit, max_seconds=p.time_s, max_changes=p.max_changes, progress_every=250
    )
    try:
        report = await replay_rows(
            store_rows(gateway.store, scope, query), replayer, keyring, bounds
        )
    finally:
        _running[gateway] = _running.get(gateway, 1) - 1
        await replayer.aclose()
    await asyncio.sleep(0)
    return {**report.to_dict(), "candidate": summary}
