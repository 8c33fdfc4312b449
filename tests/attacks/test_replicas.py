"""Attacks on a gateway run as several replicas on one PostgreSQL database."""

from __future__ import annotations

import time
from pathlib import Path

import httpx
import pytest
from tests.support.replicas import ReplicaSet, fresh_database

pytestmark = [pytest.mark.postgres, pytest.mark.timeout(180)]


def test_a_revoked_key_is_refused_at_once_by_every_replica(tmp_path: Path) -> None:
    """tenant: an admin revokes a tenant's key on one replica; the tenant goes on calling
    another replica, whose cached check of the key let it in for up to 2 more seconds.
    Every replica hears the revocation by NOTIFY and refuses the key within half a second."""
    with fresh_database() as url, ReplicaSet(tmp_path, url, count=2) as replicas:
        first, second = replicas.start_all()
        master = replicas.master_key
        made = first.rest("POST", "/api/v1/keys", master,
                          json={"role": "operator", "name": "tenant", "tenantId": "acme"})
        assert made.status_code == 201, made.text
        key, key_id = made.json()["secret"], made.json()["key"]["id"]
        headers = {"Authorization": f"Bearer {key}"}
        with httpx.Client(base_url=second.url, timeout=10, headers=headers) as tenant:
            assert tenant.get("/api/v1/info").status_code == 200  # cached on that replica
            revoked = first.rest("POST", f"/api/v1/keys/{key_id}/revoke", master)
            assert revoked.status_code == 200, revoked.text
            revoked_at = time.monotonic()
            while tenant.get("/api/v1/info").status_code == 200:
                assert time.monotonic() - revoked_at < 0.5, "the revoked key still works"
