"""``hookgate mcp-proxy`` on the wire: raw JSON-RPC lines into a real proxy process over stdio,
in front of the real demo server. What an SDK client never sends is checked here: several
calls in flight with interleaved ids of both kinds, one of them cancelled, in both protocol
eras, and requests the proxy's stdio fast path must leave to the SDK's server."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from tests.mcp_proxy.proxy_support import (
    HOOKGATE,
    HOOKS,
    REPO,
    demo_command,
    proxy_env,
    read_calls,
)
from tests.support.waiting import wait_until

MODERN = "2026-07-28"
ENVELOPE = {
    "io.modelcontextprotocol/protocolVersion": MODERN,
    "io.modelcontextprotocol/clientInfo": {"name": "wire-test", "version": "1"},
    "io.modelcontextprotocol/clientCapabilities": {},
}
SERVER_INFO = "io.modelcontextprotocol/serverInfo"


class Wire:
    """A JSON-RPC peer on a proxy process's stdin and stdout."""

    def __init__(self, process: asyncio.subprocess.Process) -> None:
        self.process = process
        self.received: list[dict[str, Any]] = []
        self._arrived = asyncio.Condition()

    async def read_all(self) -> None:
        assert self.process.stdout is not None
        async for line in self.process.stdout:
            async with self._arrived:
                self.received.append(json.loads(line))
                self._arrived.notify_all()

    async def send(self, message: dict[str, Any]) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps({"jsonrpc": "2.0", **message}).encode() + b"\n")
        await self.process.stdin.drain()

    async def first(self, wanted: Callable[[dict[str, Any]], bool]) -> dict[str, Any]:
        async with asyncio.timeout(30), self._arrived:
            await self._arrived.wait_for(lambda: any(map(wanted, self.received)))
        return next(message for message in self.received if wanted(message))

    async def answer(self, request_id: Any) -> dict[str, Any]:
        return await self.first(lambda m: m.get("id") == request_id and "method" not in m)

    async def call(self, request_id: Any, method: str, params: dict[str, Any] | None = None,
                   ) -> dict[str, Any]:
        await self.send({"id": request_id, "method": method,
                         **({} if params is None else {"params": params})})
        return await self.answer(request_id)

    def position(self, request_id: Any) -> int:
        return next(i for i, m in enumerate(self.received)
                    if m.get("id") == request_id and "method" not in m)


@asynccontextmanager
async def wire_proxy(state: Path, *extra: str) -> AsyncIterator[Wire]:
    # The child writes its log to its own copy of the file; ours is closed once it started.
    with open(state / "proxy.log", "w") as log:  # noqa: ASYNC230 - opened once, not read
        process = await asyncio.create_subprocess_exec(
            HOOKGATE, "mcp-proxy", *extra, "--config", HOOKS, "--", *demo_command(state),
            stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=log,
            cwd=REPO, env=proxy_env(),
        )
    wire = Wire(process)
    reader = asyncio.create_task(wire.read_all())
    try:
        yield wire
    finally:
        assert process.stdin is not None
        process.stdin.close()
        try:
            async with asyncio.timeout(20):
                await process.wait()
        finally:
            if process.returncode is None:
                process.kill()
                await process.wait()
            await reader


async def open_session(wire: Wire, era: str) -> Callable[[dict[str, Any]], dict[str, Any]]:
    """Open the connection in ``era``; return how that era's requests carry their params."""
    if era == "legacy":
        answer = await wire.call(0, "initialize", {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "wire-test", "version": "1"}})
        assert answer["result"]["protocolVersion"] == "2025-11-25"
        await wire.send({"method": "notifications/initialized"})
        return lambda params: params
    answer = await wire.call(0, "server/discover", {"_meta": ENVELOPE})
    assert MODERN in answer["result"]["supportedVersions"]
    return lambda params: {**params, "_meta": {**params.get("_meta", {}), **ENVELOPE}}


def call(name: str, **arguments: Any) -> dict[str, Any]:
    return {"name": name, "arguments": arguments}


def text(answer: dict[str, Any]) -> str:
    return "".join(block["text"] for block in answer["result"]["content"])


