"""Gateway building blocks without a server: key parsing and caching, trace context, the
generated OpenAPI document."""

from __future__ import annotations

from pathlib import Path

import pytest

from hookgate.definition_model import DefinitionFields
from hookgate.server.auth import KEY_CACHE_TTL_S, Authenticator, bearer_token
from hookgate.server.errors import ApiError
from hookgate.server.method_table import METHODS
from hookgate.server.openapi import openapi_document
from hookgate.server.tracing import parse_traceparent
from hookgate.store import Caller, open_store
from hookgate.testing import FakeClock


@pytest.mark.parametrize(
    ("header", "token"),
    [
        ("Bearer hg-abc", "hg-abc"),
        ("bearer   hg-abc  ", "hg-abc"),
        ("Basic dXNlcg==", None),
        ("Bearer", None),
        ("", None),
        (None, None),
    ],
)
def test_bearer_token(header: str | None, token: str | None) -> None:
    assert bearer_token(header) == token


async def test_revoked_key_is_refused_once_the_cache_expires(tmp_path: Path) -> None:
    """A verified key is trusted for KEY_CACHE_TTL_S, then checked against the store again."""
    store = await open_store(data_dir=tmp_path)
    try:
        key, token = await store.create_api_key(
            Caller.master_scope(), tenant_id="t", role="viewer", name="unit"
        )
        clock = FakeClock()
        auth = Authenticator(store, clock=clock)
        principal = await auth.authenticate(token)
        assert (principal.tenant_id, principal.role, principal.master) == ("t", "viewer", False)
        await store.revoke_api_key(Caller.master_scope(), key.id)
        assert await auth.still_valid(principal)  # cached
        assert auth.cached(principal.key_hash) == principal  # the WebSocket's per-request check
        clock.advance(KEY_CACHE_TTL_S + 0.1)
        assert auth.cached(principal.key_hash) is None  # expired: the store must be asked
        assert not await auth.still_valid(principal)
        with pytest.raises(ApiError) as refused:
            await auth.authenticate(token)
        assert refused.value.status == 401 and "revoked" in refused.value.message
        with pytest.raises(ApiError) as missing:
            await auth.authenticate(None)
        assert "missing API key" in missing.value.message
    finally:
        await store.close()


def test_parse_traceparent() -> None:
    parsed = parse_traceparent("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
    assert parsed is not None and parsed[1] == "4bf92f3577b34da6a3ce929d0e0e4736"
    for bad in (None, "", "garbage", "00-" + "0" * 32 + "-" + "0" * 16 + "-01"):
        assert parse_traceparent(bad) is None


def test_openapi_covers_every_method() -> None:
    document = openapi_document()
    operations = {
        op["operationId"]: (path, verb)
        for path, item in document["paths"].items()
        for verb, op in item.items()
    }
    assert set(METHODS) <= set(operations)
    path, verb = operations["hooks.get"]
    parameters = document["paths"][path][verb]["parameters"]
    assert {"name": "hookId", "in": "path", "required": True, "schema": {"type": "string"}} in (
        parameters
    )
    create = document["paths"]["/api/v1/hooks"]["post"]
    assert "201" in create["responses"] and create["requestBody"]["required"] is True
    assert document["components"]["securitySchemes"]["bearer"]["scheme"] == "bearer"
    assert document["paths"]["/healthz"]["get"]["security"] == []
    assert set(document["paths"]["/readyz"]["get"]["responses"]) == {"200", "503"}


def test_openapi_hook_definitions_come_from_the_definition_schema() -> None:
    """Create, update and dry run describe a hook with the schema that validates it, so the
    document cannot drift from what the gateway accepts."""
    document = openapi_document()
    schemas = document["components"]["schemas"]
    definition = schemas["HookDefinition"]
    assert set(definition["properties"]) == set(DefinitionFields.model_fields)
    assert set(definition["required"]) == {"event", "handler_type", "scope"}
    assert definition["additionalProperties"] is False
    assert set(schemas["HookDefinitionPatch"]["properties"]) == set(definition["properties"])
    assert "required" not in schemas["HookDefinitionPatch"]
    body = {verb: document["paths"][path][verb]["requestBody"]["content"]["application/json"]
            ["schema"] for path, verb in (("/api/v1/hooks", "post"),
                                          ("/api/v1/hooks/{hookId}", "patch"))}
    assert body == {"post": {"$ref": "#/components/schemas/HookDefinition"},
                    "patch": {"$ref": "#/components/schemas/HookDefinitionPatch"}}
    test_config = schemas["TestParams"]["properties"]["config"]["anyOf"]
    assert {"$ref": "#/components/schemas/HookDefinition"} in test_config
    # A stored hook shows every field of a definition (the ones an author may only write,
    # such as GoClaw's single agent_id, are folded into the others).
    written_only = {"agent_id", "description", "metadata"}
    stored = set(schemas["Hook"]["properties"])
    assert set(DefinitionFields.model_fields) - written_only <= stored
