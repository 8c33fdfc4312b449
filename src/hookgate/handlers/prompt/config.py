"""The config models of the ``prompt`` and ``agent`` handler types (see
:mod:`hookgate.handlers.prompt.handler` and :mod:`hookgate.handlers.prompt.agent`)."""

from __future__ import annotations

import re
from typing import ClassVar, Final

from pydantic import Field, field_validator, model_validator

from hookgate.handlers.config_model import HandlerConfig, problem
from hookgate.handlers.prompt.handler import DEFAULT_CAP, MAX_TOKENS
from hookgate.llm.aliases import PROVIDERS, resolve_model
from hookgate.net.ssrf import SsrfGuard, SsrfRefused

__all__ = ["AgentConfig", "ModelChoice", "PromptConfig"]

#: A gateway operator's provider name.
_PROVIDER_NAME: Final = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
_NON_EMPTY: Final = ("model", "provider", "base_url", "api_key_env", "api_key")


class ModelChoice(HandlerConfig):
    """Which model a prompt or agent hook calls, and with whose key."""

    messages: ClassVar = {key: f"{key} must be a non-empty string" for key in _NON_EMPTY}

    model: str | None = Field(
        None,
        min_length=1,
        description="An alias (haiku, sonnet, gpt-4o-mini) or a provider model name; the "
        "provider follows from it.",
    )
    provider: str | None = Field(
        None,
        min_length=1,
        description="openai, anthropic, or the name of a provider the gateway's operator "
        "configured.",
    )
    base_url: str | None = Field(
        None, min_length=1, description="The provider's URL, SSRF-checked like every URL."
    )
    api_key_env: str | None = Field(
        None, min_length=1, description="The environment variable that holds the API key."
    )
    api_key: str | None = Field(
        None, min_length=1, description="The hook's own API key (sealed at rest)."
    )

    @field_validator("provider")
    @classmethod
    def _provider_name(cls, provider: str | None) -> str | None:
        # Other names are a gateway operator's providers, checked against its list.
        if provider and provider not in PROVIDERS and not _PROVIDER_NAME.fullmatch(provider):
            raise problem(
                f"provider {provider!r} must be openai, anthropic or the name of a configured "
                "provider (letters, digits, '.', '_', '-')"
            )
        return provider

    @field_validator("base_url")
    @classmethod
    def _vetted_url(cls, base_url: str | None) -> str | None:
        if base_url:
            try:
                SsrfGuard().check_url(base_url)
            except SsrfRefused as exc:
                raise problem(f"base_url: {exc}") from None
        return base_url

    @model_validator(mode="after")
    def _model_served(self) -> ModelChoice:
        wire = self.provider if self.provider in PROVIDERS else None
        if self.model and (wire is not None or self.provider is None):
            try:
                resolve_model(self.model, wire)
            except ValueError as exc:
                raise problem(str(exc)) from None
        return self


class PromptConfig(ModelChoice):
    """A model judges the event against the hook author's policy and calls ``decide``."""

    messages: ClassVar = {
        **ModelChoice.messages,
        "prompt_template": "prompt hooks need config.prompt_template (the evaluation policy)",
        "max_invocations_per_turn": "max_invocations_per_turn must be a positive integer",
        "max_tokens": "max_tokens must be an integer between 16 and 4096",
    }

    prompt_template: str = Field(
        pattern=r"\S",
        description="The evaluator's policy. Only the event data the hook judges reaches "
        "the model, marked as untrusted.",
    )
    max_invocations_per_turn: int = Field(
        DEFAULT_CAP, ge=1, description="Model calls per turn for this hook."
    )
    max_tokens: int = Field(MAX_TOKENS, ge=16, le=4096, description="The answer's token cap.")


class AgentConfig(ModelChoice):
    """A reviewer agent judges delegated work: APPROVED, or REJECTED: <feedback>."""

    messages: ClassVar = {
        **ModelChoice.messages,
        "agent": "agent must be a string",
        "prompt": "prompt must be a string",
    }

    agent: str | None = Field(
        None, description="The reviewer's agent id (its defaults come from the gateway)."
    )
    prompt: str | None = Field(
        None, description="The reviewer's instructions (a default reviewer prompt otherwise)."
    )
    max_tokens: int | None = Field(None, description="The answer's token cap (1024 default).")
