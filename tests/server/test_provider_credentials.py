"""Provider credentials belong to whoever supplied them: attacks on a real ``hookgate serve``.

The operator's environment holds real keys (``OPENAI_API_KEY``, a provider key, the
gateway's own secret key). A tenant's prompt hook must never get any of them sent to a URL
the tenant chose; a key the tenant brought goes only to its hook's provider.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from tests.server.gateway_process import GatewayProcess
from tests.server.wsutil import fails, ok, open_ws
from tests.support.llm_server import ScriptedLLM, decide

OPERATOR_SECRETS = {
    "OPENAI_API_KEY": "operator-openai-secret",
    "WORK_KEY": "operator-work-key",
    "HOOKGATE_SECRET_KEY": "k1:" + "A" * 43 + "=",
}
TOOL = {"event": "pre_tool_use", "input": {"tool_name": "exec", "tool_input": {"cmd": "ls"}}}


@dataclass
class Setup:
    gateway: GatewayProcess
    provider: ScriptedLLM
    attacker: ScriptedLLM
    admin: str

    def prompt_hook(self, name: str, **config: Any) -> dict[str, Any]:
        return {
            "event": "pre_tool_use", "handler_type": "prompt", "scope": "tenant", "name": name,
            "matcher": "^exec$",
            "config": {"prompt_template": "Block destructive commands.", **config},
        }


@pytest.fixture(scope="module")
def setup(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Setup]:
    data_dir: Path = tmp_path_factory.mktemp("gw-llm") / "data"
    with (
        ScriptedLLM(default=decide("allow", "fine")) as provider,
        ScriptedLLM(default=decide("allow", "sure"), host="127.0.0.2") as attacker,
    ):
        spec = f"name=work,format=openai,base_url={provider.openai_url},api_key_env=WORK_KEY"
        gateway = GatewayProcess(
            data_dir,
            args=("--llm-provider", spec),
            env={"HOOKGATE_SSRF_ALLOWLIST": "127.0.0.0/8", **OPERATOR_SECRETS},
        ).start()
        try:
            yield Setup(gateway, provider, attacker, gateway.create_key("tenant-a", "admin"))
        finally:
            gateway.stop()


def keys_seen(llm: ScriptedLLM) -> list[str]:
    return [call.headers.get("Authorization", "") for call in llm.requests]


@pytest.mark.parametrize(
    "config",
    [
        {"api_key_env": "HOOKGATE_SECRET_KEY"},
        {"api_key_env": "OPENAI_API_KEY"},
        {},  # the default key variable for the model's provider
        {"provider": "openai"},
        {"provider": "work"},
    ],
    ids=["secret-key", "openai-key", "default-key", "public-provider", "operator-provider"],
)
def test_a_tenant_url_never_gets_an_operator_credential(
    setup: Setup, config: dict[str, Any]
) -> None:
    hook = setup.prompt_hook("exfil", model="gpt-4o-mini",
                             base_url=setup.attacker.openai_url, **config)
    with open_ws(setup.gateway.ws_url, setup.admin) as ws:
        error = fails(ws, "hooks.create", hook, "INVALID_REQUEST")
        assert "api_key" in error["message"], error
        error = fails(ws, "hooks.test", {"config": hook, "sampleEvent": TOOL["input"]},
                      "INVALID_REQUEST")
        assert "api_key" in error["message"], error
    with open_ws(setup.gateway.ws_url, setup.gateway.master_key) as ws:
        fails(ws, "hooks.test", {"config": hook, "sampleEvent": TOOL["input"]},
              "INVALID_REQUEST")
    assert all("operator" not in key for key in keys_seen(setup.attacker))


def test_a_hook_names_the_operators_provider_and_gets_its_key(setup: Setup) -> None:
    with open_ws(setup.gateway.ws_url, setup.admin) as ws:
        info = ok(ws, "connect", {})
        assert info["llmProviders"] == [{"name": "work", "format": "openai", "model": None}]
        hook_id = ok(ws, "hooks.create", setup.prompt_hook("named", provider="work"))["hookId"]
        outcome = ok(ws, "hooks.dispatch", TOOL)
        ok(ws, "hooks.delete", {"hookId": hook_id})
        # A provider the gateway does not have is refused when the hook is defined.
        error = fails(ws, "hooks.create", setup.prompt_hook("nowhere", provider="other"),
                      "INVALID_REQUEST")
        assert "no provider named 'other'" in error["message"]
    assert outcome["decision"] == "allow", outcome
    assert keys_seen(setup.provider)[-1] == "Bearer operator-work-key"
    assert setup.provider.requests[-1].json["model"] == "gpt-4o-mini"


def test_a_tenants_own_key_is_sealed_and_only_sent_to_its_provider(setup: Setup) -> None:
    with open_ws(setup.gateway.ws_url, setup.admin) as ws:
        hook_id = ok(ws, "hooks.create", setup.prompt_hook(
            "own key", provider="work", api_key="tenant-own-key"))["hookId"]
        assert ok(ws, "hooks.get", {"hookId": hook_id})["hook"]["config"]["api_key"] is None
        ok(ws, "hooks.dispatch", TOOL)
        assert keys_seen(setup.provider)[-1] == "Bearer tenant-own-key"
        # A partial config update keeps the sealed key.
        ok(ws, "hooks.update", {"hookId": hook_id, "updates": {"config": {
            "prompt_template": "Block rm.", "provider": "work"}}})
        ok(ws, "hooks.dispatch", TOOL)
        assert keys_seen(setup.provider)[-1] == "Bearer tenant-own-key"
        # Pointing the hook elsewhere does not take the stored key along.
        for api_key in ({"api_key": None}, {}):
            error = fails(ws, "hooks.update", {"hookId": hook_id, "updates": {"config": {
                "prompt_template": "Block rm.", "provider": "work",
                "base_url": setup.attacker.openai_url, **api_key}}}, "INVALID_REQUEST")
            assert "give it again" in error["message"], error
        # Its own URL with its own key, given again: allowed (both are the tenant's).
        ok(ws, "hooks.update", {"hookId": hook_id, "updates": {"config": {
            "prompt_template": "Block rm.", "provider": "work",
            "base_url": setup.attacker.openai_url, "api_key": "tenant-key-2"}}})
        ok(ws, "hooks.dispatch", TOOL)
        ok(ws, "hooks.delete", {"hookId": hook_id})
    assert keys_seen(setup.attacker) == ["Bearer tenant-key-2"]
    assert "operator-work-key" not in str(setup.attacker.requests)


def test_reviewer_agents_and_agent_gates_follow_the_same_rules(setup: Setup) -> None:
    reviewer = {"agent": "reviewer", "model": "gpt-4o-mini", "api_key_env": "OPENAI_API_KEY"}
    hooks = [
        {"event": "subagent_stop", "handler_type": "agent", "scope": "tenant",
         "name": "review", "config": {**reviewer, "base_url": setup.attacker.openai_url}},
        {"event": "subagent_stop", "handler_type": "quality_gate", "scope": "tenant",
         "name": "gate", "config": {"gates": [
             {"event": "delegation.completed", "type": "agent", **reviewer}]}},
    ]
    before = len(setup.attacker.requests)
    with open_ws(setup.gateway.ws_url, setup.admin) as ws:
        for hook in hooks:
            error = fails(ws, "hooks.create", hook, "INVALID_REQUEST")
            assert "api_key_env is not allowed" in error["message"], error
    assert len(setup.attacker.requests) == before
