"""Services: the collaborators handlers share are typed fields, each with its default."""

from __future__ import annotations

import dataclasses

import aiohttp
import pytest

from hookgate import Engine
from hookgate.approvals import CallbackApprover
from hookgate.handlers import Services
from hookgate.net.outbound import OutboundClient, shared_client
from hookgate.settings import Settings


def test_collaborators_are_named_fields_not_a_dict() -> None:
    """Every collaborator is a keyword field: a misspelt one fails where it is passed."""
    names = {f.name for f in dataclasses.fields(Services)}
    assert "extras" not in names and {"keyring", "approver", "budget_store"} <= names
    with pytest.raises(TypeError):
        Services(Settings(), {"keyring": None})  # type: ignore[misc]
    with pytest.raises(TypeError):
        Services(key_ring=None)  # type: ignore[call-arg]


async def test_the_engine_fills_in_its_own_and_keeps_the_callers() -> None:
    approver = CallbackApprover(lambda request: None)
    async with Engine(approver=approver) as engine:
        assert engine.services.approver is approver and engine.approver is approver
        assert engine.services.hook_threads is engine.threads


async def test_an_unguarded_http_client_is_refused() -> None:
    """Typed or not, a plain session would bypass the SSRF guard."""
    async with aiohttp.ClientSession() as session:
        services = Services(http_client=session)  # type: ignore[arg-type]
        with pytest.raises(TypeError, match="SSRF-guarded"):
            shared_client(services)
    services = Services()
    client = shared_client(services)
    assert isinstance(client, OutboundClient) and services.http_client is client
    assert shared_client(services) is client
    await client.aclose()
