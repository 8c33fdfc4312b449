"""Upstream faults through a real ``hookgate mcp-proxy``: each is a clear MCP error, never a
hang; a dead upstream is started again on the next call; cancellation reaches the upstream."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from tests.mcp_proxy.proxy_support import (
    HOOKS,
    MCPError,
    demo_command,
    proxy_client,
    text_of,
)
from tests.support.waiting import wait_until


async def test_a_crashed_upstream_is_an_error_then_restarts_on_the_next_call(
    tmp_path: Path,
) -> None:
    log = tmp_path / "proxy.log"
    async with proxy_client(["--config", HOOKS, "--", *demo_command(tmp_path)], log) as client:
        first_pid = text_of(await client.call_tool("pid", {}))
        with pytest.raises(MCPError) as caught:
            await client.call_tool("crash", {})
        assert "exited or closed its connection" in caught.value.message
        assert "restarted on the next request" in caught.value.message
        second_pid = text_of(await client.call_tool("pid", {}))
        assert second_pid.isdigit() and second_pid != first_pid
        # The restarted upstream is hooked like the first one.
        blocked = await client.call_tool("add", {"a": 666, "b": 0})
        assert blocked.is_error is True
    text = log.read_text()
    assert "demo-upstream: crashing on purpose" in text
    assert text.count("demo-upstream: started pid") == 2


async def test_cancelling_a_call_cancels_it_upstream(tmp_path: Path) -> None:
    log = tmp_path / "proxy.log"
    async with proxy_client(["--config", HOOKS, "--", *demo_command(tmp_path)], log) as client:
        call = asyncio.create_task(client.call_tool("slow", {"seconds": 60}))
        await asyncio.to_thread(wait_until, (tmp_path / "slow-started").exists, "slow-started", 20)
        call.cancel()
        with pytest.raises(asyncio.CancelledError):
            await call
        await asyncio.to_thread(wait_until, (tmp_path / "slow-cancelled").exists, "cancel", 20)
        # The connection stays usable after the cancellation.
        assert text_of(await client.call_tool("add", {"a": 2, "b": 2})) == "4"


def mcp_errors(exc: BaseException) -> list[str]:
    """The MCP error messages inside ``exc`` (the SDK raises them wrapped in groups)."""
    if isinstance(exc, BaseExceptionGroup):
        return [message for inner in exc.exceptions for message in mcp_errors(inner)]
    return [exc.message] if isinstance(exc, MCPError) else []


@pytest.mark.parametrize(
    ("misbehaviour", "extra", "message"),
    [
        ("hang", ["--init-timeout", "1"], "MCP server demo_server did not finish initialising"),
        ("garbage", [], "MCP server demo_server answered something that is not JSON-RPC"),
    ],
)
async def test_an_upstream_that_does_not_initialise_is_a_clear_error(
    tmp_path: Path, misbehaviour: str, extra: list[str], message: str
) -> None:
    args = [*extra, "--", *demo_command(tmp_path, "--misbehave", misbehaviour)]
    with pytest.raises(BaseException) as caught:
        # The handshake era, as Claude Code speaks it: the error is the initialize answer.
        async with proxy_client(args, tmp_path / "proxy.log", mode="legacy"):
            pass
    errors = mcp_errors(caught.value)
    assert errors and all(error.startswith(message) for error in errors), errors


async def test_a_call_past_the_call_timeout_is_an_error_and_cancelled_upstream(
    tmp_path: Path,
) -> None:
    log = tmp_path / "proxy.log"
    args = ["--call-timeout", "1", "--config", HOOKS, "--", *demo_command(tmp_path)]
    async with proxy_client(args, log, mode="legacy") as client:
        with pytest.raises(MCPError) as caught:
            await client.call_tool("slow", {"seconds": 60})
        assert caught.value.message == "MCP server demo_server did not answer tools/call within 1s"
        await asyncio.to_thread(wait_until, (tmp_path / "slow-cancelled").exists, "cancel", 20)
        assert text_of(await client.call_tool("add", {"a": 3, "b": 4})) == "7"


async def test_an_upstream_answering_garbage_mid_session_is_an_error_then_restarts(
    tmp_path: Path,
) -> None:
    log = tmp_path / "proxy.log"
    args = ["--config", HOOKS, "--", *demo_command(tmp_path, "--misbehave", "garbage-on-call")]
    async with proxy_client(args, log) as client:
        assert [tool.name for tool in (await client.list_tools()).tools] == ["add"]
        for _attempt in range(2):
            with pytest.raises(MCPError) as caught:
                await client.call_tool("add", {"a": 2, "b": 3})
            message = caught.value.message
            assert message.startswith("MCP server demo_server failed during tools/call: "
                                      "answered something that is not JSON-RPC"), message
            assert message.endswith("it is restarted on the next request")
        # The hooks still decide before the (restarted) upstream is asked.
        blocked = await client.call_tool("add", {"a": 666, "b": 0})
        assert blocked.is_error is True
    assert "MCP server demo_server: starting again" in log.read_text()
