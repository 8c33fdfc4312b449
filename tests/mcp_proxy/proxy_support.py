"""Run a real ``hookgate mcp-proxy`` in front of the demo MCP server, driven by ``mcp.Client``."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

from tests.support.waiting import wait_until

try:
    from mcp import Client, StdioServerParameters, types
    from mcp.client.stdio import stdio_client
    from mcp.shared.exceptions import MCPError

    HAVE_MCP = True
except ImportError:  # the conftest fails (CI) or skips every test then
    HAVE_MCP = False

REPO = Path(__file__).resolve().parents[2]
HOOKGATE = str(Path(sys.executable).parent / "hookgate")
DEMO_SERVER = str(REPO / "tests" / "mcp_proxy" / "servers" / "demo_server.py")
HOOKS = str(REPO / "tests" / "mcp_proxy" / "hooks.yaml")

__all__ = [
    "Client",
    "DEMO_SERVER",
    "MCPError",
    "HAVE_MCP",
    "HOOKGATE",
    "HOOKS",
    "REPO",
    "demo_command",
    "free_port",
    "http_process",
    "proxy_client",
    "proxy_env",
    "read_calls",
    "text_of",
    "types",
]


def proxy_env(**extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    env.update(extra)
    return env


def demo_command(state: Path, *extra: str) -> list[str]:
    return [sys.executable, DEMO_SERVER, "--state", str(state), *extra]


@asynccontextmanager
async def proxy_client(
    proxy_args: list[str],
    log_path: Path,
    *,
    mode: str = "auto",
    env: dict[str, str] | None = None,
    **client_options: Any,
) -> AsyncIterator[Client]:
    """An ``mcp.Client`` talking to ``hookgate mcp-proxy PROXY_ARGS`` over stdio; the proxy's
    stderr (its log) goes to ``log_path``."""
    params = StdioServerParameters(
        command=HOOKGATE,
        args=["mcp-proxy", *proxy_args],
        env=env or proxy_env(),
        cwd=str(REPO),
    )
    with open(log_path, "w") as log:  # noqa: ASYNC230 - opened once, before any traffic
        transport = stdio_client(params, errlog=log)
        async with Client(transport, mode=mode, **client_options) as client:  # type: ignore[arg-type]
            yield client


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def http_process(
    command: list[str], port: int, log_path: Path, *, host: str = "127.0.0.1"
) -> Iterator[subprocess.Popen[str]]:
    """A process serving HTTP on ``host:port``; yielded once the port accepts connections."""
    with open(log_path, "w") as log:
        proc = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, text=True,
                                cwd=REPO, env=proxy_env())
        try:
            wait_until(lambda: _accepts(port, host) or proc.poll() is not None,
                       "the proxy accepts connections (or exits)", seconds=30)
            if proc.poll() is not None:
                raise RuntimeError(f"{command[0]} exited: {log_path.read_text()}")
            yield proc
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def _accepts(port: int, host: str = "127.0.0.1") -> bool:
    with socket.socket() as sock:
        sock.settimeout(0.2)
        return sock.connect_ex((host, port)) == 0


def read_calls(state: Path) -> list[str]:
    path = state / "calls.log"
    return path.read_text().split() if path.exists() else []


class ClientOwner:
    """Keeps one proxy session open in a task of its own, so tests of one module can share it
    (anyio wants a client entered and exited by the same task)."""

    def __init__(self, proxy_args: list[str], log_path: Path, *, mode: str = "auto") -> None:
        self._args = (proxy_args, log_path, mode)
        self.client: Client | None = None

    async def __aenter__(self) -> Client:
        import asyncio

        ready: asyncio.Future[Client] = asyncio.get_running_loop().create_future()
        self._done = asyncio.Event()

        async def own() -> None:
            proxy_args, log_path, mode = self._args
            try:
                async with proxy_client(proxy_args, log_path, mode=mode) as client:
                    ready.set_result(client)
                    await self._done.wait()
            except BaseException as exc:
                if not ready.done():
                    ready.set_exception(exc)
                raise

        self._task = asyncio.create_task(own())
        self.client = await ready
        return self.client

    async def __aexit__(self, *exc: object) -> None:
        self._done.set()
        await self._task


def text_of(result: types.CallToolResult) -> str:
    """The text blocks of a tool result, joined."""
    return "".join(block.text for block in result.content if isinstance(block, types.TextContent))
