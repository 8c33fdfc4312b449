"""Anthropic Messages API (``POST {base_url}/v1/messages``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar, Final

from hookgate.llm.base import ChatReply, ChatRequest, ProviderError, ToolCall, Usage
from hookgate.llm.wire import post_json
from hookgate.net.outbound import OutboundClient

__all__ = ["API_VERSION", "DEFAULT_BASE_URL", "AnthropicMessages"]

#: Without the version segment, like the official SDK's ``ANTHROPIC_BASE_URL``.
DEFAULT_BASE_URL: Final = "https://api.anthropic.com"
API_VERSION: Final = "2023-06-01"


class AnthropicMessages:
    name: ClassVar[str] = "anthropic"

    def __init__(
        self, client: OutboundClient, *, api_key: str, base_url: str = DEFAULT_BASE_URL
    ) -> None:
        self._client = client
        self._api_key = api_key
        self.base_url = base_url.rstrip("/")

    def request_body(self, request: ChatRequest) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": request.model,
            "max_tokens": request.max_tokens,
            "temperature": request.temperature,
            "system": request.system,
            "messages": [{"role": "user", "content": request.user}],
        }
        if request.tool is not None:
            body["tools"] = [
                {
                    "name": request.tool.name,
                    "description": request.tool.description,
                    "input_schema": dict(request.tool.parameters),
                }
            ]
            body["tool_choice"] = {"type": "tool", "name": request.tool.name}
        return body

    async def complete(self, request: ChatRequest, *, timeout_s: float) -> ChatReply:
        data = await post_json(
            self._client,
            self.name,
            f"{self.base_url}/v1/messages",
            self.request_body(request),
            {"x-api-key": self._api_key, "anthropic-version": API_VERSION},
            timeout_s=timeout_s,
            api_key=self._api_key,
        )
        return parse_reply(data, request.model)


def parse_reply(data: Mapping[str, Any], requested_model: str) -> ChatReply:
    content = data.get("content")
    if not isinstance(content, list):
        raise ProviderError("anthropic reply has no content")
    texts: list[str] = []
    calls: list[ToolCall] = []
    for block in content:
        if not isinstance(block, dict):
            raise ProviderError("anthropic reply has a content block that is not an object")
        if block.get("type") == "text" and isinstance(block.get("text"), str):
            texts.append(block["text"])
        elif block.get("type") == "tool_use":
            name, arguments = block.get("name"), block.get("input")
            if not isinstance(name, str):
                raise ProviderError("anthropic reply has a tool_use block without a name")
            calls.append(ToolCall(name, arguments if isinstance(arguments, dict) else ""))
    usage = data.get("usage")
    if not isinstance(usage, dict):
        raise ProviderError("anthropic reply has no token usage")
    prompt, completion = usage.get("input_tokens"), usage.get("output_tokens")
    if not isinstance(prompt, int) or not isinstance(completion, int):
        raise ProviderError("anthropic reply has no token usage")
    return ChatReply(
        model=str(data.get("model") or requested_model),
        usage=Usage(prompt, completion),
        text="".join(texts),
        tool_calls=tuple(calls),
    )
