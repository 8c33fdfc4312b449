"""Webhook overhead: the ``http`` handler (SSRF guard, secret headers, answer parsing) against a
bare aiohttp POST on a kept-alive connection to the same loopback server.

The server runs in its own process so client and server do not share an event loop. Both
sides are measured alternately in one loop, several rounds, and the medians are compared.
Goal: the handler round trip at most 1.2x the bare request.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys

import aiohttp

from bench.harness import Row, interleaved_medians_us
from hookgate import Engine, Settings
from hookgate.definition_model import validate_definition
from hookgate.events import get_event
from hookgate.handlers.base import Invocation, Services
from hookgate.handlers.http import HttpHandler
from hookgate.secrets.headers import seal_headers
from hookgate.secrets.keyring import Keyring, generate_key_text

SERVER = """
import json, socket, sys
from aiohttp import web
BODY = json.dumps({"decision": "allow", "reason": "ok"}).encode()
async def hook(request):
    await request.read()
    return web.Response(body=BODY, content_type="application/json")
app = web.Application()
app.router.add_post("/hook", hook)
sock = socket.socket()
sock.bind(("127.0.0.1", 0))
print(sock.getsockname()[1], flush=True)
web.run_app(app, sock=sock, print=None, access_log=None)
"""
PAYLOAD = {"tool_name": "exec", "tool_input": {"cmd": "ls -la /srv"}, "session_id": "bench"}


async def _measure(port: int, quick: bool) -> dict[str, float]:
    url = f"http://127.0.0.1:{port}/hook"
    settings = Settings(ssrf_allowlist=("127.0.0.1/32",))
    keyring = Keyring.from_text(generate_key_text())
    services = Services(settings, keyring=keyring)
    config = seal_headers(
        {"url": url, "headers": {"Authorization": "Bearer bench-token-123456"}}, "bench", keyring
    )
    definition = validate_definition(
        {"id": "bench", "event": "pre_tool_use", "handler_type": "http", "config": config},
        default_scope="global",
    )
    handler = HttpHandler(services)
    spec = get_event("pre_tool_use")
    invocation = Invocation(definition, spec, PAYLOAD, 5.0, services)
    engine = Engine(settings=settings, services=Services(settings, keyring=keyring))
    engine.add(definition)

    body = json.dumps({**PAYLOAD, "event": "pre_tool_use"}).encode()
    headers = {"Content-Type": "application/json", "Authorization": "Bearer bench-token-123456"}
    session = aiohttp.ClientSession()

    async def bare() -> None:
        async with session.post(url, data=body, headers=headers) as response:
            await response.read()

    async def through_handler() -> None:
        result = await handler.run(invocation)
        assert result.decision == "allow"

    async def through_engine() -> None:
        outcome = await engine.fire("pre_tool_use", PAYLOAD)
        assert outcome.decision == "allow"

    makes = {"bare": bare, "handler": through_handler, "engine": through_engine}
    for make in makes.values():  # open the kept-alive connections
        for _ in range(20):
            await make()
    result = await interleaved_medians_us(makes, samples=300 if quick else 3000)
    await session.close()
    await handler.aclose()
    await engine.aclose()
    return result


def run(quick: bool = False) -> list[Row]:
    server = subprocess.Popen(
        [sys.executable, "-c", SERVER],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert server.stdout is not None
        port = int(server.stdout.readline())
        result = asyncio.run(_measure(port, quick))
    finally:
        server.terminate()
        server.wait(5)
    bare, handler, engine = result["bare"], result["handler"], result["engine"]
    baseline = "bare aiohttp POST, same server, kept-alive connection"
    return [
        Row("http", "bare aiohttp POST + read (loopback)", bare, "µs"),
        Row(
            "http",
            "http handler round trip (guard, secrets, parse)",
            handler,
            "µs",
            baseline,
            bare,
            "<= 1.2x",
            handler / bare <= 1.2,
        ),
        Row("http", "engine.fire with one http hook", engine, "µs", baseline, bare),
    ]
