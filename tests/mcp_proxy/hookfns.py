"""Callable hooks the mcp-proxy tests load from hooks files (``tests.mcp_proxy.hookfns:…``)."""

from __future__ import annotations

import asyncio
from typing import Any

from hookgate.hook_event import HookEvent


def guard_add(event: HookEvent) -> dict[str, Any] | None:
    args = event.tool_input or {}
    if args.get("a") == 666:
        return {"decision": "block", "reason": "666 is not allowed here"}
    if args.get("a") == 1:
        return {"updated_input": {"a": 10, "b": 20}}
    if args.get("a") == 7:
        return {"result": "seven is answered by hookgate"}
    return None


async def guard_echo(event: HookEvent) -> dict[str, Any] | None:
    text = (event.tool_input or {}).get("text")
    if text == "cached":
        return {"result": "answered from the cache"}
    if text == "boom":
        raise RuntimeError("hook bug")
    if text == "sleepy":
        await asyncio.sleep(30)
    return None


def review_echo(event: HookEvent) -> dict[str, Any] | None:
    text = (event.tool_input or {}).get("text", "")
    # A careless hook printing to stdout must not corrupt the proxy's MCP stream.
    print(f"stray output from a hook: {text[:10]}")
    if "password" in text:
        return {"updated_input": "[redacted by hookgate]"}
    if text.startswith("ctx"):
        return {"additional_context": "note: checked by hookgate"}
    return None


def hide_secret_tools(event: HookEvent) -> dict[str, Any]:
    kept = [tool for tool in event.tools if not tool["name"].startswith("secret")]
    return {"updated_input": kept}


def block_everything(event: HookEvent) -> dict[str, Any]:
    return {"decision": "block", "reason": f"{event.tool_name} is blocked by policy"}
