"""The operator's provider list and the rules for tenants' model hooks (no network)."""

from __future__ import annotations

import pytest

from hookgate.llm.providers import (
    ProviderRegistry,
    ProviderSpec,
    credential_problems,
    open_api_key,
    parse_provider,
)
from hookgate.llm.select import choose_for_tenant, operator_registry
from hookgate.secrets.keyring import Keyring, generate_key_text
from hookgate.settings import Settings


def test_parse_provider_reads_every_field_and_names_mistakes() -> None:
    spec = parse_provider(
        "name=work, format=anthropic, base_url=https://llm.example/, api_key_env=K, model=haiku"
    )
    assert spec == ProviderSpec("work", "anthropic", "https://llm.example", "K", "haiku")
    with pytest.raises(ValueError, match="needs base_url"):
        parse_provider("name=a,format=openai")
    with pytest.raises(ValueError, match="openai or anthropic"):
        parse_provider("name=a,format=gemini,base_url=https://x")
    with pytest.raises(ValueError, match="is not one of"):
        parse_provider("name=a,format=openai,base_url=https://x,key=secret")
    with pytest.raises(ValueError, match="twice"):
        ProviderRegistry([spec, spec])


def test_without_configured_providers_the_public_ones_come_from_the_environment() -> None:
    env = {"OPENAI_BASE_URL": "https://proxy.example/v1"}
    registry = operator_registry([], Settings(), env)
    assert [s.name for s in registry] == ["anthropic", "openai"]
    openai = registry.find({"model": "gpt-4o"})
    assert openai.base_url == "https://proxy.example/v1"
    assert openai.api_key_env == "OPENAI_API_KEY"


def test_tenant_rules() -> None:
    registry = ProviderRegistry([ProviderSpec("work", "openai", "https://w.example/v1", "WK")])
    assert credential_problems({"provider": "work"}, registry) == []
    assert [f for f, _ in credential_problems({"api_key_env": "X"})] == ["config.api_key_env"]
    assert [f for f, _ in credential_problems({"base_url": "https://a.example"})] == [
        "config.base_url"
    ]
    assert credential_problems({"base_url": "https://a.example", "api_key": "mine"}) == []
    gates = {"gates": [{"type": "agent", "agent": "r", "api_key_env": "X"}]}
    assert [f for f, _ in credential_problems(gates)] == ["config.gates[0].api_key_env"]
    choice = choose_for_tenant({"provider": "work"}, registry, Settings(), environ={})
    assert (choice.base_url, choice.api_key_env, choice.model) == (
        "https://w.example/v1", "WK", "gpt-4o-mini"
    )
    own = choose_for_tenant(
        {"base_url": "https://mine.example", "api_key": "x"}, registry, Settings(),
        own_key="tenant-secret", environ={},
    )
    assert (own.base_url, own.api_key, own.api_key_env) == (
        "https://mine.example", "tenant-secret", ""
    )
    assert "tenant-secret" not in repr(own)
    with pytest.raises(ValueError, match="api_key_env is not allowed"):
        choose_for_tenant({"api_key_env": "HOME"}, registry, Settings(), environ={})
    with pytest.raises(ValueError, match="no anthropic provider"):
        choose_for_tenant({"model": "haiku"}, registry, Settings(), environ={})


def test_a_sealed_api_key_opens_only_for_its_hook() -> None:
    from hookgate.llm.providers import api_key_aad
    from hookgate.secrets.keyring import SecretError

    keyring = Keyring.from_text(generate_key_text())
    sealed = {"api_key": keyring.seal_text("sk-own", api_key_aad("hook-1"))}
    assert open_api_key(sealed, "hook-1", keyring) == "sk-own"
    with pytest.raises(SecretError):
        open_api_key(sealed, "hook-2", keyring)
    assert open_api_key({"api_key": "plain"}, "h", None) == "plain"
    assert open_api_key({}, "h", None) is None
