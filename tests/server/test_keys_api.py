"""``keys.*`` against a real gateway, played as an attacker: a tenant admin reaching for
another tenant, a master key or a higher role; viewers and operators reaching for the list;
anyone reaching for a secret after it was shown once."""

from __future__ import annotations

import pytest
from tests.server.conftest import Keys
from tests.server.gateway_process import GatewayProcess
from tests.server.wsutil import fails, ok, open_ws


def test_admin_creates_lists_and_revokes_a_key_of_its_tenant(
    gateway: GatewayProcess, keys: Keys
) -> None:
    with open_ws(gateway.ws_url, keys.a_admin) as ws:
        created = ok(ws, "keys.create", {"role": "viewer", "name": "ci reader"})
        key, secret = created["key"], created["secret"]
        assert key["tenant_id"] == "tenant-a" and key["role"] == "viewer"
        assert key["master"] is False and secret.startswith(key["prefix"])
        listed = ok(ws, "keys.list")["keys"]
        assert key["id"] in {k["id"] for k in listed}
        assert {k["tenant_id"] for k in listed} == {"tenant-a"}
    # The new key works, and reads never show a secret or a hash again.
    with open_ws(gateway.ws_url, secret) as reader:
        assert ok(reader, "connect")["role"] == "viewer"
    listing = gateway.rest("GET", "/api/v1/keys", keys.a_admin).text
    assert secret not in listing and "hash" not in listing
    assert secret not in gateway.log()
    # Revoked: refused at once by this gateway (no cache grace on the replica that revoked).
    with open_ws(gateway.ws_url, keys.a_admin) as ws:
        revoked = ok(ws, "keys.revoke", {"keyId": key["id"]})["key"]
        assert revoked["revoked_at"] is not None
        assert key["id"] not in {k["id"] for k in ok(ws, "keys.list")["keys"]}
        with_revoked = ok(ws, "keys.list", {"includeRevoked": True})["keys"]
        assert key["id"] in {k["id"] for k in with_revoked}
    assert gateway.rest("GET", "/api/v1/hooks", secret).status_code == 401


def test_rest_create_answers_201_and_is_never_cached(gateway: GatewayProcess, keys: Keys) -> None:
    answer = gateway.rest("POST", "/api/v1/keys", keys.a_admin, json={"role": "operator"})
    assert answer.status_code == 201 and answer.headers["cache-control"] == "no-store"
    assert answer.json()["key"]["role"] == "operator"


@pytest.mark.parametrize(
    ("params", "why"),
    [
        ({"role": "viewer", "tenantId": "tenant-b"}, "another tenant"),
        ({"role": "viewer", "master": True}, "master keys"),
        ({"role": "admin", "tenantId": "tenant-b", "master": True}, "both"),
    ],
)
def test_a_tenant_admin_cannot_mint_keys_beyond_its_tenant(
    gateway: GatewayProcess, keys: Keys, params: dict[str, object], why: str
) -> None:
    with open_ws(gateway.ws_url, keys.master) as ws:
        before = {k["id"] for k in ok(ws, "keys.list", {"includeRevoked": True})["keys"]}
    with open_ws(gateway.ws_url, keys.a_admin) as ws:
        error = fails(ws, "keys.create", params, "UNAUTHORIZED")
        assert "master" in error["message"], why
    with open_ws(gateway.ws_url, keys.master) as ws:
        after = {k["id"] for k in ok(ws, "keys.list", {"includeRevoked": True})["keys"]}
    assert after == before  # nothing was minted


def test_a_key_cannot_choose_its_secret_or_smuggle_fields(
    gateway: GatewayProcess, keys: Keys
) -> None:
    with open_ws(gateway.ws_url, keys.a_admin) as ws:
        fails(ws, "keys.create", {"role": "viewer", "token": "hg_chosen"}, "INVALID_REQUEST")
        fails(ws, "keys.create", {"role": "owner"}, "INVALID_REQUEST")
        fails(ws, "keys.create", {"role": "viewer", "tenantId": ""}, "INVALID_REQUEST")


@pytest.mark.parametrize("who", ["a_viewer", "a_operator"])
def test_viewers_and_operators_cannot_touch_keys(
    gateway: GatewayProcess, keys: Keys, who: str
) -> None:
    key = getattr(keys, who)
    with open_ws(gateway.ws_url, keys.a_admin) as ws:
        victim = ok(ws, "keys.list")["keys"][0]["id"]
    with open_ws(gateway.ws_url, key) as ws:
        for method, params in (
            ("keys.list", {}),
            ("keys.create", {"role": "viewer"}),
            ("keys.revoke", {"keyId": victim}),
        ):
            error = fails(ws, method, params, "UNAUTHORIZED")
            assert "requires the admin role" in error["message"]
    assert gateway.rest("GET", "/api/v1/keys", key).status_code == 403


def test_a_tenant_admin_cannot_revoke_across_tenants_or_a_master_key(
    gateway: GatewayProcess, keys: Keys
) -> None:
    with open_ws(gateway.ws_url, keys.master) as ws:
        everyone = ok(ws, "keys.list")["keys"]
    b_key = next(k for k in everyone if k["tenant_id"] == "tenant-b")
    master_key = next(k for k in everyone if k["master"])
    with open_ws(gateway.ws_url, keys.a_admin) as ws:
        fails(ws, "keys.revoke", {"keyId": b_key["id"]}, "NOT_FOUND")
        fails(ws, "keys.list", {"tenantId": "tenant-b"}, "UNAUTHORIZED")
    # A master key filed under tenant A is still out of its tenant admin's reach.
    with open_ws(gateway.ws_url, keys.master) as ws:
        planted = ok(ws, "keys.create", {"role": "admin", "tenantId": "tenant-a", "master": True})
    with open_ws(gateway.ws_url, keys.a_admin) as ws:
        fails(ws, "keys.revoke", {"keyId": planted["key"]["id"]}, "UNAUTHORIZED")
    assert gateway.rest("GET", "/api/v1/hooks", planted["secret"]).status_code == 200
    assert master_key["id"] != planted["key"]["id"]
    # Tenant B's admin still works; the master still works.
    assert gateway.rest("GET", "/api/v1/hooks", keys.b_admin).status_code == 200
    assert gateway.rest("GET", "/api/v1/hooks", keys.master).status_code == 200


def test_master_mints_for_any_tenant_and_a_master_key(gateway: GatewayProcess, keys: Keys) -> None:
    with open_ws(gateway.ws_url, keys.master) as ws:
        made = ok(ws, "keys.create", {"role": "admin", "tenantId": "tenant-c", "master": True})
        assert made["key"]["tenant_id"] == "tenant-c" and made["key"]["master"] is True
        ok(ws, "keys.revoke", {"keyId": made["key"]["id"]})


def test_an_open_socket_of_a_revoked_key_is_refused_at_its_next_call(
    gateway: GatewayProcess, keys: Keys
) -> None:
    with open_ws(gateway.ws_url, keys.a_admin) as ws:
        created = ok(ws, "keys.create", {"role": "operator", "name": "soon revoked"})
    with open_ws(gateway.ws_url, created["secret"]) as victim:
        assert ok(victim, "hooks.list", {})["hooks"] is not None
        with open_ws(gateway.ws_url, keys.a_admin) as ws:
            ok(ws, "keys.revoke", {"keyId": created["key"]["id"]})
        error = fails(victim, "hooks.list", {}, "UNAUTHORIZED")
        assert "revoked" in error["message"]
