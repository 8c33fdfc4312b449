"""A Google ADK agent guarded by hookgate: ``python -m examples.adapters.adk_agent``."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator
from typing import Any

from google.adk.agents import LlmAgent
from google.adk.apps import App
from google.adk.models.base_llm import BaseLlm
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.adk.runners import InMemoryRunner
from google.genai import types

from examples.adapters import DANGEROUS, engine
from examples.adapters import shell as run_shell
from hookgate.adapters.adk import HookgatePlugin

PLAN = [DANGEROUS, "ls"]


class ScriptedLlm(BaseLlm):
    """An offline model; pass model="gemini-2.5-flash" to the agent for a real one."""

    model: str = "scripted"

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        for part in llm_request.contents[-1].parts or []:
            if part.function_response is not None:
                response = part.function_response.response or {}
                print(f"model read: {response.get('error') or response.get('result')}")
        step = sum(1 for c in llm_request.contents if c.role == "model")
        if step < len(PLAN):
            call = types.FunctionCall(name="shell", args={"cmd": PLAN[step]}, id=f"c{step}")
            part = types.Part(function_call=call)
        else:
            part = types.Part(text="done")
        yield LlmResponse(content=types.Content(role="model", parts=[part]))


def shell(cmd: str) -> dict[str, Any]:
    """Run a shell command."""
    return {"result": run_shell(cmd)}


async def main() -> None:
    agent = LlmAgent(name="example", model=ScriptedLlm(), tools=[shell])
    app = App(name="example", root_agent=agent, plugins=[HookgatePlugin(engine())])
    runner = InMemoryRunner(app=app)
    session = await runner.session_service.create_session(app_name="example", user_id="me")
    message = types.Content(role="user", parts=[types.Part(text="tidy up")])
    answer = ""
    async for event in runner.run_async(user_id="me", session_id=session.id, new_message=message):
        for part in (event.content.parts or []) if event.content else []:
            answer = part.text or answer
    print(f"answer: {answer}")


if __name__ == "__main__":
    asyncio.run(main())
