"""A Pydantic AI agent guarded by hookgate: ``python -m examples.adapters.pydantic_ai_agent``."""

from __future__ import annotations

import asyncio

from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from examples.adapters import DANGEROUS, engine, shell
from hookgate.adapters.pydantic_ai import HookgateCapability

PLAN = [DANGEROUS, "ls"]


def scripted(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """Pydantic AI's offline model; use "openai:gpt-5" or another model name for real."""
    last = messages[-1]
    for part in last.parts:
        content = getattr(part, "content", None)
        if getattr(part, "part_kind", "") in ("tool-return", "retry-prompt"):
            print(f"model read: {content if isinstance(content, str) else part.model_response()}")
    step = sum(isinstance(m, ModelResponse) for m in messages)
    if step < len(PLAN):
        return ModelResponse(
            parts=[ToolCallPart("exec", {"cmd": PLAN[step]}, tool_call_id=f"c{step}")]
        )
    return ModelResponse(parts=[TextPart("done")])


async def main() -> None:
    agent = Agent(
        FunctionModel(scripted), name="example", capabilities=[HookgateCapability(engine())]
    )
    agent.tool_plain(name="exec")(shell)
    result = await agent.run("tidy up")
    print(f"answer: {result.output}")


if __name__ == "__main__":
    asyncio.run(main())
