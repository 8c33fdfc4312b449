"""The one protocol every model provider implements, and the data it exchanges.

A provider turns a :class:`ChatRequest` (system text, one user message, at most one tool the
model is forced to call) into a :class:`ChatReply` (text, tool calls, real token usage). It
knows its wire protocol and nothing about hooks.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from hookgate.errors import HookgateError

__all__ = [
    "ChatProvider",
    "ChatReply",
    "ChatRequest",
    "ProviderError",
    "ToolCall",
    "ToolSpec",
    "Usage",
]


class ProviderError(HookgateError):
    """The provider could not be reached or answered with an error or an unusable body."""

    def __init__(self, message: str, *, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


@dataclass(frozen=True, slots=True)
class ToolSpec:
    name: str
    description: str
    #: JSON Schema of the arguments.
    parameters: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class ChatRequest:
    model: str
    system: str
    user: str
    #: When set, the model is forced to call this tool.
    tool: ToolSpec | None = None
    max_tokens: int = 512
    temperature: float = 0.0


@dataclass(frozen=True, slots=True)
class ToolCall:
    name: str
    #: A mapping when the provider sent structured input; the raw text when it sent a JSON
    #: string (OpenAI), which may not parse: the caller decides what a bad one means.
    arguments: Mapping[str, Any] | str


@dataclass(frozen=True, slots=True)
class Usage:
    input_tokens: int
    output_tokens: int

    @property
    def total(self) -> int:
        return self.input_tokens + self.output_tokens


@dataclass(frozen=True, slots=True)
class ChatReply:
    model: str
    usage: Usage
    text: str = ""
    tool_calls: tuple[ToolCall, ...] = field(default_factory=tuple)


class ChatProvider(Protocol):
    @property
    def name(self) -> str:
        """``"openai"`` or ``"anthropic"``; goes into the execution metadata."""
        ...

    async def complete(self, request: ChatRequest, *, timeout_s: float) -> ChatReply:
        """One model call. Raise :class:`ProviderError` for anything but a usable reply."""
        ...
