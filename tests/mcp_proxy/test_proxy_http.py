"""``hookgate mcp-proxy`` over streamable HTTP: to an HTTP upstream (``--upstream-url``),
serving HTTP itself (``--listen``), and both at once."""

from __future__ import annotations

import sys
from contextlib import ExitStack
from pathlib import Path

import pytest
from tests.mcp_proxy.proxy_support import (
    DEMO_SERVER,
    HOOKGATE,
    HOOKS,
    Client,
    demo_command,
    free_port,
    http_process,
    proxy_client,
    read_calls,
    text_of,
    types,
)


async def exercise(client: Client, state: Path) -> None:
    """The hooked and the passed-through paths, as every transport must serve them."""
    blocked = await client.call_tool("add", {"a": 666, "b": 1})
    assert blocked.is_error is True and text_of(blocked) == "666 is not allowed here"
    assert text_of(await client.call_tool("add", {"a": 1, "b": 2})) == "30"
    cached = await client.call_tool("echo", {"text": "cached"})
    assert cached.structured_content == {"result": "answered from the cache"}
    redacted = await client.call_tool("echo", {"text": "password=swordfish"})
    assert text_of(redacted) == "[redacted by hookgate]"
    names = {tool.name for tool in (await client.list_tools()).tools}
    assert "secret_info" not in names and "echo" in names
    hidden = await client.call_tool("secret_info", {})
    assert hidden.is_error is True
    read = await client.read_resource("demo://greeting")
    assert [content.text for content in read.contents] == ["hello from the upstream"]
    prompt = await client.get_prompt("greet", {"name": "Bo"})
    assert prompt.messages[0].content.text == "Please greet Bo warmly."
    seen: list[float] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append(progress)

    counted = await client.call_tool("count", {"n": 2}, progress_callback=on_progress)
    assert text_of(counted) == "counted 2" and seen == [1.0, 2.0]
    assert read_calls(state).count("add") == 1  # only the rewritten call got through
    assert "secret_info" not in read_calls(state)


async def test_stdio_proxy_in_front_of_an_http_upstream(tmp_path: Path) -> None:
    port = free_port()
    upstream = [sys.executable, DEMO_SERVER, "--state", str(tmp_path), "--http", str(port)]
    with http_process(upstream, port, tmp_path / "upstream.log"):
        args = ["--config", HOOKS, "--upstream-url", f"http://127.0.0.1:{port}/mcp"]
        async with proxy_client(args, tmp_path / "proxy.log") as client:
            await exercise(client, tmp_path)


async def test_http_proxy_in_front_of_a_stdio_upstream(tmp_path: Path) -> None:
    port = free_port()
    proxy = [HOOKGATE, "mcp-proxy", "--config", HOOKS, "--listen", f"127.0.0.1:{port}",
             "--", *demo_command(tmp_path)]
    with http_process(proxy, port, tmp_path / "proxy.log"):
        async with Client(f"http://127.0.0.1:{port}/mcp") as client:
            await exercise(client, tmp_path)
        async with Client(f"http://127.0.0.1:{port}/mcp", mode="legacy") as client:
            # A second client, in the handshake era, through the same proxy and upstream.
            again = await client.call_tool("add", {"a": 666, "b": 1})
            assert again.is_error is True


async def test_http_proxy_in_front_of_an_http_upstream(tmp_path: Path) -> None:
    upstream_port, proxy_port = free_port(), free_port()
    upstream = [sys.executable, DEMO_SERVER, "--state", str(tmp_path), "--http",
                str(upstream_port)]
    proxy = [HOOKGATE, "mcp-proxy", "--config", HOOKS, "--listen", f"127.0.0.1:{proxy_port}",
             "--upstream-url", f"http://127.0.0.1:{upstream_port}/mcp"]
    with (
        http_process(upstream, upstream_port, tmp_path / "upstream.log"),
        http_process(proxy, proxy_port, tmp_path / "proxy.log"),
    ):
        async with Client(f"http://127.0.0.1:{proxy_port}/mcp", mode="legacy") as client:
            await exercise(client, tmp_path)


