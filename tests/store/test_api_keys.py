"""API keys: hashed at rest, scoped to a tenant, revocable."""

from __future__ import annotations

import pytest

from hookgate.store import Caller, Forbidden, NotFound, StoreError, hash_api_key
from hookgate.store.base import Store

MASTER = Caller.master_scope()
A = Caller.for_tenant("tenant-a")
B = Caller.for_tenant("tenant-b")


async def test_create_lookup_list_revoke(store: Store) -> None:
    key, token = await store.create_api_key(
        MASTER, tenant_id="tenant-a", role="operator", name="ci"
    )
    assert token.startswith("hg-") and len(token) > 30
    assert key.prefix == token[:10] and key.active
    found = await store.lookup_api_key(hash_api_key(token))
    assert found == key
    assert found.caller() == Caller("tenant-a", master=False)
    assert await store.lookup_api_key(hash_api_key(token + "x")) is None
    # only the hash is stored
    async with store._read() as sql:  # type: ignore[attr-defined]
        stored = await sql.fetch("SELECT key_hash FROM hookgate_api_keys")
    assert [r["key_hash"] for r in stored] == [hash_api_key(token)]
    assert token not in str(key.to_dict())

    revoked = await store.revoke_api_key(A, key.id)
    assert revoked.revoked_at is not None
    assert await store.lookup_api_key(hash_api_key(token)) is None
    again = await store.revoke_api_key(A, key.id)  # idempotent, keeps the first time
    assert again.revoked_at == revoked.revoked_at
    assert [k.id for k in await store.list_api_keys(A)] == [key.id]


async def test_key_scoping(store: Store) -> None:
    a_key, _ = await store.create_api_key(A, tenant_id="tenant-a", role="viewer")
    b_key, _ = await store.create_api_key(MASTER, tenant_id="tenant-b", role="admin")
    root, root_token = await store.create_api_key(
        MASTER, tenant_id="ops", role="admin", master=True, token="hg-fixed-bootstrap-token-123"
    )
    assert root_token == "hg-fixed-bootstrap-token-123"
    assert (await store.lookup_api_key(hash_api_key(root_token))).caller().master  # type: ignore[union-attr]
    with pytest.raises(Forbidden):
        await store.create_api_key(A, tenant_id="tenant-b", role="viewer")
    with pytest.raises(Forbidden):
        await store.create_api_key(A, tenant_id="tenant-a", role="admin", master=True)
    with pytest.raises(StoreError, match="role must be one of"):
        await store.create_api_key(A, tenant_id="tenant-a", role="root")  # type: ignore[arg-type]
    with pytest.raises(StoreError, match="already exists"):
        await store.create_api_key(MASTER, tenant_id="x", role="viewer", token=root_token)
    assert [k.id for k in await store.list_api_keys(A)] == [a_key.id]
    assert {k.id for k in await store.list_api_keys(MASTER)} == {a_key.id, b_key.id, root.id}
    with pytest.raises(NotFound):
        await store.revoke_api_key(A, b_key.id)
    assert (await store.list_api_keys(B))[0].active
