"""A scripted Anthropic Messages API on loopback that streams (SSE) like the real one, so the
Claude Code CLI bundled with the Claude Agent SDK runs offline (``ANTHROPIC_BASE_URL``).

Requests that offer tools are the agent's turns and take the next scripted reply; the CLI's
side requests (titles and the like, no tools) get a short text. A sub-agent's turns, which run
beside the main agent's, are answered from ``by_task`` (keyed by the sub-agent's task, its
first user message) so the main script's order does not depend on who asks first.
"""

from __future__ import annotations

import asyncio
import json
import threading
from dataclasses import dataclass
from typing import Any

from aiohttp import web

__all__ = ["AnthropicScript", "Reply"]


@dataclass(slots=True)
class Reply:
    text: str = ""
    tool: str | None = None
    tool_input: dict[str, Any] | None = None


class AnthropicScript:
    def __init__(self, *replies: Reply, by_task: dict[str, Reply] | None = None) -> None:
        self.replies = list(replies)
        self.by_task = by_task or {}
        self.requests: list[dict[str, Any]] = []
        self.port = 0
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._runner: web.AppRunner | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def agent_turns(self) -> list[dict[str, Any]]:
        return [body for body in self.requests if body.get("tools")]

    def tool_results(self, turn: int) -> list[dict[str, Any]]:
        """The tool_result blocks the model was shown in agent turn ``turn``."""
        found = []
        for message in self.agent_turns[turn].get("messages", []):
            content = message.get("content")
            if message.get("role") == "user" and isinstance(content, list):
                found += [b for b in content if b.get("type") == "tool_result"]
        return found

    def shown(self, turn: int) -> str:
        """All the model was shown in agent turn ``turn``, as one string."""
        body = self.agent_turns[turn]
        return json.dumps({"system": body.get("system"), "messages": body.get("messages")})

    async def _messages(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        self.requests.append(body)
        task = _first_user_text(body)
        if body.get("tools") and task in self.by_task:
            reply = self.by_task[task]
        elif body.get("tools"):
            reply = self.replies.pop(0) if self.replies else Reply(text="(script ended)")
        else:
            reply = Reply(text="ok")
        number = len(self.requests)
        blocks: list[dict[str, Any]] = []
        if reply.text:
            blocks.append({"type": "text", "text": reply.text})
        if reply.tool:
            blocks.append(
                {
                    "type": "tool_use",
                    "id": f"toolu_{number:04d}",
                    "name": reply.tool,
                    "input": reply.tool_input or {},
                }
            )
        stop = "tool_use" if reply.tool else "end_turn"
        model = str(body.get("model", "claude"))
        message = {
            "id": f"msg_{number}",
            "type": "message",
            "role": "assistant",
            "model": model,
            "stop_sequence": None,
            "usage": {"input_tokens": 10, "output_tokens": 5},
        }
        if not body.get("stream"):
            return web.json_response({**message, "content": blocks, "stop_reason": stop})
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)

        async def send(name: str, data: dict[str, Any]) -> None:
            await response.write(f"event: {name}\ndata: {json.dumps(data)}\n\n".encode())

        await send(
            "message_start",
            {"type": "message_start", "message": {**message, "content": [], "stop_reason": None}},
        )
        for index, block in enumerate(blocks):
            if block["type"] == "text":
                start: dict[str, Any] = {"type": "text", "text": ""}
                delta = {"type": "text_delta", "text": block["text"]}
            else:
                start = {**block, "input": {}}
                delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
            await send(
                "content_block_start",
                {"type": "content_block_start", "index": index, "content_block": start},
            )
            await send(
                "content_block_delta",
                {"type": "content_block_delta", "index": index, "delta": delta},
            )
            await send("content_block_stop", {"type": "content_block_stop", "index": index})
        await send(
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": stop, "stop_sequence": None},
                "usage": {"output_tokens": 5},
            },
        )
        await send("message_stop", {"type": "message_stop"})
        await response.write_eof()
        return response

    async def _count_tokens(self, request: web.Request) -> web.Response:
        return web.json_response({"input_tokens": 10})

    async def _other(self, request: web.Request) -> web.Response:
        return web.json_response({}, status=404)

    async def _start(self) -> None:
        app = web.Application(client_max_size=64 << 20)
        app.router.add_post("/v1/messages", self._messages)
        app.router.add_post("/v1/messages/count_tokens", self._count_tokens)
        app.router.add_route("*", "/{tail:.*}", self._other)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        server = site._server
        assert server is not None
        self.port = server.sockets[0].getsockname()[1]  # type: ignore[union-attr]

    def __enter__(self) -> AnthropicScript:
        self._thread.start()
        asyncio.run_coroutine_threadsafe(self._start(), self._loop).result(10)
        return self

    def __exit__(self, *exc: object) -> None:
        if self._runner is not None:
            asyncio.run_coroutine_threadsafe(self._runner.cleanup(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(5)


def _first_user_text(body: dict[str, Any]) -> str | None:
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
