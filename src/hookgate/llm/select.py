"""Which provider, model, endpoint and key a prompt or agent hook uses.

Each setting comes from the first place that has it:

1. the hook's config: ``provider``, ``model``, ``base_url``, ``api_key_env``;
2. the server settings: ``Settings.extra["llm.provider"]``, ``["llm.model"]``,
   ``["llm.base_url"]``, ``["llm.api_key_env"]``;
3. the environment: ``HOOKGATE_LLM_PROVIDER``, ``HOOKGATE_LLM_MODEL``,
   ``HOOKGATE_LLM_BASE_URL``, ``HOOKGATE_LLM_API_KEY_ENV``, then the providers' own
   ``OPENAI_BASE_URL`` / ``ANTHROPIC_BASE_URL``;
4. defaults: model ``haiku``, the provider's public endpoint, key from ``OPENAI_API_KEY`` or
   ``ANTHROPIC_API_KEY``.

The provider follows from the model when not given (aliases and model-id prefixes).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from hookgate.llm import anthropic, openai
from hookgate.llm.aliases import resolve_model
from hookgate.llm.base import ChatProvider
from hookgate.outbound import OutboundClient
from hookgate.settings import Settings

__all__ = ["DEFAULT_MODEL", "ProviderChoice", "choose_provider", "make_provider"]

DEFAULT_MODEL: Final = "haiku"
_KEY_ENV: Final = {"openai": "OPENAI_API_KEY", "anthropic": "ANTHROPIC_API_KEY"}
_BASE_ENV: Final = {"openai": "OPENAI_BASE_URL", "anthropic": "ANTHROPIC_BASE_URL"}
_BASE_DEFAULT: Final = {"openai": openai.DEFAULT_BASE_URL, "anthropic": anthropic.DEFAULT_BASE_URL}


@dataclass(frozen=True, slots=True)
class ProviderChoice:
    provider: str
    model: str
    base_url: str
    api_key_env: str


def _setting(
    key: str, config: Mapping[str, Any], settings: Settings, environ: Mapping[str, str]
) -> str | None:
    value = (
        config.get(key)
        or settings.extra.get(f"llm.{key}")
        or environ.get(f"HOOKGATE_LLM_{key.upper()}")
    )
    return str(value) if value else None


def choose_provider(
    config: Mapping[str, Any],
    settings: Settings,
    environ: Mapping[str, str] | None = None,
) -> ProviderChoice:
    """Resolve the hook's provider settings; raise ValueError naming what is wrong."""
    env = os.environ if environ is None else environ
    model = _setting("model", config, settings, env) or DEFAULT_MODEL
    resolved = resolve_model(model, _setting("provider", config, settings, env))
    base_url = (
        _setting("base_url", config, settings, env)
        or env.get(_BASE_ENV[resolved.provider])
        or _BASE_DEFAULT[resolved.provider]
    )
    key_env = _setting("api_key_env", config, settings, env) or _KEY_ENV[resolved.provider]
    return ProviderChoice(resolved.provider, resolved.model, base_url, key_env)


def make_provider(
    choice: ProviderChoice, client: OutboundClient, environ: Mapping[str, str] | None = None
) -> ChatProvider:
    """The provider client for ``choice``; raise ValueError when its API key is not set."""
    env = os.environ if environ is None else environ
    api_key = env.get(choice.api_key_env)
    if not api_key:
        raise ValueError(
            f"no API key for {choice.provider}: set the environment variable "
            f"{choice.api_key_env} (or name another one in config.api_key_env)"
        )
    if choice.provider == "openai":
        return openai.OpenAIChat(client, api_key=api_key, base_url=choice.base_url)
    return anthropic.AnthropicMessages(client, api_key=api_key, base_url=choice.base_url)
