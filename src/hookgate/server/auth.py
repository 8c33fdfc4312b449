"""API-key authentication and the role rules.

Every request carries a key (``Authorization: Bearer <key>``, or the browser's first
``connect`` frame). A key names a tenant, a role and optionally master scope. Roles are
ordered: a *viewer* reads, an *approver* also decides approvals (a person's key: it cannot
dispatch, so it is never an agent's), an *operator* also tests hooks and dispatches events
(and decides approvals it did not ask for), an *admin* also writes. Global hooks need master
scope on top of the role.

Keys are random, so the store keeps only their SHA-256; a verified key is cached for two
seconds. A revocation is announced to every replica (PostgreSQL ``NOTIFY``), which drops the
key's cached check at once; the two seconds bound it only when that channel is down (or on
SQLite shared by several processes).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

from hookgate.server.errors import ApiError
from hookgate.store import ApiKey, Caller, Store, hash_api_key
from hookgate.store.base import API_KEY_ROLES

__all__ = ["ROLES", "Authenticator", "Principal", "bearer_token", "require_role"]

ROLES: Final = API_KEY_ROLES
_RANK: Final = {role: rank for rank, role in enumerate(ROLES)}
#: How long a verified key is trusted before the store is asked again.
KEY_CACHE_TTL_S: Final = 2.0
_MAX_CACHED: Final = 10_000


@dataclass(frozen=True, slots=True)
class Principal:
    """The authenticated caller of one connection or request."""

    key_id: str
    key_name: str
    tenant_id: str
    role: str
    master: bool
    key_hash: str

    @property
    def caller(self) -> Caller:
        return Caller(tenant_id=self.tenant_id, master=self.master)

    @property
    def actor(self) -> str:
        """Who made a change, as recorded on the hook: the key's name and the start of its id
        (names need not be unique). Never the key or its hash."""
        short_id = self.key_id[:8]
        return f"{self.key_name} ({short_id})" if self.key_name else f"key {short_id}"

    def has_role(self, role: str) -> bool:
        return _RANK[self.role] >= _RANK[role]

    @classmethod
    def from_key(cls, key: ApiKey, key_hash: str) -> Principal:
        return cls(
            key_id=key.id,
            key_name=key.name,
            tenant_id=key.tenant_id,
            role=key.role,
            master=key.master,
            key_hash=key_hash,
        )


def require_role(principal: Principal, role: str, action: str) -> None:
    """Raise ``UNAUTHORIZED`` unless the principal's role is at least ``role``."""
    if not principal.has_role(role):
        raise ApiError(
            "UNAUTHORIZED",
            f"{action} requires the {role} role; this key has the {principal.role} role",
        )


def bearer_token(header: str | None) -> str | None:
    """The key in an ``Authorization: Bearer <key>`` header, or None when there is none."""
    if not header:
        return None
    scheme, _, token = header.strip().partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        return None
    return token.strip()


class Authenticator:
    """Turns a presented key into a :class:`Principal`, with a short-lived cache."""

    def __init__(self, store: Store, *, clock: Callable[[], float] = time.monotonic) -> None:
        self._store = store
        self._clock = clock
        self._cache: dict[str, tuple[Principal, float]] = {}

    async def authenticate(self, token: str | None) -> Principal:
        if not token:
            raise ApiError.unauthenticated(
                "missing API key: send 'Authorization: Bearer <key>' or a connect frame"
            )
        key_hash = hash_api_key(token)
        principal = await self.check_hash(key_hash)
        if principal is None:
            raise ApiError.unauthenticated("invalid or revoked API key")
        return principal

    def cached(self, key_hash: str) -> Principal | None:
        """The principal for a key hash verified less than the cache TTL ago, else None.

        The per-request check on an open WebSocket: no coroutine while the cache is fresh.
        """
        cached = self._cache.get(key_hash)
        if cached is not None and cached[1] > self._clock():
            return cached[0]
        return None

    async def check_hash(self, key_hash: str) -> Principal | None:
        """The principal for a key hash, re-checked against the store once the cache expires."""
        now = self._clock()
        cached = self._cache.get(key_hash)
        if cached is not None and cached[1] > now:
            return cached[0]
        key = await self._store.lookup_api_key(key_hash)
        if key is None:
            self._cache.pop(key_hash, None)
            return None
        principal = Principal.from_key(key, key_hash)
        if len(self._cache) >= _MAX_CACHED:
            self._cache.clear()
        self._cache[key_hash] = (principal, now + KEY_CACHE_TTL_S)
        return principal

    def forget_key(self, key_id: str) -> None:
        """Drop a revoked key's cached check, so this gateway refuses it from now on."""
        for key_hash, (principal, _expires) in list(self._cache.items()):
            if principal.key_id == key_id:
                self._cache.pop(key_hash, None)

    def forget_all(self) -> None:
        """Drop every cached check (revocations may have been missed: a lost LISTEN)."""
        self._cache.clear()

    async def still_valid(self, principal: Principal) -> bool:
        """For long-lived WebSocket connections: is the key behind them still active?"""
        return await self.check_hash(principal.key_hash) is not None
