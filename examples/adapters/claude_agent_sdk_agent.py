"""A Claude Agent SDK agent guarded by hookgate:
``python -m examples.adapters.claude_agent_sdk_agent``.

It runs the real Claude Code CLI bundled with the SDK (``ANTHROPIC_API_KEY`` needed), in a
fresh temporary folder; the hooks in ``examples/hooks.yaml`` refuse the destructive command.
"""

from __future__ import annotations

import asyncio
import tempfile

from claude_agent_sdk import (
    AssistantMessage,
    ClaudeAgentOptions,
    TextBlock,
    ToolResultBlock,
    UserMessage,
    query,
)

from examples.adapters import DANGEROUS, engine
from hookgate.adapters.claude_agent_sdk import hook_matchers


async def main() -> None:
    matchers = hook_matchers(engine(), agent_name="example")
    options = ClaudeAgentOptions(
        hooks=matchers, allowed_tools=["Bash"], cwd=tempfile.mkdtemp(prefix="hookgate-example-")
    )
    # Through submit, user_prompt_submit hooks may rewrite the prompt (Claude Code's own
    # UserPromptSubmit can only block it).
    prompt = await matchers.submit(f"Run `{DANGEROUS}` with Bash, then run `ls`.")
    answer = ""
    async for message in query(prompt=prompt, options=options):
        if isinstance(message, UserMessage) and isinstance(message.content, list):
            for block in message.content:
                if isinstance(block, ToolResultBlock):
                    print(f"model read: {block.content}")
        elif isinstance(message, AssistantMessage):
            answer = "".join(b.text for b in message.content if isinstance(b, TextBlock)) or answer
    print(f"answer: {answer}")


if __name__ == "__main__":
    asyncio.run(main())
