"""A scripted model server on loopback that speaks OpenAI Chat Completions and Anthropic
Messages, for prompt/agent hook tests and benchmarks. It runs on its own thread
(``LoopbackServer``), so sync code, async tests and subprocesses (``hookgate fire``) reach it.

    with ScriptedLLM(api_key="test-key") as llm:
        llm.script(decide("block", "rm -rf is destructive", usage=(120, 30)))
        ... point a hook at llm.openai_url or llm.anthropic_url ...
        assert llm.requests[0].protocol == "openai"

Turns are protocol-neutral: the same ``decide(...)`` renders as an OpenAI ``tool_calls`` entry
or an Anthropic ``tool_use`` block, depending on the endpoint called. When the script runs
out, ``default`` answers (by default a 500, so an unexpected call is loud).
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web
from tests.support.loopback_server import LoopbackServer

__all__ = ["Call", "ScriptedLLM", "Turn", "decide", "failure", "raw", "text", "tool_call"]


@dataclass(slots=True)
class Turn:
    text: str = ""
    tool: str | None = None
    #: A dict, or a string sent as-is (to play a model that emits bad JSON).
    arguments: dict[str, Any] | str | None = None
    usage: tuple[int, int] = (100, 20)
    status: int = 200
    error: str | None = None
    body: dict[str, Any] | None = None
    delay_s: float = 0.0


def decide(
    decision: str = "allow",
    reason: str = "looks fine",
    *,
    usage: tuple[int, int] = (100, 20),
    text: str = "",
    **fields: Any,
) -> Turn:
    """The model calls ``decide`` with these arguments."""
    return Turn(
        text=text,
        tool="decide",
        arguments={"decision": decision, "reason": reason, **fields},
        usage=usage,
    )


def tool_call(
    name: str, arguments: dict[str, Any] | str, usage: tuple[int, int] = (100, 20)
) -> Turn:
    return Turn(tool=name, arguments=arguments, usage=usage)


def text(content: str, usage: tuple[int, int] = (100, 20)) -> Turn:
    """Free text, no tool call."""
    return Turn(text=content, usage=usage)


def failure(status: int, message: str = "overloaded") -> Turn:
    return Turn(status=status, error=message)


def raw(body: dict[str, Any]) -> Turn:
    """Answer exactly this JSON body (for malformed replies)."""
    return Turn(body=body)


@dataclass(slots=True)
class Call:
    protocol: str
    path: str
    headers: dict[str, str]
    json: dict[str, Any]

    @property
    def system(self) -> str:
        if self.protocol == "anthropic":
            return str(self.json.get("system", ""))
        return "".join(m["content"] for m in self.json["messages"] if m["role"] == "system")

    @property
    def user(self) -> str:
        return "".join(m["content"] for m in self.json["messages"] if m["role"] == "user")

    @property
    def forced_tool(self) -> str | None:
        choice = self.json.get("tool_choice")
        if not isinstance(choice, dict):
            return None
        if self.protocol == "anthropic":
            return choice.get("name")
        return choice.get("function", {}).get("name")


@dataclass
class ScriptedLLM(LoopbackServer):
    api_key: str | None = None
    default: Turn = field(default_factory=lambda: failure(500, "script exhausted"))
    host: str = "127.0.0.1"
    requests: list[Call] = field(default_factory=list)
    respond: Callable[[Call], Turn] | None = None

    def __post_init__(self) -> None:
        self._init_server()
        self._script: list[Turn] = []
        self._lock = threading.Lock()

    # -- script ---------------------------------------------------------------------------

    def script(self, *turns: Turn) -> None:
        with self._lock:
            self._script.extend(turns)

    def _next(self, call: Call) -> Turn:
        if self.respond is not None:
            return self.respond(call)
        with self._lock:
            return self._script.pop(0) if self._script else self.default

    @property
    def openai_url(self) -> str:
        """An OpenAI-style base URL (with ``/v1``)."""
        return f"{self.base_url}/v1"

    @property
    def anthropic_url(self) -> str:
        """An Anthropic-style base URL (without ``/v1``)."""
        return self.base_url

    # -- protocol ---------------------------------------------------------------------------

    async def _openai(self, request: web.Request) -> web.Response:
        return await self._serve(request, "openai")

    async def _anthropic(self, request: web.Request) -> web.Response:
        return await self._serve(request, "anthropic")

    async def _serve(self, request: web.Request, protocol: str) -> web.Response:
        call = Call(protocol, request.path, dict(request.headers), await request.json())
        self.requests.append(call)
        if self.api_key is not None and _key(call) != self.api_key:
            return _error(protocol, 401, "invalid api key")
        turn = self._next(call)
        if turn.delay_s:
            await asyncio.sleep(turn.delay_s)
        if turn.error is not None:
            return _error(protocol, turn.status, turn.error)
        if turn.body is not None:
            return web.json_response(turn.body, status=turn.status)
        model = str(call.json.get("model", "unknown"))
        render = _render_openai if protocol == "openai" else _render_anthropic
        return web.json_response(render(turn, model), status=turn.status)

    # -- lifecycle --------------------------------------------------------------------------

    def _routes(self, app: web.Application) -> None:
        app.router.add_post("/v1/chat/completions", self._openai)
        app.router.add_post("/chat/completions", self._openai)
        app.router.add_post("/v1/messages", self._anthropic)


def _key(call: Call) -> str | None:
    if call.protocol == "anthropic":
        return call.headers.get("x-api-key")
    auth = call.headers.get("Authorization", "")
    return auth.removeprefix("Bearer ") if auth.startswith("Bearer ") else None


def _error(protocol: str, status: int, message: str) -> web.Response:
    if protocol == "anthropic":
        body = {"type": "error", "error": {"type": "api_error", "message": message}}
    else:
        body = {"error": {"message": message, "type": "server_error", "code": None}}
    return web.json_response(body, status=status)


def _render_openai(turn: Turn, model: str) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": turn.text or None}
    if turn.tool is not None:
        arguments = (
            turn.arguments if isinstance(turn.arguments, str) else json.dumps(turn.arguments)
        )
        message["tool_calls"] = [
            {
                "id": "call_1",
                "type": "function",
                "function": {"name": turn.tool, "arguments": arguments},
            }
        ]
    prompt, completion = turn.usage
    return {
        "id": "chatcmpl-scripted",
        "object": "chat.completion",
        "model": model,
        "choices": [
            {"index": 0, "message": message, "finish_reason": "tool_calls" if turn.tool else "stop"}
        ],
        "usage": {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
        },
    }


def _render_anthropic(turn: Turn, model: str) -> dict[str, Any]:
    content: list[dict[str, Any]] = []
    if turn.text:
        content.append({"type": "text", "text": turn.text})
    if turn.tool is not None:
        content.append(
            {"type": "tool_use", "id": "toolu_1", "name": turn.tool, "input": turn.arguments}
        )
    prompt, completion = turn.usage
    return {
        "id": "msg_scripted",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": "tool_use" if turn.tool else "end_turn",
        "usage": {"input_tokens": prompt, "output_tokens": completion},
    }
