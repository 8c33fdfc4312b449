"""``hookgate mcp-proxy`` over stdio, in front of a real MCP server over stdio, driven by a real
``mcp.Client``: every hook outcome on tools/call and tools/list, and what passes through."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio
from tests.mcp_proxy.proxy_support import (
    HOOKS,
    ClientOwner,
    MCPError,
    demo_command,
    read_calls,
    text_of,
    types,
)
from tests.support.waiting import wait_until

pytestmark = pytest.mark.asyncio(loop_scope="module")


@pytest.fixture(scope="module")
def state(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("upstream-state")


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def client(state: Path) -> AsyncIterator[object]:
    owner = ClientOwner(["--config", HOOKS, "--", *demo_command(state)], state / "proxy.log")
    async with owner as connected:
        yield connected


async def test_block_answers_an_error_result_and_never_calls_the_upstream(client, state) -> None:
    before = read_calls(state).count("add")
    result = await client.call_tool("add", {"a": 666, "b": 1})
    assert result.is_error is True
    assert text_of(result) == "666 is not allowed here"
    assert read_calls(state).count("add") == before


async def test_rewrite_forwards_the_rewritten_arguments(client) -> None:
    result = await client.call_tool("add", {"a": 1, "b": 2})
    assert result.is_error is False
    assert text_of(result) == "30"  # the hook turned (1, 2) into (10, 20)


async def test_untouched_call_reaches_the_upstream(client, state) -> None:
    result = await client.call_tool("add", {"a": 2, "b": 3})
    assert text_of(result) == "5"
    assert "add" in read_calls(state)


async def test_synthetic_result_without_output_schema(client, state) -> None:
    before = read_calls(state).count("add")
    result = await client.call_tool("add", {"a": 7, "b": 0})
    assert result.is_error is False
    assert text_of(result) == "seven is answered by hookgate"
    assert result.structured_content is None
    assert read_calls(state).count("add") == before


async def test_synthetic_result_with_output_schema_has_structured_content(client, state) -> None:
    tools = {tool.name: tool for tool in (await client.list_tools()).tools}
    assert tools["echo"].output_schema is not None  # the client validates echo's results
    before = read_calls(state).count("echo")
    result = await client.call_tool("echo", {"text": "cached"})
    assert result.is_error is False
    assert text_of(result) == "answered from the cache"
    assert result.structured_content == {"result": "answered from the cache"}
    assert read_calls(state).count("echo") == before


async def test_output_rewrite_replaces_content_and_structured_content(client) -> None:
    result = await client.call_tool("echo", {"text": "my password is hunter2"})
    assert text_of(result) == "[redacted by hookgate]"
    assert result.structured_content == {"result": "[redacted by hookgate]"}
    assert "hunter2" not in result.model_dump_json()


async def test_added_context_is_appended_as_text(client) -> None:
    result = await client.call_tool("echo", {"text": "ctx please"})
    texts = [block.text for block in result.content if isinstance(block, types.TextContent)]
    assert texts == ["echo: ctx please", "note: checked by hookgate"]
    assert result.structured_content == {"result": "echo: ctx please"}


async def test_a_hook_error_blocks_the_call(client, state) -> None:
    before = read_calls(state).count("echo")
    result = await client.call_tool("echo", {"text": "boom"})
    assert result.is_error is True
    assert text_of(result) == "hook 'guard-echo' failed closed: RuntimeError: hook bug"
    assert read_calls(state).count("echo") == before


async def test_a_hook_timeout_blocks_the_call(client, state) -> None:
    before = read_calls(state).count("echo")
    result = await client.call_tool("echo", {"text": "sleepy"})
    assert result.is_error is True
    assert text_of(result).startswith("hook 'guard-echo' failed closed: timed out after")
    assert read_calls(state).count("echo") == before


async def test_hidden_tool_is_not_listed_and_cannot_be_called(client, state) -> None:
    names = [tool.name for tool in (await client.list_tools()).tools]
    assert "secret_info" not in names
    assert {"echo", "add", "slow", "count"} <= set(names)
    result = await client.call_tool("secret_info", {})
    assert result.is_error is True
    assert "not available" in text_of(result)
    assert "secret_info" not in read_calls(state)


async def test_resources_pass_through(client) -> None:
    listed = await client.list_resources()
    assert [str(resource.uri) for resource in listed.resources] == ["demo://greeting"]
    read = await client.read_resource("demo://greeting")
    assert [content.text for content in read.contents] == ["hello from the upstream"]


async def test_prompts_pass_through(client) -> None:
    listed = await client.list_prompts()
    assert [prompt.name for prompt in listed.prompts] == ["greet"]
    prompt = await client.get_prompt("greet", {"name": "Ann"})
    assert prompt.messages[0].content.text == "Please greet Ann warmly."


async def test_upstream_errors_pass_through(client) -> None:
    with pytest.raises(MCPError) as caught:
        await client.read_resource("demo://nope")
    assert caught.value.message == "Unknown resource: demo://nope"


async def test_progress_reaches_the_client_under_its_own_token(client) -> None:
    seen: list[tuple[float, float | None, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append((progress, total, message))

    result = await client.call_tool("count", {"n": 3}, progress_callback=on_progress)
    assert text_of(result) == "counted 3"
    assert seen == [(1.0, 3.0, "step 1"), (2.0, 3.0, "step 2"), (3.0, 3.0, "step 3")]


async def test_upstream_stderr_goes_to_the_proxy_log(client, state) -> None:
    wait_until(lambda: "demo-upstream: started pid" in (state / "proxy.log").read_text(),
               "the upstream's start in the proxy log")


async def test_a_hook_printing_to_stdout_does_not_corrupt_the_stream(client, state) -> None:
    result = await client.call_tool("echo", {"text": "noisy"})
    assert text_of(result) == "echo: noisy"
    wait_until(lambda: "stray output from a hook: noisy" in (state / "proxy.log").read_text(),
               "the hook's stray output in the proxy log")


async def test_the_client_sees_the_upstream_capabilities_and_instructions(client) -> None:
    assert client.server_capabilities.prompts is not None
    assert client.server_capabilities.resources is not None
    assert client.instructions == "demo upstream for the hookgate tests"
