"""Who created and who last changed a hook, through a real gateway: writes over REST and the
WebSocket record the calling key (its name and id prefix, never the key), and every read
(REST, WebSocket, the OpenAPI document) shows ``created_by`` / ``updated_by`` / ``updated_at``."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import pytest
from tests.server.gateway_process import GatewayProcess, run_cli
from tests.server.test_ws_protocol import BLOCKER
from tests.server.wsutil import ok, open_ws

from hookgate.store import hash_api_key


@dataclass(frozen=True)
class NamedKey:
    token: str
    id: str

    def actor(self, name: str) -> str:
        return f"{name} ({self.id[:8]})" if name else f"key {self.id[:8]}"


def _create_key(gateway: GatewayProcess, name: str) -> NamedKey:
    args = ["keys", "create", "--tenant", "tenant-a", "--role", "admin"]
    result = run_cli(*args, "--name", name, data_dir=gateway.data_dir)
    token = result.stdout.strip().splitlines()[-1]
    listed = run_cli("keys", "list", "--json", data_dir=gateway.data_dir).stdout.splitlines()
    (key_id,) = [
        key["id"]
        for key in map(json.loads, listed)
        if key["name"] == name and token.startswith(key["prefix"])
    ]
    return NamedKey(token, key_id)


@pytest.fixture(scope="module")
def named_keys(gateway: GatewayProcess) -> dict[str, NamedKey]:
    return {name: _create_key(gateway, name) for name in ("ops-admin", "ops-editor", "")}


def _get(gateway: GatewayProcess, key: str, hook_id: str) -> dict[str, Any]:
    answer = gateway.rest("GET", f"/api/v1/hooks/{hook_id}", key)
    assert answer.status_code == 200, answer.text
    hook: dict[str, Any] = answer.json()["hook"]
    return hook


def test_writes_record_the_calling_key_and_reads_show_it(
    gateway: GatewayProcess, named_keys: dict[str, NamedKey]
) -> None:
    admin, editor, nameless = named_keys["ops-admin"], named_keys["ops-editor"], named_keys[""]
    created = gateway.rest(
        "POST", "/api/v1/hooks", admin.token, json=BLOCKER | {"name": "attributed"}
    )
    assert created.status_code == 201, created.text
    hook_id = created.json()["hookId"]
    first = _get(gateway, editor.token, hook_id)
    assert first["created_by"] == first["updated_by"] == admin.actor("ops-admin")
    assert first["updated_at"] == first["created_at"]

    # another key updates it over the WebSocket; both read paths show creator and changer
    with open_ws(gateway.ws_url, editor.token) as ws:
        ok(ws, "hooks.update", {"hookId": hook_id, "updates": {"priority": 3}})
        via_ws = ok(ws, "hooks.get", {"hookId": hook_id})["hook"]
        (listed,) = [h for h in ok(ws, "hooks.list", {})["hooks"] if h["id"] == hook_id]
    for hook in (via_ws, listed, _get(gateway, admin.token, hook_id)):
        assert hook["created_by"] == admin.actor("ops-admin")
        assert hook["updated_by"] == editor.actor("ops-editor")
        assert datetime.fromisoformat(hook["updated_at"]) >= datetime.fromisoformat(
            hook["created_at"]
        )
    assert via_ws["version"] == 2

    # a key without a name is recorded by its id prefix alone
    toggled = gateway.rest(
        "POST", f"/api/v1/hooks/{hook_id}/toggle", nameless.token, json={"enabled": False}
    )
    assert toggled.status_code == 200, toggled.text
    after = _get(gateway, admin.token, hook_id)
    assert after["updated_by"] == nameless.actor("") == f"key {nameless.id[:8]}"
    assert after["created_by"] == admin.actor("ops-admin")
    assert after["version"] == 3

    # neither the keys nor their hashes ever appear in a read
    text = gateway.rest("GET", "/api/v1/hooks", admin.token).text
    for key in (admin, editor, nameless):
        assert key.token not in text and hash_api_key(key.token) not in text


def test_clients_cannot_set_the_attribution(
    gateway: GatewayProcess, named_keys: dict[str, NamedKey]
) -> None:
    admin, editor = named_keys["ops-admin"], named_keys["ops-editor"]
    forged = {"created_by": "someone-else", "updated_by": "someone-else"}
    created = gateway.rest(
        "POST", "/api/v1/hooks", admin.token, json=BLOCKER | {"name": "forged"} | forged
    )
    assert created.status_code == 201, created.text
    hook_id = created.json()["hookId"]
    patched = gateway.rest(
        "PATCH", f"/api/v1/hooks/{hook_id}", editor.token, json={"priority": 1} | forged
    )
    assert patched.status_code == 200, patched.text
    hook = _get(gateway, admin.token, hook_id)
    assert (hook["created_by"], hook["updated_by"]) == (
        admin.actor("ops-admin"),
        editor.actor("ops-editor"),
    )


def test_seeded_builtins_are_attributed_to_system(
    gateway: GatewayProcess, named_keys: dict[str, NamedKey]
) -> None:
    hooks = gateway.rest("GET", "/api/v1/hooks", named_keys["ops-admin"].token).json()["hooks"]
    builtins = [h for h in hooks if h["source"] == "builtin"]
    assert builtins, "the gateway seeds builtin hooks at start"
    assert {(h["created_by"], h["updated_by"]) for h in builtins} == {("system", "system")}


def test_openapi_document_describes_the_fields(
    gateway: GatewayProcess, named_keys: dict[str, NamedKey]
) -> None:
    document = gateway.rest(
        "GET", "/api/v1/openapi.json", named_keys["ops-editor"].token
    ).json()
    properties = document["components"]["schemas"]["Hook"]["properties"]
    assert {"created_by", "updated_by", "created_at", "updated_at"} <= set(properties)
