"""What passes through ``hookgate mcp-proxy`` untouched, in both directions, for a client in
the handshake era (how Claude Code speaks): completion, log messages, list-changed
notifications, and a sampling request from the server answered by the client."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from tests.mcp_proxy.proxy_support import HOOKS, demo_command, proxy_client, read_calls, types


async def test_both_directions_pass_through(tmp_path: Path) -> None:
    logs: list[Any] = []
    questions: list[str] = []
    logged, tools_changed = asyncio.Event(), asyncio.Event()

    async def on_log(params: types.LoggingMessageNotificationParams) -> None:
        logs.append(params.data)
        logged.set()

    async def on_message(message: Any) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            tools_changed.set()

    async def on_sampling(ctx: Any, params: types.CreateMessageRequestParams) -> Any:
        questions.append(params.messages[0].content.text)
        return types.CreateMessageResult(
            role="assistant", model="scripted",
            content=types.TextContent(type="text", text="forty-two"),
        )

    # Sampling is refused unless the operator lets it through (tests/attacks/ shows that).
    args = ["--config", HOOKS, "--allow-sampling", "--", *demo_command(tmp_path)]
    async with proxy_client(
        args, tmp_path / "proxy.log", mode="legacy",
        logging_callback=on_log, message_handler=on_message, sampling_callback=on_sampling,
    ) as client:
        # A hidden tool stays hidden for a client that calls it without listing first.
        hidden = await client.call_tool("secret_info", {})
        assert hidden.is_error is True and "not available" in hidden.content[0].text
        assert "secret_info" not in read_calls(tmp_path)

        completion = await client.complete(
            types.PromptReference(type="ref/prompt", name="greet"),
            argument={"name": "name", "value": "An"},
        )
        assert completion.completion.values == ["Ann", "Anton"]

        shouted = await client.call_tool("shout", {"text": "hello"})
        assert shouted.content[0].text == "HELLO"
        # Notifications travel beside the answer, so they may land just after it.
        await asyncio.wait_for(logged.wait(), 10)
        await asyncio.wait_for(tools_changed.wait(), 10)
        assert logs == ["shouting hello"]

        asked = await client.call_tool("ask", {"question": "what is six times seven?"})
        assert asked.content[0].text == "forty-two"
        assert questions == ["what is six times seven?"]