async def test_one_clients_log_messages_never_reach_another(tmp_path: Path) -> None:
    """Two clients on one --listen proxy share its upstream: a log message caused by one
    client's call goes to neither, while a data-free list change goes to both."""
    import asyncio
    from typing import Any

    port = free_port()
    proxy = [HOOKGATE, "mcp-proxy", "--config", HOOKS, "--listen", f"127.0.0.1:{port}",
             "--", *demo_command(tmp_path)]
    logs: dict[str, list[Any]] = {"a": [], "b": []}
    changed = {"a": asyncio.Event(), "b": asyncio.Event()}

    def callbacks(who: str) -> dict[str, Any]:
        async def on_log(params: types.LoggingMessageNotificationParams) -> None:
            logs[who].append(params.data)

        async def on_message(message: Any) -> None:
            if isinstance(message, types.ToolListChangedNotification):
                changed[who].set()

        return {"logging_callback": on_log, "message_handler": on_message}

    url = f"http://127.0.0.1:{port}/mcp"
    with http_process(proxy, port, tmp_path / "proxy.log"):
        async with (
            Client(url, mode="legacy", **callbacks("a")) as a,
            Client(url, mode="legacy", **callbacks("b")) as b,
        ):
            await b.list_tools()  # both clients have spoken to the proxy
            shouted = await a.call_tool("shout", {"text": "a's secret"})
            assert text_of(shouted) == "A'S SECRET"
            await asyncio.wait_for(changed["b"].wait(), 20)
            await asyncio.wait_for(changed["a"].wait(), 20)
            assert logs == {"a": [], "b": []}


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_cancelling_over_http_cancels_upstream(tmp_path: Path, mode: str) -> None:
    """In the handshake era the client sends notifications/cancelled; in the 2026 era it
    closes the request's stream. Either way the upstream's tool is cancelled."""
    import asyncio

    from tests.support.waiting import wait_until_async

    port = free_port()
    proxy = [HOOKGATE, "mcp-proxy", "--config", HOOKS, "--listen", f"127.0.0.1:{port}",
             "--", *demo_command(tmp_path)]
    with http_process(proxy, port, tmp_path / "proxy.log"):
        async with Client(f"http://127.0.0.1:{port}/mcp", mode=mode) as client:
            call = asyncio.create_task(client.call_tool("slow", {"seconds": 60}))
            await wait_until_async((tmp_path / "slow-started").exists, "the slow tool started",
                                   seconds=20)
            call.cancel()
            await asyncio.gather(call, return_exceptions=True)
            await wait_until_async((tmp_path / "slow-cancelled").exists,
                                   "the slow tool saw its cancellation", seconds=20)
            assert text_of(await client.call_tool("add", {"a": 2, "b": 2})) == "4"



async def test_an_http_upstream_that_goes_away_is_an_error_then_reconnects(
    tmp_path: Path,
) -> None:
    from tests.mcp_proxy.proxy_support import MCPError

    port = free_port()
    upstream = [sys.executable, DEMO_SERVER, "--state", str(tmp_path), "--http", str(port)]
    args = ["--config", HOOKS, "--upstream-url", f"http://127.0.0.1:{port}/mcp"]
    with ExitStack() as first_server:
        first_server.enter_context(http_process(upstream, port, tmp_path / "upstream-1.log"))
        async with proxy_client(args, tmp_path / "proxy.log") as client:
            first = text_of(await client.call_tool("pid", {}))
            first_server.close()  # the upstream goes away under the proxy
            with pytest.raises(MCPError) as caught:
                await client.call_tool("pid", {})
            assert caught.value.message.startswith("MCP server 127.0.0.1 failed during")
            assert caught.value.message.endswith("it is restarted on the next request")
            with http_process(upstream, port, tmp_path / "upstream-2.log"):
                second = text_of(await client.call_tool("pid", {}))
            assert second.isdigit() and second != first
