"""The ``keys.*`` methods (WebSocket and REST): create, list and revoke API keys.

Only admins manage keys, and every rule is checked here as if the caller were an attacker:

* a key without master scope manages its own tenant's keys only, never creates a master key
  and never a role above its own;
* the secret is in the answer to ``keys.create`` once; no read returns it again (the store
  keeps only its SHA-256), and the log names the key by id, never by its secret;
* a revoked key stops working on this gateway at once (its cached check is dropped) and on
  other replicas within the authenticator's cache TTL.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from hookgate.log import log_event
from hookgate.server import schemas
from hookgate.server.auth import ROLES, Principal
from hookgate.server.errors import ApiError
from hookgate.server.timestamps import iso
from hookgate.store import ApiKey, NotFound

if TYPE_CHECKING:
    from hookgate.server.gateway import Gateway

__all__ = ["key_view", "keys_create", "keys_list", "keys_revoke"]

_MASTER_ONLY = "only a master-scope key may create master keys or keys for another tenant"


def key_view(key: ApiKey) -> dict[str, Any]:
    """A key as reads show it: who it is for and when, never its secret or hash."""
    return {
        "id": key.id,
        "tenant_id": key.tenant_id,
        "role": key.role,
        "master": key.master,
        "name": key.name,
        "prefix": key.prefix,
        "created_at": iso(key.created_at),
        "revoked_at": iso(key.revoked_at),
    }


async def keys_list(gateway: Gateway, who: Principal, p: schemas.KeyListParams) -> dict[str, Any]:
    if p.tenant_id is not None and p.tenant_id != who.tenant_id and not who.master:
        raise ApiError("UNAUTHORIZED", _MASTER_ONLY.replace("create", "list"))
    found = await gateway.store.list_api_keys(who.caller)
    if p.tenant_id is not None:
        found = [key for key in found if key.tenant_id == p.tenant_id]
    if not p.include_revoked:
        found = [key for key in found if key.active]
    return {"keys": [key_view(key) for key in found]}


async def keys_create(
    gateway: Gateway, who: Principal, p: schemas.KeyCreateParams
) -> dict[str, Any]:
    tenant_id = p.tenant_id or who.tenant_id
    if (p.master or tenant_id != who.tenant_id) and not who.master:
        raise ApiError("UNAUTHORIZED", _MASTER_ONLY)
    if ROLES.index(p.role) > ROLES.index(who.role):
        raise ApiError(
            "UNAUTHORIZED",
            f"a {who.role} key cannot create a key with the higher {p.role} role",
        )
    key, secret = await gateway.store.create_api_key(
        who.caller, tenant_id=tenant_id, role=p.role, master=p.master, name=p.name
    )
    log_event(
        "hookgate.key_created",
        key_id=key.id,
        tenant_id=key.tenant_id,
        role=key.role,
        master=key.master,
        by=who.actor,
    )
    return {"key": key_view(key), "secret": secret}


async def keys_revoke(
    gateway: Gateway, who: Principal, p: schemas.KeyIdParams
) -> dict[str, Any]:
    try:
        key = await gateway.store.revoke_api_key(who.caller, p.key_id)
    except NotFound:
        raise ApiError("NOT_FOUND", f"no API key {p.key_id}") from None
    gateway.auth.forget_key(key.id)
    log_event("hookgate.key_revoked", key_id=key.id, tenant_id=key.tenant_id, by=who.actor)
    return {"key": key_view(key)}
