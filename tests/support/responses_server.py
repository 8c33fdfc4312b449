"""A scripted OpenAI Responses API on loopback, streaming like the real one (SSE), for
driving the real Codex CLI offline (its ``[model_providers.X] base_url`` points here).

    with ScriptedResponses() as api:
        api.script(run_shell("touch X"), say("done"))
        ... run `codex exec` with a provider whose base_url is api.url ...
        api.calls[1].tool_outputs()   # what the model saw after the tool call

Each request takes the next scripted reply; when the script runs out it gets "(script ended)".
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from aiohttp import web
from tests.support.loopback_server import ScriptedModel

__all__ = ["ResponsesCall", "ScriptedResponses", "run_shell", "say"]


@dataclass(slots=True)
class Reply:
    text: str = ""
    command: str | None = None


def say(text: str) -> Reply:
    return Reply(text=text)


def run_shell(command: str) -> Reply:
    """The model calls Codex's shell tool (``exec_command``) with ``command``."""
    return Reply(command=command)


@dataclass(slots=True)
class ResponsesCall:
    body: dict[str, Any]

    def items(self, kind: str) -> list[dict[str, Any]]:
        return [item for item in self.body.get("input") or []
                if isinstance(item, dict) and item.get("type") == kind]

    def tool_outputs(self) -> list[str]:
        """The outputs of the tool calls the model is shown, oldest first."""
        return [str(item.get("output")) for item in self.items("function_call_output")]

    def text(self) -> str:
        """Everything the model is shown, as one string."""
        return json.dumps({"instructions": self.body.get("instructions"),
                           "input": self.body.get("input")})


class ScriptedResponses(ScriptedModel[Reply, ResponsesCall]):
    def _ended(self) -> Reply:
        return say("(script ended)")

    @property
    def url(self) -> str:
        return f"{self.base_url}/v1"

    def _routes(self, app: web.Application) -> None:
        app.router.add_post("/v1/responses", self._responses)
        app.router.add_route("*", "/{tail:.*}", self._anything)

    async def _anything(self, request: web.Request) -> web.Response:
        return web.json_response({"object": "list", "data": []})

    async def _responses(self, request: web.Request) -> web.StreamResponse:
        number, reply = self._answer(ResponsesCall(await request.json()))
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        for event in _events(reply, number):
            await response.write(
                f"event: {event['type']}\ndata: {json.dumps(event)}\n\n".encode())
        await response.write_eof()
        return response


def _events(reply: Reply, number: int) -> list[dict[str, Any]]:
    response_id = f"resp_{number}"
    item: dict[str, Any]
    if reply.command is not None:
        item = {"type": "function_call", "id": f"fc_{number}", "call_id": f"call_{number}",
                "name": "exec_command", "arguments": json.dumps({"cmd": reply.command}),
                "status": "completed"}
    else:
        item = {"type": "message", "id": f"msg_{number}", "role": "assistant",
                "status": "completed",
                "content": [{"type": "output_text", "text": reply.text, "annotations": []}]}
    usage = {"input_tokens": 10, "output_tokens": 5, "total_tokens": 15,
             "input_tokens_details": {"cached_tokens": 0},
             "output_tokens_details": {"reasoning_tokens": 0}}
    return [
        {"type": "response.created", "response": {"id": response_id}},
        {"type": "response.output_item.done", "output_index": 0, "item": item},
        {"type": "response.completed",
         "response": {"id": response_id, "usage": usage, "output": [item]}},
    ]
