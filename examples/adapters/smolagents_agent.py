"""A smolagents ToolCallingAgent guarded by hookgate:
``python -m examples.adapters.smolagents_agent``."""

from __future__ import annotations

from typing import Any

from smolagents import ToolCallingAgent, tool
from smolagents.models import (
    ChatMessage,
    ChatMessageToolCall,
    ChatMessageToolCallFunction,
    MessageRole,
    Model,
)

from examples.adapters import DANGEROUS, engine
from examples.adapters import shell as run_shell
from hookgate.adapters.smolagents import guard

PLAN = [("exec", {"cmd": DANGEROUS}), ("exec", {"cmd": "ls"}), ("final_answer", {"answer": "done"})]


class Scripted(Model):
    """An offline model; use smolagents' InferenceClientModel, LiteLLMModel, … for real."""

    def generate(self, messages: list[Any], **kwargs: Any) -> ChatMessage:
        last = messages[-1]
        if str(getattr(last.role, "value", last.role)) == "tool-response":
            content = last.content
            text = (
                "".join(p.get("text", "") for p in content)
                if isinstance(content, list)
                else content
            )
            print(f"model read: {text.split('Observation:')[-1].strip()}")
        step = sum(1 for m in messages if str(getattr(m.role, "value", m.role)) == "tool-call")
        name, arguments = PLAN[step]
        function = ChatMessageToolCallFunction(name=name, arguments=arguments)
        call = ChatMessageToolCall(function=function, id=f"c{step}", type="function")
        return ChatMessage(role=MessageRole.ASSISTANT, content="", tool_calls=[call])


@tool
def exec(cmd: str) -> str:  # the tool's name, as the model calls it
    """Run a shell command.

    Args:
        cmd: the command line.
    """
    return run_shell(cmd)


def main() -> None:
    agent = ToolCallingAgent(
        tools=[exec], model=Scripted(model_id="scripted"), name="example", verbosity_level=0
    )
    hooks = engine()
    answer = guard(agent, hooks).run("tidy up")
    hooks.close()  # drains the queued non-blocking events (session_start, stop)
    print(f"answer: {answer}")


if __name__ == "__main__":
    main()
