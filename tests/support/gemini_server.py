"""A scripted Gemini API (``streamGenerateContent`` with SSE) on loopback, for driving the
real Gemini CLI offline (``GOOGLE_GEMINI_BASE_URL`` points here).

    with ScriptedGemini() as api:
        api.script(run_shell("touch X"), say("done"))
        ... run `gemini -p … --yolo` ...
        api.calls[1].tool_results()   # what the model saw after the tool call
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web
from tests.support.loopback_server import ScriptedModel

__all__ = ["GeminiCall", "ScriptedGemini", "run_shell", "say"]


@dataclass(slots=True)
class Reply:
    text: str = ""
    tool: str | None = None
    args: dict[str, Any] = field(default_factory=dict)


def say(text: str) -> Reply:
    return Reply(text=text)


def run_shell(command: str) -> Reply:
    """The model calls Gemini CLI's shell tool (``run_shell_command``)."""
    return Reply(tool="run_shell_command", args={"command": command})


@dataclass(slots=True)
class GeminiCall:
    path: str
    body: dict[str, Any]

    def tool_results(self) -> list[dict[str, Any]]:
        """The functionResponse parts the model is shown, oldest first."""
        found = []
        for content in self.body.get("contents") or []:
            for part in content.get("parts") or []:
                if isinstance(part, dict) and "functionResponse" in part:
                    found.append(part["functionResponse"])
        return found

    def text(self) -> str:
        return json.dumps(self.body)


class ScriptedGemini(ScriptedModel[Reply, GeminiCall]):
    def _ended(self) -> Reply:
        return say("(script ended)")

    def _routes(self, app: web.Application) -> None:
        app.router.add_post("/{version}/models/{model}", self._generate)
        app.router.add_route("*", "/{tail:.*}", self._anything)

    async def _anything(self, request: web.Request) -> web.Response:
        return web.json_response({})

    async def _generate(self, request: web.Request) -> web.StreamResponse:
        _, reply = self._answer(GeminiCall(request.path, await request.json()))
        part: dict[str, Any] = (
            {"functionCall": {"name": reply.tool, "args": reply.args}} if reply.tool
            else {"text": reply.text})
        chunk = {"candidates": [{"content": {"role": "model", "parts": [part]},
                                 "finishReason": "STOP", "index": 0}],
                 "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 5,
                                   "totalTokenCount": 15}}
        if ":streamGenerateContent" not in request.path:
            return web.json_response(chunk)
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        await response.write(f"data: {json.dumps(chunk)}\r\n\r\n".encode())
        await response.write_eof()
        return response
