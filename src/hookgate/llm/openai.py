"""OpenAI Chat Completions (``POST {base_url}/chat/completions``), and compatible servers."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar, Final

from hookgate.llm.base import ChatReply, ChatRequest, ProviderError, ToolCall, Usage
from hookgate.llm.wire import post_json
from hookgate.net.outbound import OutboundClient

__all__ = ["DEFAULT_BASE_URL", "OpenAIChat"]

#: Includes the version segment, like the official SDK's ``OPENAI_BASE_URL``.
DEFAULT_BASE_URL: Final = "https://api.openai.com/v1"


class OpenAIChat:
    name: ClassVar[str] = "openai"

    def __init__(
        self, client: OutboundClient, *, api_key: str, base_url: str = DEFAULT_BASE_URL
    ) -> None:
        self._client = client
        self._api_key = api_key
        self.base_url = base_url.rstrip("/")

    def request_body(self, request: ChatRequest) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": request.model,
            "messages": [
                {"role": "system", "content": request.system},
                {"role": "user", "content": request.user},
            ],
            "max_tokens": request.max_tokens,
            "temperature": request.temperature,
        }
        if request.tool is not None:
            body["tools"] = [
                {
                    "type": "function",
                    "function": {
                        "name": request.tool.name,
                        "description": request.tool.description,
                        "parameters": dict(request.tool.parameters),
                    },
                }
            ]
            body["tool_choice"] = {"type": "function", "function": {"name": request.tool.name}}
        return body

    async def complete(self, request: ChatRequest, *, timeout_s: float) -> ChatReply:
        data = await post_json(
            self._client,
            self.name,
            f"{self.base_url}/chat/completions",
            self.request_body(request),
            {"Authorization": f"Bearer {self._api_key}"},
            timeout_s=timeout_s,
            api_key=self._api_key,
        )
        return parse_reply(data, request.model)


def parse_reply(data: Mapping[str, Any], requested_model: str) -> ChatReply:
    choices = data.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        raise ProviderError("openai reply has no choices")
    message = choices[0].get("message")
    if not isinstance(message, dict):
        raise ProviderError("openai reply has no message")
    calls: list[ToolCall] = []
    for raw in message.get("tool_calls") or []:
        function = raw.get("function") if isinstance(raw, dict) else None
        if not isinstance(function, dict) or not isinstance(function.get("name"), str):
            raise ProviderError("openai reply has a tool call without a function name")
        arguments = function.get("arguments", "")
        calls.append(
            ToolCall(function["name"], arguments if isinstance(arguments, dict | str) else "")
        )
    content = message.get("content")
    return ChatReply(
        model=str(data.get("model") or requested_model),
        usage=_usage(data.get("usage")),
        text=content if isinstance(content, str) else "",
        tool_calls=tuple(calls),
    )


def _usage(usage: Any) -> Usage:
    # Budgets are charged with real usage: a reply without it cannot be accounted for.
    if not isinstance(usage, dict):
        raise ProviderError("openai reply has no token usage")
    prompt, completion = usage.get("prompt_tokens"), usage.get("completion_tokens")
    if not isinstance(prompt, int) or not isinstance(completion, int):
        raise ProviderError("openai reply has no token usage")
    return Usage(prompt, completion)
