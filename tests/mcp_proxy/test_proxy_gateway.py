"""``hookgate mcp-proxy --gateway URL``: the hooks of a real gateway, for the key's tenant.

Also what an MCP client or server could try: the upstream never sees hookgate's API key, and
a gateway that goes away blocks every call (fail-closed) instead of letting it through.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.mcp_proxy.proxy_support import (
    demo_command,
    proxy_client,
    proxy_env,
    read_calls,
    text_of,
    types,
)
from tests.server.conftest import gateway_with_hooks
from tests.server.gateway_process import GatewayProcess


@pytest.fixture
def fleet(tmp_path: Path) -> Iterator[tuple[GatewayProcess, str]]:
    with gateway_with_hooks(
        tmp_path / "gw",
        "mcp-fleet",
        {
            "event": "pre_tool_use", "handler_type": "callable", "scope": "tenant",
            "tenant_id": "mcp-fleet", "name": "no add", "matcher": "^add$",
            "config": {"callable": "tests.server.hookfns:block"},
        },
        {
            "event": "post_tool_use", "handler_type": "callable", "scope": "tenant",
            "tenant_id": "mcp-fleet", "name": "note", "matcher": "^echo$",
            "config": {"callable": "tests.server.hookfns:allow"},
        },
        # Another tenant's hook must not reach this proxy's calls.
        {
            "event": "pre_tool_use", "handler_type": "callable", "scope": "tenant",
            "tenant_id": "other", "name": "block all", "matcher": "",
            "config": {"callable": "tests.server.hookfns:block"},
        },
    ) as served_and_key:
        yield served_and_key


async def test_gateway_hooks_decide_and_a_lost_gateway_blocks(
    fleet: tuple[GatewayProcess, str], tmp_path: Path
) -> None:
    served, key = fleet
    env = proxy_env(HOOKGATE_API_KEY=key)
    args = ["--gateway", served.url, "--", *demo_command(tmp_path)]
    async with proxy_client(args, tmp_path / "proxy.log", env=env) as client:
        blocked = await client.call_tool("add", {"a": 1, "b": 2})
        assert blocked.is_error is True
        assert text_of(blocked) == "blocked by test hook on pre_tool_use"
        echoed = await client.call_tool("echo", {"text": "hi"})
        texts = [block.text for block in echoed.content if isinstance(block, types.TextContent)]
        assert texts == ["echo: hi", "checked by test hook"]
        # The key stays with the proxy: the upstream server never sees it.
        assert text_of(await client.call_tool("getenv", {"name": "HOOKGATE_API_KEY"})) == ""
        served.stop()
        lost = await client.call_tool("echo", {"text": "after the gateway stopped"})
        assert lost.is_error is True
        assert "could not evaluate" in text_of(lost)
    assert read_calls(tmp_path).count("echo") == 1
    assert key not in (tmp_path / "proxy.log").read_text()
