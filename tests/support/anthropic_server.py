"""A scripted Anthropic Messages API on loopback, streaming like the real one (SSE), for
driving the real Claude Code CLI offline (``ANTHROPIC_BASE_URL`` points here).

    with ScriptedAnthropic() as api:
        api.script(use_tool("Bash", {"command": "ls"}), say("done"))
        ... run `claude -p` with ANTHROPIC_BASE_URL=api.url ...
        api.agent_calls[1].tool_results()   # what the model saw after the tool call

Claude Code sends two kinds of requests: the agent's own turns (with its tools) and small
side requests (titles, summaries; no tools). Agent turns take the next scripted reply; side
requests get a short text. When the script runs out an agent turn gets "(script ended)".
A sub-agent's turns, which run beside the main agent's, can be answered from ``by_task``
(keyed by the sub-agent's task, its first user message) so the main script's order does not
depend on who asks first.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web
from tests.support.loopback_server import LoopbackServer

__all__ = ["Call", "Reply", "ScriptedAnthropic", "say", "use_tool"]


@dataclass(slots=True)
class Reply:
    text: str = ""
    tool: str | None = None
    tool_input: dict[str, Any] = field(default_factory=dict)


def say(text: str) -> Reply:
    return Reply(text=text)


def use_tool(name: str, tool_input: dict[str, Any], text: str = "") -> Reply:
    return Reply(text=text, tool=name, tool_input=tool_input)


@dataclass(slots=True)
class Call:
    path: str
    headers: dict[str, str]
    body: dict[str, Any]

    @property
    def is_agent_turn(self) -> bool:
        return bool(self.body.get("tools"))

    @property
    def messages(self) -> list[dict[str, Any]]:
        return list(self.body.get("messages") or [])

    def blocks(self, kind: str) -> list[dict[str, Any]]:
        """Content blocks of ``kind`` in the user messages, oldest first."""
        found = []
        for message in self.messages:
            content = message.get("content")
            if message.get("role") == "user" and isinstance(content, list):
                found += [b for b in content if isinstance(b, dict) and b.get("type") == kind]
        return found

    def tool_results(self) -> list[dict[str, Any]]:
        return self.blocks("tool_result")

    def text(self) -> str:
        """Everything the model is shown (system prompt and messages), as one string."""
        return json.dumps({"system": self.body.get("system"), "messages": self.messages})


class ScriptedAnthropic(LoopbackServer):
    max_body = 64 * 1024 * 1024

    def __init__(
        self, *replies: Reply, by_task: dict[str, Reply] | None = None, host: str = "127.0.0.1"
    ) -> None:
        self.host = host
        self._init_server()
        self.by_task = by_task or {}
        self.calls: list[Call] = []
        self._script: list[Reply] = list(replies)
        self._lock = threading.Lock()
        self._ids = 0

    @property
    def url(self) -> str:
        return self.base_url

    def script(self, *replies: Reply) -> None:
        with self._lock:
            self._script.extend(replies)

    @property
    def agent_calls(self) -> list[Call]:
        return [call for call in self.calls if call.is_agent_turn]

    # -- protocol ---------------------------------------------------------------------------

    def _next(self, call: Call) -> Reply:
        if not call.is_agent_turn:
            return say("ok")
        task = _first_user_text(call.body)
        if task in self.by_task:
            return self.by_task[task]
        with self._lock:
            return self._script.pop(0) if self._script else say("(script ended)")

    async def _messages(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        call = Call(request.path, dict(request.headers), body)
        with self._lock:
            self.calls.append(call)
            self._ids += 1
            number = self._ids
        reply = self._next(call)
        model = str(body.get("model", "claude"))
        blocks = _content(reply, number)
        stop = "tool_use" if reply.tool else "end_turn"
        if not body.get("stream"):
            return web.json_response({
                "id": f"msg_{number}", "type": "message", "role": "assistant", "model": model,
                "content": blocks, "stop_reason": stop, "stop_sequence": None,
                "usage": {"input_tokens": 10, "output_tokens": 5},
            })
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream",
                                               "Cache-Control": "no-cache"})
        await response.prepare(request)
        for name, data in _events(blocks, model, number, stop):
            await response.write(f"event: {name}\ndata: {json.dumps(data)}\n\n".encode())
        await response.write_eof()
        return response

    async def _count_tokens(self, request: web.Request) -> web.Response:
        return web.json_response({"input_tokens": 10})

    async def _anything(self, request: web.Request) -> web.Response:
        # Any other endpoint (none should be needed with non-essential traffic off).
        body = await request.read()
        self.calls.append(Call(request.path, dict(request.headers), {"raw": body.decode(
            "utf-8", "replace")}))
        return web.json_response({}, status=404)

    # -- lifecycle --------------------------------------------------------------------------

    def _routes(self, app: web.Application) -> None:
        app.router.add_post("/v1/messages", self._messages)
        app.router.add_post("/v1/messages/count_tokens", self._count_tokens)
        app.router.add_route("*", "/{tail:.*}", self._anything)


def _content(reply: Reply, number: int) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    if reply.text:
        blocks.append({"type": "text", "text": reply.text})
    if reply.tool:
        blocks.append({"type": "tool_use", "id": f"toolu_{number:04d}", "name": reply.tool,
                       "input": reply.tool_input})
    return blocks


def _events(
    blocks: list[dict[str, Any]], model: str, number: int, stop: str
) -> list[tuple[str, dict[str, Any]]]:
    """The SSE events of a streamed message, the way the Messages API sends them."""
    events: list[tuple[str, dict[str, Any]]] = [("message_start", {
        "type": "message_start",
        "message": {"id": f"msg_{number}", "type": "message", "role": "assistant",
                    "model": model, "content": [], "stop_reason": None,
                    "stop_sequence": None, "usage": {"input_tokens": 10, "output_tokens": 1}},
    })]
    for index, block in enumerate(blocks):
        if block["type"] == "text":
            start = {"type": "text", "text": ""}
            delta = {"type": "text_delta", "text": block["text"]}
        else:
            start = {"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}
            delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
        events += [
            ("content_block_start",
             {"type": "content_block_start", "index": index, "content_block": start}),
            ("content_block_delta", {"type": "content_block_delta", "index": index,
                                     "delta": delta}),
            ("content_block_stop", {"type": "content_block_stop", "index": index}),
        ]
    events += [
        ("message_delta", {"type": "message_delta",
                           "delta": {"stop_reason": stop, "stop_sequence": None},
                           "usage": {"output_tokens": 5}}),
        ("message_stop", {"type": "message_stop"}),
    ]
    return events


def _first_user_text(body: dict[str, Any]) -> str | None:
    """A conversation's task: its first user message (for a sub-agent, the task it was given)."""
    for message in body.get("messages") or []:
        if message.get("role") != "user":
            continue
        content = message.get("content")
        if isinstance(content, str):
            return content
        texts = [b.get("text", "") for b in content or [] if b.get("type") == "text"]
        # Claude Code prepends reminders as separate text blocks: the task is the last one.
        return texts[-1] if texts else None
    return None
