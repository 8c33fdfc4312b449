"""A small MCP server written with the official SDK, for the mcp-proxy tests.

    python demo_server.py [--http PORT] [--state DIR] [--misbehave garbage|hang|garbage-on-call]

Tools: ``echo`` (declares an output schema), ``add`` (plain content), ``secret_info``,
``slow`` (waits; records start and cancellation in ``--state``), ``crash`` (exits the
process), ``count`` (reports progress). One resource and one prompt. A line goes to stderr at
start, so the proxy's log can be checked for it.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from pathlib import Path
from typing import Any

from mcp.server.mcpserver import Context, MCPServer
from mcp.types import Completion, SamplingMessage, TextContent


def build(state: Path | None) -> MCPServer:
    server = MCPServer("demo-upstream", instructions="demo upstream for the hookgate tests")

    def record(name: str) -> None:
        # One line per call, so a test can tell whether the proxy reached this server.
        if state is not None:
            with open(state / "calls.log", "a") as log:
                log.write(name + "\n")

    @server.tool()
    def echo(text: str) -> str:
        """Echo the text back."""
        record("echo")
        return f"echo: {text}"

    @server.tool(structured_output=False)
    def add(a: int, b: int) -> str:
        """Add two numbers."""
        record("add")
        return str(a + b)

    @server.tool(structured_output=False)
    def secret_info() -> str:
        """Returns something only admins should see."""
        record("secret_info")
        return "the secret is 42"

    @server.tool(structured_output=False)
    async def slow(seconds: float) -> str:
        """Wait, then answer."""
        record("slow")
        if state is not None:
            (state / "slow-started").write_text("started")
        try:
            await asyncio.sleep(seconds)
        except asyncio.CancelledError:
            if state is not None:
                (state / "slow-cancelled").write_text("cancelled")
            raise
        return "slept"

    @server.tool(structured_output=False)
    def crash() -> str:
        """Kill this server process."""
        sys.stderr.write("demo-upstream: crashing on purpose\n")
        sys.stderr.flush()
        os._exit(3)

    @server.tool(structured_output=False)
    async def count(n: int, ctx: Context) -> str:
        """Report progress n times."""
        for step in range(1, n + 1):
            await ctx.report_progress(step, n, f"step {step}")
        return f"counted {n}"

    @server.tool(structured_output=False)
    def pid() -> str:
        """This server's process id (tells a restarted upstream apart)."""
        return str(os.getpid())

    @server.tool(structured_output=False)
    def getenv(name: str) -> str:
        """One environment variable of this server ("" when unset)."""
        return os.environ.get(name, "")

    @server.tool(structured_output=False)
    async def shout(text: str, ctx: Context) -> str:
        """Log the text and say the tool list changed (server-to-client notifications)."""
        await ctx.info(f"shouting {text}")
        await ctx.request_context.session.send_tool_list_changed()
        return text.upper()

    @server.tool(structured_output=False)
    async def ask(question: str, ctx: Context) -> str:
        """Ask the client's model (a server-to-client sampling request)."""
        message = SamplingMessage(role="user", content=TextContent(type="text", text=question))
        answer = await ctx.request_context.session.create_message(
            messages=[message], max_tokens=20
        )
        content = answer.content
        return content.text if isinstance(content, TextContent) else str(content)

    @server.completion()
    async def complete(ref: Any, argument: Any, context: Any) -> Completion | None:
        if argument.name == "name":
            names = ["Ann", "Anton", "Bo"]
            return Completion(values=[n for n in names if n.startswith(argument.value)])
        return None

    @server.resource("demo://greeting")
    def greeting() -> str:
        """A static greeting."""
        return "hello from the upstream"

    @server.prompt()
    def greet(name: str) -> str:
        """Greet someone."""
        return f"Please greet {name} warmly."

    return server


def misbehave(kind: str) -> None:
    if kind == "garbage-on-call":
        _garbage_on_call()
    elif kind == "garbage":
        for _line in sys.stdin:
            sys.stdout.write("this is not json-rpc\n")
            sys.stdout.flush()
    elif kind == "hang":
        for _line in sys.stdin:
            pass


def _garbage_on_call() -> None:
    """A hand-written server that initialises and lists its tool properly, then answers
    every tools/call with a line that is not JSON-RPC (a server going bad mid-session)."""
    import json

    def send(message: dict[str, Any]) -> None:
        sys.stdout.write(json.dumps(message) + "\n")
        sys.stdout.flush()

    tool = {"name": "add", "inputSchema": {"type": "object"}}
    for line in sys.stdin:
        request = json.loads(line)
        method, request_id = request.get("method"), request.get("id")
        if request_id is None:
            continue
        if method == "initialize":
            send({"jsonrpc": "2.0", "id": request_id, "result": {
                "protocolVersion": request["params"]["protocolVersion"],
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "garbling", "version": "1"}}})
        elif method == "tools/list":
            send({"jsonrpc": "2.0", "id": request_id, "result": {"tools": [tool]}})
        elif method == "tools/call":
            sys.stdout.write("<html>502 Bad Gateway</html>\n")
            sys.stdout.flush()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--http", type=int, default=None)
    parser.add_argument("--state", type=Path, default=None)
    parser.add_argument("--misbehave", choices=["garbage", "hang", "garbage-on-call"], default=None)
    args = parser.parse_args()
    sys.stderr.write(f"demo-upstream: started pid {os.getpid()}\n")
    sys.stderr.flush()
    if args.misbehave:
        misbehave(args.misbehave)
        return
    server = build(args.state)
    if args.http is not None:
        server.run("streamable-http", host="127.0.0.1", port=args.http)
    else:
        server.run()


if __name__ == "__main__":
    main()
