"""The ``hookgate_api_keys`` table: API keys, stored as hashes, per tenant and role."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from dataclasses import replace
from typing import Final

from hookgate.store.base import (
    API_KEY_ROLES,
    ApiKey,
    ApiKeyRole,
    Caller,
    Forbidden,
    NotFound,
    StoreError,
    hash_api_key,
    new_api_key,
)
from hookgate.store.sql.base import Row, Sql, SqlBackend

__all__ = ["ApiKeyTable"]

_KEY_COLUMNS: Final = "id, tenant_id, role, master, name, prefix, created_at, revoked_at"


def _key_from_row(row: Row) -> ApiKey:
    return ApiKey(
        id=row["id"],
        tenant_id=row["tenant_id"],
        role=row["role"],
        master=bool(row["master"]),
        name=row["name"],
        prefix=row["prefix"],
        created_at=row["created_at"],
        revoked_at=row["revoked_at"],
    )



def _new_key(token: str, *, tenant_id: str, role: ApiKeyRole, master: bool, name: str) -> ApiKey:
    return ApiKey(
        id=str(uuid.uuid4()),
        tenant_id=tenant_id,
        role=role,
        master=master,
        name=name,
        prefix=token[:10],
        created_at=time.time(),
    )


class ApiKeyTable(SqlBackend):
    """API keys: create, list, revoke, look up by hash."""

    async def create_api_key(
        self,
        caller: Caller,
        *,
        tenant_id: str,
        role: ApiKeyRole,
        master: bool = False,
        name: str = "",
        token: str | None = None,
    ) -> tuple[ApiKey, str]:
        if role not in API_KEY_ROLES:
            raise StoreError(f"role must be one of {', '.join(API_KEY_ROLES)}, got {role!r}")
        if not caller.master and (master or tenant_id != caller.tenant_id):
            raise Forbidden("only master scope can create master keys or keys for other tenants")
        if not tenant_id:
            raise StoreError("an API key needs a tenant id")
        token = token or new_api_key()
        key = _new_key(token, tenant_id=tenant_id, role=role, master=master, name=name)
        try:
            async with self._write() as sql:
                await self._insert_key(sql, key, token)
        except Exception as exc:
            if self._is_unique_violation(exc):
                raise StoreError("that API key already exists") from None
            raise
        return key, token

    async def create_first_master_key(
        self, *, name: str, show: Callable[[str], None] | None = None
    ) -> tuple[ApiKey, str] | None:
        token = new_api_key()
        key = _new_key(token, tenant_id="default", role="admin", master=True, name=name)
        async with self._write() as sql:
            # Under the start-up lock: of replicas starting at once, the first makes the key
            # and the others find it.
            await self._lock_bootstrap(sql)
            if await sql.fetchrow("SELECT 1 FROM hookgate_api_keys LIMIT 1") is not None:
                return None
            await self._insert_key(sql, key, token)
            if show is not None:
                # Shown before the commit: a process killed in between leaves no key that
                # nobody saw (the next start makes and shows another).
                show(token)
        return key, token

    async def _insert_key(self, sql: Sql, key: ApiKey, token: str) -> None:
        await sql.execute(
            "INSERT INTO hookgate_api_keys (id, key_hash, prefix, tenant_id, role, "
            "master, name, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            key.id,
            hash_api_key(token),
            key.prefix,
            key.tenant_id,
            key.role,
            key.master,
            key.name,
            key.created_at,
        )

    async def list_api_keys(self, caller: Caller) -> list[ApiKey]:
        async with self._read() as sql:
            if caller.master:
                rows = await sql.fetch(
                    f"SELECT {_KEY_COLUMNS} FROM hookgate_api_keys ORDER BY created_at, id"
                )
            else:
                rows = await sql.fetch(
                    f"SELECT {_KEY_COLUMNS} FROM hookgate_api_keys WHERE tenant_id = ? "
                    "ORDER BY created_at, id",
                    caller.tenant_id,
                )
        return [_key_from_row(row) for row in rows]

    async def revoke_api_key(self, caller: Caller, key_id: str) -> ApiKey:
        async with self._write() as sql:
            row = await sql.fetchrow(
                f"SELECT {_KEY_COLUMNS} FROM hookgate_api_keys WHERE id = ?{self.lock_clause}",
                key_id,
            )
            if row is None or not (caller.master or row["tenant_id"] == caller.tenant_id):
                raise NotFound(f"no API key {key_id}")
            key = _key_from_row(row)
            if not caller.master and key.master:
                raise Forbidden("only master scope can revoke a master key")
            if key.revoked_at is None:
                key = replace(key, revoked_at=time.time())
                await sql.execute(
                    "UPDATE hookgate_api_keys SET revoked_at = ? WHERE id = ?",
                    key.revoked_at,
                    key_id,
                )
            # Announced again when already revoked: a replica that missed it hears it now.
            await self._announce_key(sql, key_id)
        self._key_revoked(key_id)
        return key

    async def lookup_api_key(self, key_hash: str) -> ApiKey | None:
        async with self._read() as sql:
            row = await sql.fetchrow(
                f"SELECT {_KEY_COLUMNS} FROM hookgate_api_keys "
                "WHERE key_hash = ? AND revoked_at IS NULL",
                key_hash,
            )
        return _key_from_row(row) if row is not None else None
