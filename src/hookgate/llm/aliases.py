"""Model aliases (``haiku``, ``sonnet``, ``gpt-4o-mini``, …) and which provider serves a model."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

__all__ = ["ALIASES", "PROVIDERS", "ResolvedModel", "resolve_model"]

PROVIDERS: Final = ("openai", "anthropic")

#: Short names hook authors write, and the model they mean.
ALIASES: Final[dict[str, tuple[str, str]]] = {
    "haiku": ("anthropic", "claude-haiku-4-5"),
    "sonnet": ("anthropic", "claude-sonnet-4-5"),
    "opus": ("anthropic", "claude-opus-4-1"),
    "gpt-4o-mini": ("openai", "gpt-4o-mini"),
    "gpt-4o": ("openai", "gpt-4o"),
    "gpt-4.1-mini": ("openai", "gpt-4.1-mini"),
    "gpt-4.1": ("openai", "gpt-4.1"),
    "o4-mini": ("openai", "o4-mini"),
}
# Full model ids name their provider by prefix.
_PREFIXES: Final = (
    ("claude", "anthropic"),
    ("gpt-", "openai"),
    ("chatgpt-", "openai"),
    ("o1", "openai"),
    ("o3", "openai"),
    ("o4", "openai"),
)


@dataclass(frozen=True, slots=True)
class ResolvedModel:
    provider: str
    model: str


def resolve_model(model: str, provider: str | None = None) -> ResolvedModel:
    """The provider and model id for ``model``; raise ValueError saying what to set."""
    if provider is not None and provider not in PROVIDERS:
        raise ValueError(f"unknown provider {provider!r}; expected one of {', '.join(PROVIDERS)}")
    alias = ALIASES.get(model.lower())
    if alias is not None:
        if provider is not None and provider != alias[0]:
            raise ValueError(
                f"model alias {model!r} is served by {alias[0]}, but provider is {provider!r}"
            )
        return ResolvedModel(*alias)
    if provider is not None:
        return ResolvedModel(provider, model)
    for prefix, owner in _PREFIXES:
        if model.lower().startswith(prefix):
            return ResolvedModel(owner, model)
    raise ValueError(
        f"cannot tell which provider serves model {model!r}; set provider "
        f"({' or '.join(PROVIDERS)}) or use an alias ({', '.join(sorted(ALIASES))})"
    )
