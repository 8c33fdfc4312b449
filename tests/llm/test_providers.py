"""Provider clients, aliases and provider selection, against the scripted model server."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import pytest
from tests.support.llm_server import ScriptedLLM, decide, failure, raw, text

from hookgate.llm import (
    ChatRequest,
    ProviderError,
    ToolSpec,
    choose_provider,
    make_provider,
    resolve_model,
)
from hookgate.llm.anthropic import AnthropicMessages
from hookgate.llm.openai import OpenAIChat
from hookgate.net.outbound import OutboundClient
from hookgate.net.ssrf import Allowlist, SsrfGuard, SsrfRefused
from hookgate.settings import Settings

TOOL = ToolSpec("decide", "verdict", {"type": "object", "properties": {}})


@pytest.fixture
def llm() -> Iterator[ScriptedLLM]:
    with ScriptedLLM(api_key="k-1") as server:
        yield server


@pytest.fixture
async def client() -> AsyncIterator[OutboundClient]:
    client = OutboundClient(SsrfGuard(Allowlist.parse(["127.0.0.1/32"])))
    yield client
    await client.aclose()


async def test_openai_round_trip(llm: ScriptedLLM, client: OutboundClient) -> None:
    llm.script(decide("block", "no", usage=(11, 4), text="thinking"))
    provider = OpenAIChat(client, api_key="k-1", base_url=llm.openai_url + "/")
    reply = await provider.complete(ChatRequest("gpt-4o-mini", "sys", "usr", TOOL), timeout_s=5)
    assert reply.tool_calls[0].name == "decide"
    assert reply.tool_calls[0].arguments == '{"decision": "block", "reason": "no"}'
    assert (reply.usage.total, reply.text, reply.model) == (15, "thinking", "gpt-4o-mini")
    sent = llm.requests[0]
    assert sent.path == "/v1/chat/completions"
    assert sent.headers["Authorization"] == "Bearer k-1"
    assert sent.json["messages"] == [
        {"role": "system", "content": "sys"},
        {"role": "user", "content": "usr"},
    ]
    assert sent.json["tools"][0]["function"]["name"] == "decide"


async def test_anthropic_round_trip(llm: ScriptedLLM, client: OutboundClient) -> None:
    llm.script(decide("allow", "ok", usage=(30, 9), text="Let me check."))
    provider = AnthropicMessages(client, api_key="k-1", base_url=llm.anthropic_url)
    reply = await provider.complete(ChatRequest("claude-x", "sys", "usr", TOOL), timeout_s=5)
    assert reply.tool_calls[0].arguments == {"decision": "allow", "reason": "ok"}
    assert (reply.usage.input_tokens, reply.usage.output_tokens) == (30, 9)
    assert reply.text == "Let me check."
    sent = llm.requests[0]
    assert sent.path == "/v1/messages" and sent.headers["x-api-key"] == "k-1"
    assert sent.json["system"] == "sys" and sent.json["tool_choice"] == {
        "type": "tool",
        "name": "decide",
    }
    assert sent.json["tools"][0]["input_schema"] == {"type": "object", "properties": {}}


async def test_plain_text_request_sends_no_tools(llm: ScriptedLLM, client: OutboundClient) -> None:
    llm.script(text("APPROVED"))
    provider = AnthropicMessages(client, api_key="k-1", base_url=llm.anthropic_url)
    reply = await provider.complete(ChatRequest("claude-x", "s", "u"), timeout_s=5)
    assert reply.text == "APPROVED" and reply.tool_calls == ()
    assert "tools" not in llm.requests[0].json


@pytest.mark.parametrize(
    ("turn", "message"),
    [
        (failure(503, "try later"), "anthropic answered 503: try later"),
        (raw({"content": "nope", "usage": {}}), "no content"),
        (raw({"content": [], "usage": {"input_tokens": 1}}), "no token usage"),
        (
            raw(
                {
                    "content": [{"type": "tool_use", "input": {}}],
                    "usage": {"input_tokens": 1, "output_tokens": 1},
                }
            ),
            "without a name",
        ),
    ],
)
async def test_anthropic_errors(
    llm: ScriptedLLM, client: OutboundClient, turn: object, message: str
) -> None:
    llm.script(turn)  # type: ignore[arg-type]
    provider = AnthropicMessages(client, api_key="k-1", base_url=llm.anthropic_url)
    with pytest.raises(ProviderError, match=message):
        await provider.complete(ChatRequest("claude-x", "s", "u"), timeout_s=5)


async def test_unreachable_provider_is_a_provider_error(client: OutboundClient) -> None:
    provider = OpenAIChat(client, api_key="k-1", base_url="http://127.0.0.1:9/v1")
    with pytest.raises(ProviderError, match="openai: ClientConnectorError"):
        await provider.complete(ChatRequest("gpt-4o", "s", "u"), timeout_s=2)


async def test_guard_refusal_passes_through_unchanged(llm: ScriptedLLM) -> None:
    unguarded_loopback = OutboundClient(SsrfGuard())
    provider = OpenAIChat(unguarded_loopback, api_key="k-1", base_url=llm.openai_url)
    with pytest.raises(SsrfRefused, match="loopback"):
        await provider.complete(ChatRequest("gpt-4o", "s", "u"), timeout_s=2)
    await unguarded_loopback.aclose()
    assert llm.requests == []


@pytest.mark.parametrize(
    ("model", "provider", "expected"),
    [
        ("haiku", None, ("anthropic", "claude-haiku-4-5")),
        ("Sonnet", None, ("anthropic", "claude-sonnet-4-5")),
        ("gpt-4o-mini", None, ("openai", "gpt-4o-mini")),
        ("claude-3-7-sonnet-latest", None, ("anthropic", "claude-3-7-sonnet-latest")),
        ("o3-mini", None, ("openai", "o3-mini")),
        ("llama-3.1-8b", "openai", ("openai", "llama-3.1-8b")),
    ],
)
def test_aliases_and_prefixes(model: str, provider: str | None, expected: tuple[str, str]) -> None:
    resolved = resolve_model(model, provider)
    assert (resolved.provider, resolved.model) == expected


def test_selection_precedence() -> None:
    settings = Settings(extra={"llm.model": "gpt-4o", "llm.base_url": "https://llm.corp/v1"})
    env = {"HOOKGATE_LLM_MODEL": "haiku", "OPENAI_BASE_URL": "https://env.example/v1"}
    from_settings = choose_provider({}, settings, env)
    assert (from_settings.provider, from_settings.model) == ("openai", "gpt-4o")
    assert from_settings.base_url == "https://llm.corp/v1"
    assert from_settings.api_key_env == "OPENAI_API_KEY"
    from_hook = choose_provider({"model": "sonnet", "api_key_env": "K"}, Settings(), env)
    assert (from_hook.provider, from_hook.base_url, from_hook.api_key_env) == (
        "anthropic",
        "https://api.anthropic.com",
        "K",
    )
    from_env = choose_provider({}, Settings(), env)
    assert from_env.model == "claude-haiku-4-5"
    default = choose_provider({}, Settings(), {})
    assert (default.provider, default.model) == ("anthropic", "claude-haiku-4-5")


def test_missing_key_names_the_variable(client: OutboundClient) -> None:
    choice = choose_provider({"model": "gpt-4o"}, Settings(), {})
    with pytest.raises(ValueError, match="set the environment variable OPENAI_API_KEY"):
        make_provider(choice, client, {})
    assert isinstance(make_provider(choice, client, {"OPENAI_API_KEY": "x"}), OpenAIChat)
