"""The table of every gateway method (WebSocket and REST): its name, minimum role, params
and payload models, body and REST route. The transports and the OpenAPI document read it;
the method bodies live in their own modules and never import it."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

from pydantic import BaseModel

from hookgate.events import CATALOGUE
from hookgate.server import schemas
from hookgate.server.approval_methods import (
    approvals_approve,
    approvals_deny,
    approvals_get,
    approvals_list,
    approvals_wait,
    approvals_watch,
)
from hookgate.server.audit_methods import AuditVerifyParams, AuditVerifyPayload, audit_verify
from hookgate.server.auth import Principal
from hookgate.server.dispatch_methods import dispatches_get, dispatches_list
from hookgate.server.hook_figures import hooks_figures
from hookgate.server.hook_files import hooks_export, hooks_import
from hookgate.server.hook_revisions import hooks_revisions
from hookgate.server.key_methods import keys_create, keys_list, keys_revoke
from hookgate.server.methods import (
    Method,
    hooks_chain,
    hooks_check,
    hooks_create,
    hooks_delete,
    hooks_dispatch,
    hooks_get,
    hooks_history,
    hooks_list,
    hooks_promote,
    hooks_simulate,
    hooks_test,
    hooks_toggle,
    hooks_update,
)
from hookgate.server.replay_methods import ReplayParams, ReplayPayload, hooks_replay

if TYPE_CHECKING:
    from hookgate.server.gateway import Gateway

__all__ = ["EVENTS_INFO", "METHODS", "METHOD_LIST", "connect_payload"]


def connect_payload(gateway: Gateway, who: Principal) -> dict[str, Any]:
    """What ``connect`` answers: the gateway's facts for this caller, the event catalogue
    and the methods this table serves."""
    return {**gateway.info(who), "events": EVENTS_INFO, "methods": sorted(METHODS)}


async def connect(gateway: Gateway, who: Principal, params: Any) -> dict[str, Any]:
    return connect_payload(gateway, who)


def _method(
    name: str,
    role: str,
    params: type[BaseModel],
    payload: type[BaseModel],
    body: Any,
    summary: str,
    http: tuple[str, str],
    *,
    raw: bool = False,
) -> Method:
    return Method(name, role, params, payload, body, summary, http, raw)


METHOD_LIST: Final = (
    _method(
        "connect", "viewer", schemas.ConnectParams, schemas.InfoPayload, connect,
        "Who the key is and what this gateway offers (edition, events, handler types).",
        ("GET", "/info"),
    ),
    _method(
        "hooks.list", "viewer", schemas.ListParams, schemas.HooksPayload, hooks_list,
        "Hooks visible to the caller (own tenant and global; master scope: all), filtered.",
        ("GET", "/hooks"),
    ),
    _method(
        "hooks.get", "viewer", schemas.HookIdParams, schemas.HookPayload, hooks_get,
        "One hook, with its breaker state.",
        ("GET", "/hooks/{hookId}"),
    ),
    _method(
        "hooks.create", "admin", schemas.CreateParams, schemas.HookIdPayload, hooks_create,
        "Create a hook from a definition; global scope needs master scope.",
        ("POST", "/hooks"),
        raw=True,
    ),
    _method(
        "hooks.update", "admin", schemas.UpdateParams, schemas.HookIdPayload, hooks_update,
        "Patch a hook: the merged definition is validated again and the version bumped.",
        ("PATCH", "/hooks/{hookId}"),
    ),
    _method(
        "hooks.delete", "admin", schemas.HookIdParams, schemas.HookIdPayload, hooks_delete,
        "Delete a hook; its executions stay in the history.",
        ("DELETE", "/hooks/{hookId}"),
    ),
    _method(
        "hooks.promote", "operator", schemas.PromoteParams, schemas.HookIdPayload,
        hooks_promote,
        "A shadow hook starts to decide (mode: enforce); operators and admins.",
        ("POST", "/hooks/{hookId}/promote"),
    ),
    _method(
        "hooks.toggle", "admin", schemas.ToggleParams, schemas.TogglePayload, hooks_toggle,
        "Enable or disable a hook; enabling resets its circuit breaker.",
        ("POST", "/hooks/{hookId}/toggle"),
    ),
    _method(
        "hooks.test", "operator", schemas.TestParams, schemas.TestPayload, hooks_test,
        "Dry-run a definition or a saved hook on a sample event: no breaker, no audit row.",
        ("POST", "/hooks/test"),
    ),
    _method(
        "hooks.chain", "viewer", schemas.ChainParams, schemas.ChainPayload, hooks_chain,
        "For the caller's tenant (master scope: tenantId) and optionally an agent: each "
        "event with the hooks it would run, in chain order, globals included.",
        ("GET", "/chains"),
    ),
    _method(
        "hooks.simulate", "operator", schemas.SimulateParams, schemas.SimulatePayload,
        hooks_simulate,
        "Dry-run the whole chain an event would run for the caller's tenant (and agent): "
        "each hook's answer in order and the folded outcome; no breaker, no audit row.",
        ("POST", "/simulate"),
    ),
    _method(
        "hooks.replay", "operator", ReplayParams, ReplayPayload, hooks_replay,
        "Replay the tenant's recorded dispatches (oldest first, bounded by limit and timeS) "
        "through its hooks with a candidate hook or hooks file in place: what would change. "
        "Hooks that call out answer from their recorded replies; nothing is called.",
        ("POST", "/hooks/replay"),
    ),
    _method(
        "hooks.history", "viewer", schemas.HistoryParams, schemas.HistoryPayload, hooks_history,
        "Executions, newest first, with cursor pagination.",
        ("GET", "/executions"),
    ),
    _method(
        "hooks.revisions", "viewer", schemas.RevisionsParams, schemas.RevisionsPayload,
        hooks_revisions,
        "A hook's definition history, newest first: each change with the definition after "
        "it, who made it and when (the caller's tenant; global hooks need master scope).",
        ("GET", "/hooks/{hookId}/revisions"),
    ),
    _method(
        "hooks.figures", "viewer", schemas.FiguresParams, schemas.FiguresPayload, hooks_figures,
        "Per-hook figures of the caller's tenant over a window (1h, 24h, 7d, 30d): fires, "
        "blocks and block rate, p95 duration, last fired; from the audit's execution rows.",
        ("GET", "/hooks/figures"),
    ),
    _method(
        "hooks.dispatch", "operator", schemas.DispatchParams, schemas.OutcomePayload,
        hooks_dispatch,
        "Fire an event for the caller's tenant and return the outcome; when a hook asks for "
        "approval, wait for a person (at most approvalWaitS; by default the approval's whole "
        "lifetime), then answer pending with the route to wait on.",
        ("POST", "/dispatch"),
    ),
    _method(
        "dispatches.list", "viewer", schemas.DispatchListParams, schemas.DispatchesPayload,
        dispatches_list,
        "Dispatch records, newest first, with cursor pagination: one per dispatch (also when "
        "no hook matched), with the hooks that ran and the approval.",
        ("GET", "/dispatches"),
    ),
    _method(
        "dispatches.get", "viewer", schemas.DispatchIdParams, schemas.DispatchPayload,
        dispatches_get,
        "One dispatch as a trace: each hook that ran in order with its answer, the final "
        "decision, the approval (who decided, when).",
        ("GET", "/dispatches/{dispatchId}"),
    ),
    _method(
        "audit.verify", "admin", AuditVerifyParams, AuditVerifyPayload, audit_verify,
        "Check the audit hash chain of the caller's tenant (master scope: every tenant, or "
        "tenantId): intact, or per tenant the first record (or hook row) altered, removed or "
        "reordered.",
        ("GET", "/audit/verify"),
    ),
    _method(
        "hooks.check", "admin", schemas.HookIdParams, schemas.CheckPayload, hooks_check,
        "Warnings for a saved hook that is valid but will not work as meant: a webhook URL "
        "that is loopback, private or does not resolve (HOOKGATE_SSRF_ALLOWLIST admits one).",
        ("GET", "/hooks/{hookId}/check"),
    ),
    _method(
        "hooks.export", "viewer", schemas.ExportParams, schemas.ExportPayload, hooks_export,
        "The tenant's own user hooks as a hooks file (YAML or JSON); secret header values "
        "are never written.",
        ("GET", "/hooks/export"),
    ),
    _method(
        "hooks.import", "admin", schemas.ImportParams, schemas.ImportPayload, hooks_import,
        "Apply a hooks file to the tenant: every hook is checked first, one report entry "
        "each; nothing is written when any is invalid (or on dryRun).",
        ("POST", "/hooks/import"),
    ),
    _method(
        "keys.list", "admin", schemas.KeyListParams, schemas.KeysPayload, keys_list,
        "API keys of the caller's tenant (master scope: every tenant), never their secret.",
        ("GET", "/keys"),
    ),
    _method(
        "keys.create", "admin", schemas.KeyCreateParams, schemas.KeyCreatedPayload, keys_create,
        "Create a key for the caller's tenant (master scope: any tenant, or a master key) with "
        "a role no higher than the caller's; the secret is in this answer only.",
        ("POST", "/keys"),
    ),
    _method(
        "keys.revoke", "admin", schemas.KeyIdParams, schemas.KeyPayload, keys_revoke,
        "Revoke a key of the caller's tenant (a master key needs master scope); it stops "
        "working at once on this gateway, within two seconds on the others.",
        ("POST", "/keys/{keyId}/revoke"),
    ),
    _method(
        "approvals.list", "viewer", schemas.ApprovalListParams, schemas.ApprovalsPayload,
        approvals_list,
        "Approvals of the caller's tenant, newest first (pending by default), with the count "
        "of pending ones and a revision for approvals.watch.",
        ("GET", "/approvals"),
    ),
    _method(
        "approvals.get", "viewer", schemas.ApprovalIdParams, schemas.ApprovalPayload,
        approvals_get,
        "One approval: tool, input, hook and reason; who decided, when and how.",
        ("GET", "/approvals/{approvalId}"),
    ),
    _method(
        "approvals.approve", "approver", schemas.ApprovalDecideParams, schemas.ApprovalPayload,
        approvals_approve,
        "Approve a pending approval, with an optional comment and an edited input.",
        ("POST", "/approvals/{approvalId}/approve"),
    ),
    _method(
        "approvals.deny", "approver", schemas.ApprovalDecideParams, schemas.ApprovalPayload,
        approvals_deny,
        "Deny a pending approval, with an optional comment.",
        ("POST", "/approvals/{approvalId}/deny"),
    ),
    _method(
        "approvals.wait", "operator", schemas.ApprovalWaitParams, schemas.OutcomePayload,
        approvals_wait,
        "Wait for an approval's decision and return the outcome of the dispatch that asked "
        "(status pending again when timeoutS passed first).",
        ("GET", "/approvals/{approvalId}/outcome"),
    ),
    _method(
        "approvals.watch", "viewer", schemas.ApprovalWatchParams,
        schemas.ApprovalWatchPayload, approvals_watch,
        "Long-poll: returns when the caller's approvals changed since a revision (or after "
        "timeoutS), with the pending count.",
        ("GET", "/approvals/watch"),
    ),
)
METHODS: Final[dict[str, Method]] = {method.name: method for method in METHOD_LIST}
EVENTS_INFO: Final = [
    {
        "name": spec.name,
        "blocking": spec.blocking,
        "match_field": spec.match_field,
        "input_field": spec.input_field,
    }
    for spec in CATALOGUE
]
