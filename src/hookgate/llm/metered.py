"""One model call for a hook, metered: the call's cap reserved first, real usage settled after.

Prompt and agent hooks both call :func:`metered_completion`. It picks the provider
(:mod:`.select`), reserves the call's cap (:func:`call_cap`) from the tenant's monthly budget
in one atomic step, refusing the call when nothing is left, sends the request through the
SSRF-guarded client, settles the reservation to the reply's real token usage (releases it
when the call fails) and reports model and tokens as execution details (``prompt_model``,
``prompt_tokens``, …). Concurrent calls, on one gateway or on many replicas sharing the
store, cannot overrun the budget by more than one call's cap.

A budget store that cannot be reached is the gateway's failure, not the hook's: it raises
:class:`~hookgate.outcome.InfrastructureError` (fails closed, never trips the breaker).

:class:`~hookgate.handlers.base.Services` used (:class:`MeteringServices`): ``budget_store`` (a
:class:`~hookgate.llm.budget.BudgetStore`; an in-memory one is created and
shared on first use), ``http_client``, ``keyring`` (opens a hook's sealed ``api_key``) and
``llm_providers`` (a gateway's :class:`~hookgate.llm.providers.ProviderRegistry`: when
present, hooks may only use the operator's providers, see :mod:`hookgate.llm.providers`).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final, Protocol

from hookgate.llm.base import ChatReply, ChatRequest, ProviderError, ToolSpec
from hookgate.llm.budget import (
    WARN_FRACTION,
    BudgetReservation,
    BudgetStore,
    MemoryBudgetStore,
)
from hookgate.llm.providers import ProviderRegistry, open_api_key
from hookgate.llm.select import ProviderChoice, choose_for_tenant, choose_provider, make_provider
from hookgate.log import log_event
from hookgate.net.outbound import ClientHolder, shared_client
from hookgate.net.ssrf import SsrfRefused
from hookgate.outcome import HookError, InfrastructureError
from hookgate.secrets.keyring import Keyring, SecretError
from hookgate.shadow import SHADOW_SKIPPED

#: Shadow hooks' model calls stop where the budget turns low (:data:`WARN_FRACTION`): the
#: rest is the enforce hooks' (a shadow hook never starves one that decides).
SHADOW_FLOOR: Final = WARN_FRACTION

__all__ = [
    "DEFAULT_TENANT",
    "MeteredReply",
    "MeteringServices",
    "budget_store",
    "call_cap",
    "metered_completion",
]

#: Whose budget pays when neither the event nor the hook names a tenant (library use).
DEFAULT_TENANT: Final = "default"


class MeteringServices(ClientHolder, Protocol):
    """What a metered call uses of :class:`hookgate.handlers.Services`, named by its shape:
    the handlers sit above the model layer, so it does not import them."""

    keyring: Keyring | None
    budget_store: BudgetStore | None
    llm_providers: ProviderRegistry | None


@dataclass(slots=True)
class MeteredReply:
    reply: ChatReply
    details: dict[str, Any] = field(default_factory=dict)


def budget_store(services: MeteringServices) -> BudgetStore:
    if services.budget_store is None:
        services.budget_store = MemoryBudgetStore()
    return services.budget_store


#: Releases under way (a reference keeps each task alive until it finishes).
_releasing: set[asyncio.Future[dict[str, Any]]] = set()


def call_cap(request: ChatRequest) -> int:
    """The most tokens a call may use, reserved before it: the output limit plus the input
    counted generously (one token per two bytes; tokenizers average three to four)."""
    prompt_bytes = len(request.system.encode()) + len(request.user.encode())
    return request.max_tokens + prompt_bytes // 2 + 1


async def _settle(
    store: BudgetStore, reservation: BudgetReservation, used: int, hook_id: str
) -> dict[str, Any]:
    try:
        after = await store.settle(reservation, used)
    except Exception as exc:
        # The model already answered; the reservation stays charged (it may only overcount).
        log_event("security.hook.budget_deduct_failed", hook_id=hook_id, error=str(exc))
        return {}
    if after.crossed_warning:
        log_event(
            "security.hook.budget_low",
            tenant_id=reservation.tenant_id,
            remaining=after.remaining,
            budget_total=after.budget_total,
        )
    return {"budget_remaining": after.remaining}


def _choose(
    services: MeteringServices, config: Mapping[str, Any], hook_id: str
) -> ProviderChoice:
    own_key = open_api_key(config, hook_id, services.keyring)
    registry = services.llm_providers
    if registry is not None:
        return choose_for_tenant(config, registry, services.settings, own_key=own_key)
    choice = choose_provider(config, services.settings)
    if own_key is None:
        return choice
    return ProviderChoice(choice.provider, choice.model, choice.base_url, "", own_key)


async def metered_completion(
    services: MeteringServices,
    config: Mapping[str, Any],
    *,
    hook_id: str,
    tenant_id: str | None,
    system: str,
    user: str,
    tool: ToolSpec | None,
    timeout_s: float,
    max_tokens: int = 512,
    shadow: bool = False,
) -> MeteredReply:
    """Call the hook's model; raise :class:`HookError` for every way this can fail.

    ``shadow``: the hook runs in shadow mode, and may not take the tenant's budget below
    :data:`SHADOW_FLOOR` of its total: that last part is kept for the hooks that decide."""
    tenant = tenant_id or DEFAULT_TENANT
    try:
        choice = _choose(services, config, hook_id)
        provider = make_provider(choice, shared_client(services))
    except (ValueError, TypeError, SecretError) as exc:
        raise HookError(f"model provider: {exc}") from None
    details: dict[str, Any] = {"prompt_model": choice.model, "prompt_provider": choice.provider}
    store = budget_store(services)
    request = ChatRequest(choice.model, system, user, tool, max_tokens=max_tokens)
    cap = call_cap(request)
    try:
        if shadow:
            status = await store.check(tenant)
            floor = int(status.budget_total * SHADOW_FLOOR)
            if status.remaining - cap < floor:
                raise HookError(
                    f"shadow hooks keep the last {SHADOW_FLOOR:.0%} of tenant {tenant!r}'s "
                    f"monthly token budget for enforce hooks ({status.remaining} of "
                    f"{status.budget_total} left, this call may take {cap})",
                    details={
                        **details,
                        "budget_remaining": status.remaining,
                        SHADOW_SKIPPED: "token budget below the shadow floor",
                    },
                )
        reservation = await store.reserve(tenant, cap)
    except HookError:
        raise
    except Exception as exc:
        log_event("security.hook.budget_precheck_failed", hook_id=hook_id, error=str(exc))
        raise InfrastructureError(f"token budget unavailable: {exc}", details=details) from None
    if reservation.tokens == 0:
        status = reservation.status
        raise HookError(
            f"monthly token budget of {status.budget_total} is used up for tenant "
            f"{tenant!r}; raise it or wait for the next month",
            details={**details, "budget_remaining": 0},
        )
    try:
        # The engine's timeout must win over the client's backstop deadline.
        reply = await provider.complete(request, timeout_s=timeout_s + 0.5)
    except BaseException as exc:
        # Nothing was used (or nothing we can know of): give the reservation back, even when
        # the engine's timeout cancelled us (shielded: a second cancel must not lose it).
        release = asyncio.ensure_future(_settle(store, reservation, 0, hook_id))
        _releasing.add(release)
        release.add_done_callback(_releasing.discard)
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.shield(release)
        if isinstance(exc, SsrfRefused):
            log_event("security.hook.ssrf_blocked", hook_id=hook_id, host=exc.host)
            raise HookError(f"model endpoint refused: {exc}", details=details) from None
        if isinstance(exc, ProviderError):
            if exc.status is not None:
                details["http_status"] = exc.status
            raise HookError(str(exc), details=details) from None
        raise
    usage = reply.usage
    details.update(
        prompt_model=reply.model,
        prompt_tokens=usage.total,
        prompt_input_tokens=usage.input_tokens,
        prompt_output_tokens=usage.output_tokens,
    )
    details.update(await _settle(store, reservation, usage.total, hook_id))
    return MeteredReply(reply, details)