@pytest.mark.parametrize("era", ["legacy", "modern"])
async def test_calls_in_flight_at_once_are_answered_by_their_own_ids(
    tmp_path: Path, era: str
) -> None:
    async with wire_proxy(tmp_path) as wire:
        envelope = await open_session(wire, era)
        requests = {
            "slow-1": call("slow", seconds=1.5),
            7: call("add", a=2, b=3),
            "x": call("add", a=666, b=1),      # blocked by the pre_tool_use hook
            8: call("add", a=1, b=2),          # rewritten to (10, 20)
            "9": call("echo", text="cached"),  # a synthetic result; "9" is not 9
            9: call("echo", text="ctx plain"),
        }
        for request_id, params in requests.items():
            await wire.send({"id": request_id, "method": "tools/call", "params": envelope(params)})
        answers = {request_id: await wire.answer(request_id) for request_id in requests}

        assert text(answers[7]) == "5"
        assert text(answers["x"]) == "666 is not allowed here"
        assert answers["x"]["result"]["isError"] is True
        assert text(answers[8]) == "30"
        assert answers["9"]["result"]["structuredContent"] == {"result": "answered from the cache"}
        assert [block["text"] for block in answers[9]["result"]["content"]] == [
            "echo: ctx plain", "note: checked by hookgate"]
        assert text(answers["slow-1"]) == "slept"
        # The quick calls did not wait for the slow one sent before them.
        assert wire.position("slow-1") > max(wire.position(i) for i in (7, "x", 8, "9", 9))
        for answer in answers.values():
            if era == "modern":
                assert answer["result"]["resultType"] == "complete"
                assert answer["result"]["_meta"][SERVER_INFO]["name"] == "hookgate-mcp-proxy"
            else:
                assert "resultType" not in answer["result"] and "_meta" not in answer["result"]
    assert sorted(read_calls(tmp_path)) == ["add", "add", "echo", "slow"]


@pytest.mark.parametrize("era", ["legacy", "modern"])
async def test_progress_comes_under_the_clients_token_before_the_answer(
    tmp_path: Path, era: str
) -> None:
    async with wire_proxy(tmp_path) as wire:
        envelope = await open_session(wire, era)
        params = envelope({**call("count", n=2), "_meta": {"progressToken": "tok-1"}})
        answer = await wire.call(5, "tools/call", params)
        assert text(answer) == "counted 2"
        progress = [m["params"] for m in wire.received
                    if m.get("method") == "notifications/progress"]
        assert progress == [
            {"progressToken": "tok-1", "progress": 1.0, "total": 2.0, "message": "step 1"},
            {"progressToken": "tok-1", "progress": 2.0, "total": 2.0, "message": "step 2"},
        ]
        last = max(i for i, m in enumerate(wire.received)
                   if m.get("method") == "notifications/progress")
        assert last < wire.position(5)


async def test_cancelling_one_call_cancels_it_upstream_and_leaves_the_others(
    tmp_path: Path,
) -> None:
    async with wire_proxy(tmp_path) as wire:
        await open_session(wire, "legacy")
        await wire.send({"id": "long", "method": "tools/call", "params": call("slow", seconds=60)})
        await asyncio.to_thread(wait_until, (tmp_path / "slow-started").exists, "slow-started", 20)
        await wire.send({"method": "notifications/cancelled",
                         "params": {"requestId": "long", "reason": "user pressed stop"}})
        await asyncio.to_thread(wait_until, (tmp_path / "slow-cancelled").exists, "cancel", 20)
        assert text(await wire.call(11, "tools/call", call("add", a=4, b=4))) == "8"
        # A cancelled request is not answered (JSON-RPC); the next ones are.
        assert text(await wire.call(12, "tools/call", call("add", a=5, b=5))) == "10"
        assert not any(m.get("id") == "long" for m in wire.received)
        # A cancellation naming no call in flight changes nothing.
        await wire.send({"method": "notifications/cancelled", "params": {"requestId": 999}})
        assert text(await wire.call(13, "tools/call", call("add", a=6, b=6))) == "12"


async def test_requests_the_fast_path_leaves_alone_get_the_sdks_answers(tmp_path: Path) -> None:
    async with wire_proxy(tmp_path) as wire:
        early = await wire.call("early", "tools/call", call("add", a=2, b=3))
        assert "error" in early  # before the handshake: refused, and not forwarded
        await open_session(wire, "legacy")
        nameless = await wire.call(21, "tools/call", {"arguments": {}})
        assert nameless["error"]["code"] == -32602  # INVALID_PARAMS
        enveloped = await wire.call(22, "tools/call", {**call("add", a=1, b=1), "_meta": ENVELOPE})
        assert enveloped["error"]["code"] == -32600  # INVALID_REQUEST: the other era
        # Ids and cancellations no JSON-RPC peer should send neither end the connection.
        await wire.send({"method": "notifications/cancelled", "params": {"requestId": [23]}})
        await wire.send({"id": [24], "method": "tools/call", "params": call("add", a=1, b=1)})
        await wire.send({"id": True, "method": "tools/call", "params": call("add", a=1, b=1)})
        assert text(await wire.call(23, "tools/call", call("add", a=2, b=2))) == "4"
    assert read_calls(tmp_path) == ["add"]
