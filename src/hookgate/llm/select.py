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

That is the library's rule: the hooks are the user's own code. On a gateway, hooks come
from tenants, and :func:`choose_for_tenant` applies the operator's
:class:`~hookgate.llm.providers.ProviderRegistry` instead (see :mod:`hookgate.llm.providers`).
A hook's own ``api_key`` is used in both cases, and only with that hook's provider.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from hookgate.llm import anthropic, openai
from hookgate.llm.aliases import resolve_model
from hookgate.llm.base import ChatProvider
from hookgate.llm.providers import (
    ProviderRegistry,
    ProviderSpec,
    credential_problems,
)
from hookgate.net.outbound import OutboundClient
from hookgate.settings import Settings

__all__ = [
    "DEFAULT_MODEL",
    "ProviderChoice",
    "choose_for_tenant",
    "choose_provider",
    "make_provider",
    "operator_registry",
]

DEFAULT_MODEL: Final = "haiku"
_FORMAT_MODEL: Final = {"anthropic": "haiku", "openai": "gpt-4o-mini"}
_KEY_ENV: Final = {"openai": "OPENAI_API_KEY", "anthropic": "ANTHROPIC_API_KEY"}
_BASE_ENV: Final = {"openai": "OPENAI_BASE_URL", "anthropic": "ANTHROPIC_BASE_URL"}
_BASE_DEFAULT: Final = {"openai": openai.DEFAULT_BASE_URL, "anthropic": anthropic.DEFAULT_BASE_URL}


@dataclass(frozen=True, slots=True)
class ProviderChoice:
    provider: str
    model: str
    base_url: str
    api_key_env: str
    #: The hook's own key (it brought one); else the key is read from ``api_key_env``.
    api_key: str | None = field(default=None, repr=False)
    #: The operator's provider name, on a gateway.
    name: str = ""


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
    api_key = choice.api_key or env.get(choice.api_key_env)
    if not api_key and not choice.api_key_env:
        raise ValueError(
            f"provider {choice.name or choice.provider!r} has no API key configured "
            "(api_key_env); give the hook its own api_key"
        )
    if not api_key:
        raise ValueError(
            f"no API key for {choice.provider}: set the environment variable "
            f"{choice.api_key_env} (or name another one in config.api_key_env)"
        )
    if choice.provider == "openai":
        return openai.OpenAIChat(client, api_key=api_key, base_url=choice.base_url)
    return anthropic.AnthropicMessages(client, api_key=api_key, base_url=choice.base_url)


def operator_registry(
    specs: list[ProviderSpec],
    settings: Settings,
    environ: Mapping[str, str] | None = None,
) -> ProviderRegistry:
    """The gateway's providers: those the operator configured, else the two public ones set
    up from the operator's environment like the library's defaults (the default first)."""
    if specs:
        return ProviderRegistry(specs)
    env = os.environ if environ is None else environ
    default = choose_provider({}, settings, env).provider
    implicit = []
    for wire in sorted(_KEY_ENV, key=lambda name: name != default):
        base_url = (
            _setting("base_url", {}, settings, env)
            or env.get(_BASE_ENV[wire])
            or _BASE_DEFAULT[wire]
        )
        key_env = _setting("api_key_env", {}, settings, env) or _KEY_ENV[wire]
        implicit.append(ProviderSpec(wire, wire, base_url.rstrip("/"), key_env))
    return ProviderRegistry(implicit)


def choose_for_tenant(
    config: Mapping[str, Any],
    registry: ProviderRegistry,
    settings: Settings,
    *,
    own_key: str | None = None,
    environ: Mapping[str, str] | None = None,
) -> ProviderChoice:
    """A tenant hook's provider: one of the operator's, with the operator's key or the
    hook's own (``own_key``, already opened). Raise ValueError naming what is refused."""
    env = os.environ if environ is None else environ
    refused = credential_problems(config)
    if refused:
        raise ValueError(refused[0][1])
    spec = registry.find(config)
    model = config.get("model") or spec.model
    if not model:
        # The operator's default model, when this provider serves it.
        model = _setting("model", {}, settings, env) or _FORMAT_MODEL[spec.format]
        try:
            resolve_model(str(model), spec.format)
        except ValueError:
            model = _FORMAT_MODEL[spec.format]
    resolved = resolve_model(str(model), spec.format)
    base_url = str(config.get("base_url") or spec.base_url) if own_key else spec.base_url
    return ProviderChoice(
        resolved.provider,
        resolved.model,
        base_url,
        "" if own_key else (spec.api_key_env or ""),
        own_key,
        spec.name,
    )
