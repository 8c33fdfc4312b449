"""A LangChain v1 agent guarded by hookgate: ``python -m examples.adapters.langchain_agent``."""

from __future__ import annotations

from typing import Any

from langchain.agents import create_agent
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.tools import tool

from examples.adapters import DANGEROUS, engine, shell
from hookgate.adapters.langchain import HookgateMiddleware


class ScriptedChat(GenericFakeChatModel):
    """LangChain's offline model; use ChatOpenAI, ChatAnthropic, … for a real agent."""

    def bind_tools(self, tools: Any, **kwargs: Any) -> ScriptedChat:
        return self


def main() -> None:
    model = ScriptedChat(
        messages=iter(
            [
                AIMessage(
                    "", tool_calls=[{"name": "exec", "args": {"cmd": DANGEROUS}, "id": "c1"}]
                ),
                AIMessage("", tool_calls=[{"name": "exec", "args": {"cmd": "ls"}, "id": "c2"}]),
                AIMessage("done"),
            ]
        )
    )
    hooks = engine()
    agent = create_agent(
        model,
        [tool("exec")(shell)],
        middleware=[HookgateMiddleware(hooks)],
        name="example",
    )
    state = agent.invoke({"messages": [{"role": "user", "content": "tidy up"}]})
    hooks.close()  # drains the queued non-blocking events (session_start, stop)
    for message in state["messages"]:
        if isinstance(message, ToolMessage):
            print(f"model read: {message.text}")
    print(f"answer: {state['messages'][-1].text}")


if __name__ == "__main__":
    main()
