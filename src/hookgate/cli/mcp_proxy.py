"""``hookgate mcp-proxy``: put hookgate between an MCP client and an MCP server.

    hookgate mcp-proxy --config hooks.yaml -- npx -y @modelcontextprotocol/server-filesystem .
    hookgate mcp-proxy --gateway http://127.0.0.1:8787 --upstream-url http://127.0.0.1:9000/mcp
    hookgate mcp-proxy --config hooks.yaml --listen 127.0.0.1:8931 -- python my_server.py
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import shlex
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
import click

from hookgate.settings import Settings

if TYPE_CHECKING:
    from hookgate.mcp_proxy import Evaluate, Wants


def register(main: click.Group) -> None:
    main.add_command(mcp_proxy)


def _listen_address(value: str | None) -> tuple[str, int] | None:
    if value is None:
        return None
    host, sep, port = value.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise click.BadParameter(f"expected HOST:PORT, got {value!r}", param_hint="--listen")
    return host.strip("[]"), int(port)


@click.command(
    "mcp-proxy",
    context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False},
)
@click.option("-c", "--config", "config_path", type=click.Path(dir_okay=False, exists=True),
              default=None, help="Hooks file to run locally.")
@click.option("--gateway", "gateway_url", envvar="HOOKGATE_GATEWAY_URL", default=None,
              help="Ask this hookgate gateway instead of a hooks file; the API key comes from "
              "HOOKGATE_API_KEY.")
@click.option("--upstream-url", default=None,
              help="Forward to this streamable-HTTP MCP server instead of starting a command.")
@click.option("--upstream", "named", multiple=True, metavar="NAME=COMMAND|URL",
              help="One of several upstreams (repeatable): a command line (split like a shell "
              "would) or a streamable-HTTP URL. Tool and prompt names get the prefix NAME__.")
@click.option("--listen", default=None, metavar="HOST:PORT",
              help="Serve streamable HTTP at http://HOST:PORT/mcp instead of stdio.")
@click.option("--allowed-host", "allowed_hosts", multiple=True, metavar="HOST[:PORT]",
              help="With --listen: a Host header to accept besides loopback names and the "
              "listen address (repeatable; without a port, any port).")
@click.option("--allowed-origin", "allowed_origins", multiple=True, metavar="ORIGIN",
              help="With --listen: a browser Origin to accept besides those of the allowed "
              "hosts (repeatable), e.g. https://app.example.com.")
@click.option("--auth-token-file", type=click.Path(dir_okay=False, exists=True), default=None,
              help="With --listen: every request must carry 'Authorization: Bearer TOKEN', "
              "the file's content (or set HOOKGATE_MCP_PROXY_TOKEN).")
@click.option("--allow-sampling", is_flag=True, default=False,
              help="Let the upstream's sampling requests (its text to the client's model) "
              "through; refused by default.")
@click.option("--allow-elicitation", is_flag=True, default=False,
              help="Let the upstream's elicitation requests (questions to the client's user) "
              "through; refused by default.")
@click.option("--name", "label", default=None,
              help="The upstream's name in hook events (`server`) and logs "
              "(default: the command's file name or the URL's host).")
@click.option("--init-timeout", type=click.FloatRange(0.1, 600), default=30.0, show_default=True,
              help="Seconds the upstream has to answer initialize.")
@click.option("--call-timeout", type=click.FloatRange(0.1, 86400), default=300.0,
              show_default=True, help="Seconds the upstream has to answer one request.")
@click.argument("command", nargs=-1, type=click.UNPROCESSED)
def mcp_proxy(
    config_path: str | None,
    gateway_url: str | None,
    upstream_url: str | None,
    named: tuple[str, ...],
    listen: str | None,
    allowed_hosts: tuple[str, ...],
    allowed_origins: tuple[str, ...],
    auth_token_file: str | None,
    allow_sampling: bool,
    allow_elicitation: bool,
    label: str | None,
    init_timeout: float,
    call_timeout: float,
    command: tuple[str, ...],
) -> None:
    """Serve MCP and forward to an upstream MCP server (COMMAND or --upstream-url), with hooks
    on tools/call (pre_tool_use, post_tool_use) and tools/list (list_tools).

    Everything else (resources, prompts, completion, logging, notifications, progress,
    cancellation) passes through untouched.
    """
    try:
        from hookgate.mcp_proxy import McpProxy, UpstreamSpec
        from hookgate.mcp_proxy.serve import serve_http, serve_stdio
    except ModuleNotFoundError as exc:
        raise click.ClickException(
            f"mcp-proxy needs the MCP SDK ({exc.name} is missing): pip install 'hookgate[mcp]'"
        ) from None
    if config_path and gateway_url:
        raise click.UsageError("use --config or --gateway, not both")
    if sum(map(bool, (command, upstream_url, named))) != 1:
        raise click.UsageError(
            "give the upstream as -- COMMAND ARGS..., as --upstream-url URL, or as one or "
            "more --upstream NAME=COMMAND|URL"
        )
    address = _listen_address(listen)
    guard = None
    if address is not None:
        guard = _http_guard(address, allowed_hosts, allowed_origins, auth_token_file)
    elif allowed_hosts or allowed_origins or auth_token_file:
        raise click.UsageError(
            "--allowed-host, --allowed-origin and --auth-token-file need --listen")
    server_requests = frozenset(
        name for name, wanted in (("sampling", allow_sampling),
                                  ("elicitation", allow_elicitation)) if wanted
    )
    # A command upstream inherits the proxy's environment (the MCP client configured it for
    # the server), minus hookgate's own settings such as HOOKGATE_API_KEY.
    child_env = {key: value for key, value in os.environ.items()
                 if not key.startswith("HOOKGATE_")}
    if named:
        upstreams = _named_upstreams(named, child_env)
    elif command:
        upstreams = {label or _default_label(command, None):
                     UpstreamSpec(command=command, env=child_env)}
    else:
        upstreams = {label or _default_label((), upstream_url): UpstreamSpec(url=upstream_url)}
    api_key = os.environ.get("HOOKGATE_API_KEY")
    if gateway_url and not api_key:
        raise click.UsageError("--gateway needs an API key in HOOKGATE_API_KEY")
    if not config_path and not gateway_url:
        logging.getLogger("hookgate.mcp_proxy").warning(
            "hookgate mcp-proxy: no --config or --gateway; forwarding without hooks")

    async def main() -> None:
        async with _evaluator(config_path, gateway_url, api_key) as (evaluate, wants):
            proxy = McpProxy(upstreams, evaluate, init_timeout_s=init_timeout,
                             request_timeout_s=call_timeout, wants=wants,
                             server_requests=server_requests)
            if address is None:
                await serve_stdio(proxy)
            else:
                await serve_http(proxy, *address, guard=guard)

    with contextlib.suppress(KeyboardInterrupt):  # Ctrl-C is how an interactive run ends
        anyio.run(main)


def _http_guard(
    address: tuple[str, int],
    hosts: tuple[str, ...],
    origins: tuple[str, ...],
    token_file: str | None,
) -> Any:
    from hookgate.mcp_proxy.http_guard import HttpGuard

    token = os.environ.get("HOOKGATE_MCP_PROXY_TOKEN")
    if token_file:
        token = Path(token_file).read_text().strip()
        if not token:
            raise click.BadParameter(f"{token_file} is empty", param_hint="--auth-token-file")
    elif token is not None:
        token = token.strip()
        if not token:
            raise click.UsageError("HOOKGATE_MCP_PROXY_TOKEN is set but empty")
    try:
        return HttpGuard.build(*address, extra_hosts=hosts, extra_origins=origins, token=token)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--allowed-host") from None


_NAME = re.compile(r"^[A-Za-z0-9-]+(_[A-Za-z0-9-]+)*$")


def _named_upstreams(values: tuple[str, ...], env: dict[str, str]) -> dict[str, Any]:
    from hookgate.mcp_proxy import UpstreamSpec

    upstreams: dict[str, Any] = {}
    for value in values:
        name, sep, target = value.partition("=")
        if not sep or not target.strip():
            raise click.BadParameter(f"expected NAME=COMMAND or NAME=URL, got {value!r}",
                                     param_hint="--upstream")
        if not _NAME.match(name) or "__" in name:
            raise click.BadParameter(
                f"upstream name {name!r}: letters, digits, '-' and single '_' only",
                param_hint="--upstream")
        if name in upstreams:
            raise click.BadParameter(f"upstream {name!r} given twice", param_hint="--upstream")
        if target.startswith(("http://", "https://")):
            upstreams[name] = UpstreamSpec(url=target)
        else:
            upstreams[name] = UpstreamSpec(command=tuple(shlex.split(target)), env=env)
    return upstreams


_LAUNCHERS = frozenset({"python", "node", "npx", "uvx", "uv", "sh", "bash", "deno", "bun"})


def _default_label(command: tuple[str, ...], url: str | None) -> str:
    if url:
        from urllib.parse import urlsplit

        return urlsplit(url).hostname or "upstream"
    program = Path(command[0]).name
    if program.rstrip("0123456789.") in _LAUNCHERS:
        # `python server.py`, `npx -y pkg`: the thing launched names the server better.
        program = next((word for word in command[1:] if not word.startswith("-")), program)
    return Path(program).stem or "upstream"


@asynccontextmanager
async def _evaluator(
    config_path: str | None, gateway_url: str | None, api_key: str | None
) -> AsyncIterator[tuple[Evaluate, Wants | None]]:
    """How hooks are evaluated, and (for a local engine) which events have any hook: a
    gateway's hooks can change at any time, so with one every event is asked."""
    from hookgate.config import ConfigError
    from hookgate.engine import Engine
    from hookgate.integrations.claude_code.contract import engine_evaluator, gateway_evaluator

    if gateway_url:
        from hookgate.client import AsyncGatewayClient

        async with AsyncGatewayClient(gateway_url, api_key or "") as client:
            yield gateway_evaluator(client), None
        return
    engine = Engine(settings=Settings.from_env())
    try:
        if config_path:
            try:
                engine.load(config_path)
            except ConfigError as exc:
                raise click.ClickException(
                    f"hooks file {config_path} is invalid: {'; '.join(exc.problems)}"
                ) from None
        yield engine_evaluator(engine), engine.source.has_event
    finally:
        await engine.aclose()
