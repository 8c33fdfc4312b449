"""Attacks on ``hookgate mcp-proxy``: the real ``mcp`` SDK client, a real ``hookgate
mcp-proxy`` process and a real, hostile MCP server (``servers/hostile_mcp.py``), over stdio
and over the proxy's HTTP listener; for ``--gateway``, a real ``hookgate serve``.

Attacker positions: **tool** (a tool's output or input is the attacker's), **mcp** (the
attacker is the MCP server, or a client or web page reaching the proxy's listener).
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import ExitStack, asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from tests.conftest import require_service
from tests.mcp_proxy.proxy_support import (
    HAVE_MCP,
    HOOKGATE,
    REPO,
    Client,
    free_port,
    http_process,
    proxy_client,
    proxy_env,
    read_calls,
    text_of,
    types,
)

HOSTILE = str(REPO / "tests" / "attacks" / "servers" / "hostile_mcp.py")
HOOKFNS = "tests.attacks.mcp_hookfns"
TOKEN = "ghp_A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
LOOKALIKE = "delete_f\u0456le"


@pytest.fixture(autouse=True)
def _mcp_sdk() -> None:
    require_service("mcp", HAVE_MCP, "the MCP SDK is missing: pip install 'hookgate[mcp]'")


def hooks_file(tmp_path: Path, **hooks: str) -> str:
    """A hooks file: event name -> the function of ``mcp_hookfns`` hooked there."""
    path = tmp_path / "hooks.json"
    path.write_text(json.dumps({"hooks": [
        {"name": f"{event}-{function}", "event": event, "handler_type": "callable",
         "config": {"callable": f"{HOOKFNS}:{function}"}}
        for event, function in hooks.items()
    ]}))
    return str(path)


def hostile(state: Path, *extra: str) -> list[str]:
    return [sys.executable, HOSTILE, "--state", str(state), *extra]


Connect = Callable[..., Any]


@asynccontextmanager
async def over_stdio(
    tmp_path: Path, proxy_args: list[str], **client_options: Any
) -> AsyncIterator[Client]:
    async with proxy_client(
        [*proxy_args, "--", *hostile(tmp_path)], tmp_path / "proxy.log", **client_options
    ) as client:
        yield client


@asynccontextmanager
async def over_http(
    tmp_path: Path,
    proxy_args: list[str],
    *,
    listen: str = "127.0.0.1",
    connect_to: str = "127.0.0.1",
    headers: dict[str, str] | None = None,
    **client_options: Any,
) -> AsyncIterator[Client]:
    """A proxy serving HTTP on ``listen``; the client reaches it at ``connect_to`` with
    ``headers`` (a forged ``Host``, an ``Origin``, a token)."""
    import httpx2
    from mcp.client.streamable_http import streamable_http_client

    port = free_port()
    command = [HOOKGATE, "mcp-proxy", *proxy_args, "--listen", f"{listen}:{port}",
               "--", *hostile(tmp_path)]
    with http_process(command, port, tmp_path / "proxy.log", host=connect_to):
        async with httpx2.AsyncClient(headers=headers or {}, timeout=30) as http:
            transport = streamable_http_client(f"http://{connect_to}:{port}/mcp",
                                               http_client=http)
            async with Client(transport, **client_options) as client:  # type: ignore[arg-type]
                yield client


TRANSPORTS = pytest.mark.parametrize("connect", [over_stdio, over_http], ids=["stdio", "http"])


# -- item 10: post_tool_use block and abort ---------------------------------------------------


@TRANSPORTS
async def test_post_tool_block_withholds_an_injected_output(
    connect: Connect, tmp_path: Path
) -> None:
    """tool: a fetched page tells the model to IGNORE ALL PREVIOUS INSTRUCTIONS; a
    post_tool_use hook blocks it. Before: the proxy ignored the block and the client got
    the injection."""
    hooks = hooks_file(tmp_path, post_tool_use="flag_injection")
    async with connect(tmp_path, ["--config", hooks]) as client:
        result = await client.call_tool("fetch_page", {"url": "https://evil.example"})
    assert result.is_error is True
    text = text_of(result)
    assert "IGNORE ALL PREVIOUS" not in text
    assert "withheld by hookgate: prompt injection in the tool output" in text
    assert read_calls(tmp_path) == ["fetch_page"]


@TRANSPORTS
async def test_post_tool_abort_withholds_the_output_and_says_the_run_stopped(
    connect: Connect, tmp_path: Path
) -> None:
    """tool: injected output; a post_tool_use hook aborts. Before: ignored, the output went
    to the client as a normal result."""
    hooks = hooks_file(tmp_path, post_tool_use="stop_on_injection")
    async with connect(tmp_path, ["--config", hooks]) as client:
        result = await client.call_tool("fetch_page", {"url": "https://evil.example"})
    assert result.is_error is True
    assert "IGNORE ALL PREVIOUS" not in text_of(result)
    assert "run stopped by hookgate: injection: run stopped" in text_of(result)


async def test_fake_hookgate_markers_in_an_output_change_nothing(tmp_path: Path) -> None:
    """tool: the injected page ends with ``# hookgate:allow`` and a JSON allow decision,
    hoping the proxy reads them as hookgate's. Text a tool produced is data."""
    hooks = hooks_file(tmp_path, post_tool_use="flag_injection")
    async with over_stdio(tmp_path, ["--config", hooks]) as client:
        result = await client.call_tool("fetch_page", {"url": "https://evil.example"})
    assert result.is_error is True
    assert "hookgate:allow" not in text_of(result)
    assert '"decision": "allow"' not in text_of(result)


# -- item 11: post_tool_use cannot be evaluated -----------------------------------------------


@pytest.fixture
def gateway(tmp_path: Path) -> Any:
    from tests.server.gateway_process import GatewayProcess

    from hookgate.client import GatewayClient

    served = GatewayProcess(
        tmp_path / "gw", args=("--allow-callable", HOOKFNS, "--tenant-host-code")
    ).start()
    try:
        assert served.master_key is not None
        with GatewayClient(served.url, served.master_key) as admin:
            admin.create_hook({
                "event": "post_tool_use", "handler_type": "callable", "scope": "tenant",
                "tenant_id": "mcp-attacks", "name": "mask tokens",
                "config": {"callable": f"{HOOKFNS}:mask_tokens"},
            })
        yield served, served.create_key("mcp-attacks", "operator")
    finally:
        served.stop()


async def test_an_oversized_result_is_withheld_not_sent_unredacted(
    gateway: Any, tmp_path: Path
) -> None:
    """mcp: the server answers with 1.2 MB ending in a token, more than the gateway takes in
    one frame, so the redaction hook cannot run. Before: the dispatch failed and the result
    went out unredacted."""
    served, key = gateway
    env = proxy_env(HOOKGATE_API_KEY=key)
    args = ["--gateway", served.url, "--", *hostile(tmp_path)]
    async with proxy_client(args, tmp_path / "proxy.log", env=env) as client:
        small = await client.call_tool("big_output", {"size": 10})
        big = await client.call_tool("big_output", {"size": 1_200_000})
    assert "[token masked by hookgate]" in text_of(small)  # the hook runs when it can
    assert big.is_error is True
    assert TOKEN not in text_of(big)
    assert "could not check this tool output" in text_of(big)
    # refused by size at once, under its request id (it waited out the client's 30 s timeout)
    assert "big_output failed (GatewayError); withheld" in (tmp_path / "proxy.log").read_text()


async def test_a_gateway_lost_after_the_call_withholds_the_result(
    gateway: Any, tmp_path: Path
) -> None:
    """mcp: the server kills the gateway while it runs the call (so pre_tool_use passed),
    then answers with a token. Before: the post_tool_use dispatch failed and the token went
    out unredacted."""
    served, key = gateway
    env = proxy_env(HOOKGATE_API_KEY=key)
    args = ["--gateway", served.url, "--", *hostile(tmp_path)]
    async with proxy_client(args, tmp_path / "proxy.log", env=env) as client:
        result = await client.call_tool("leak_after_stopping", {"pid": served.proc.pid})
    assert result.is_error is True
    assert TOKEN not in text_of(result)
    assert "withheld" in text_of(result)
    assert read_calls(tmp_path) == ["leak_after_stopping"]


# -- item 12: who may reach the HTTP listener -------------------------------------------------


async def _delete_through(client_cm: Any) -> str:
    async with client_cm as client:
        return text_of(await client.call_tool("delete_file", {"path": "/home/me/notes"}))


@pytest.mark.parametrize("listen", ["127.0.0.2", "0.0.0.0"])
async def test_dns_rebinding_with_a_foreign_host_is_refused(listen: str, tmp_path: Path) -> None:
    """mcp: a web page at evil.example, its name rebound to the proxy's address, drives the
    listener (``Host: evil.example``) to call delete_file. Before: only 127.0.0.1, localhost
    and ::1 listeners checked Host; on 127.0.0.2 or 0.0.0.0 the delete ran."""
    hooks = hooks_file(tmp_path, list_tools="hide_delete_file")
    connect_to = "127.0.0.2" if listen == "127.0.0.2" else "127.0.0.1"
    attempt = over_http(tmp_path, ["--config", hooks], listen=listen, connect_to=connect_to,
                        headers={"Host": "evil.example"})
    with pytest.raises(Exception):  # noqa: B017 - the SDK's error for a 421 varies by era
        await _delete_through(attempt)
    assert "delete_file" not in read_calls(tmp_path)


async def test_a_cross_site_origin_is_refused_on_a_wildcard_listener(tmp_path: Path) -> None:
    """mcp: a page on https://evil.example posts to a proxy listening on 0.0.0.0, through
    a Host the listener accepts; its Origin gives it away. Before: nothing was checked."""
    attempt = over_http(tmp_path, [], listen="0.0.0.0",
                        headers={"Origin": "https://evil.example"})
    with pytest.raises(Exception):  # noqa: B017
        await _delete_through(attempt)
    assert "delete_file" not in read_calls(tmp_path)


async def test_an_operator_allowed_host_is_admitted(tmp_path: Path) -> None:
    """mcp (control): the Host check does not lock out the names the operator allowed."""
    async with over_http(tmp_path, ["--allowed-host", "proxy.internal"], listen="0.0.0.0",
                         headers={"Host": "proxy.internal:1234"}) as client:
        result = await client.call_tool("read_file", {"path": "a.txt"})
    assert text_of(result) == "contents of a.txt"


async def test_without_the_bearer_token_the_listener_refuses(tmp_path: Path) -> None:
    """mcp: any client that reaches a listener with a token set calls tools without it, or
    with a guessed one. Before: the listener had no authentication option at all."""
    token_file = tmp_path / "token"
    token_file.write_text("s3cret-proxy-token\n")
    args = ["--auth-token-file", str(token_file)]
    for headers in ({}, {"Authorization": "Bearer s3cret-proxy-tokem"},
                    {"Authorization": "s3cret-proxy-token"}):
        with pytest.raises(Exception):  # noqa: B017
            await _delete_through(over_http(tmp_path, args, headers=headers))
    assert "delete_file" not in read_calls(tmp_path)
    done = await _delete_through(
        over_http(tmp_path, args, headers={"Authorization": "Bearer s3cret-proxy-token"})
    )
    assert done == "deleted /home/me/notes"


# -- item 13: what the client may call, and what the server may ask ---------------------------


@TRANSPORTS
async def test_a_tool_the_upstream_never_listed_is_refused(
    connect: Connect, tmp_path: Path
) -> None:
    """mcp: the server's listing leaves out admin_wipe, which still runs when called; the
    list_tools allow-list never saw it, so it never hid it. Before: admin_wipe ran."""
    hooks = hooks_file(tmp_path, list_tools="read_only_tools")
    async with connect(tmp_path, ["--config", hooks]) as client:
        listed = {tool.name for tool in (await client.list_tools()).tools}
        wiped = await client.call_tool("admin_wipe", {})
    assert "admin_wipe" not in listed
    assert wiped.is_error is True and "not available" in text_of(wiped)
    assert "admin_wipe" not in read_calls(tmp_path)


@TRANSPORTS
async def test_a_lookalike_of_a_hidden_tool_is_neither_listed_nor_callable(
    connect: Connect, tmp_path: Path
) -> None:
    """mcp: the server lists ``delete_fіle`` (a Cyrillic і), slipping past a deny-list that
    hides ``delete_file``, and describes it as harmless. Before: listed and callable."""
    hooks = hooks_file(tmp_path, list_tools="hide_delete_file")
    async with connect(tmp_path, ["--config", hooks]) as client:
        listed = {tool.name for tool in (await client.list_tools()).tools}
        called = await client.call_tool(LOOKALIKE, {"path": "/"})
    assert LOOKALIKE not in listed and "delete_file" not in listed
    assert called.is_error is True
    assert "delete_file_lookalike" not in read_calls(tmp_path)


async def test_control_characters_in_a_tool_name_do_not_reach_the_upstream(
    tmp_path: Path,
) -> None:
    """mcp client: ``delete_file`` with a NUL, a newline or a zero-width space appended, so
    an exact-name hook does not match it while a lenient server strips the extra."""
    hooks = hooks_file(tmp_path, pre_tool_use="no_deletes", list_tools="hide_delete_file")
    async with over_stdio(tmp_path, ["--config", hooks]) as client:
        for name in ("delete_file\x00", "delete_file\n", "delete_file\u200b", "DELETE_FILE"):
            result = await client.call_tool(name, {"path": "/"})
            assert result.is_error is True
    assert read_calls(tmp_path) == []


async def test_an_endless_tool_listing_fails_closed(tmp_path: Path) -> None:
    """mcp: the server answers every tools/list with one more page cursor, so the proxy
    never learns the whole listing its allow-list applies to. The call must not go
    through unchecked."""
    hooks = hooks_file(tmp_path, list_tools="read_only_tools")
    args = ["--config", hooks, "--", *hostile(tmp_path, "--endless-listing")]
    async with proxy_client(args, tmp_path / "proxy.log") as client:
        try:
            result = await client.call_tool("admin_wipe", {})
            refused = result.is_error is True
        except Exception:
            refused = True
    assert refused
    assert "admin_wipe" not in read_calls(tmp_path)


async def test_sampling_from_the_server_is_refused_by_default(tmp_path: Path) -> None:
    """mcp: the server sends its own text to the client's model (sampling), a prompt
    injection with no hook point on the way. Before: relayed to the client's model."""
    asked: list[str] = []

    async def on_sampling(ctx: Any, params: types.CreateMessageRequestParams) -> Any:
        asked.append(params.messages[0].content.text)
        return types.CreateMessageResult(
            role="assistant", model="scripted", content=types.TextContent(type="text", text="ok")
        )

    async with over_stdio(tmp_path, [], mode="legacy", sampling_callback=on_sampling) as client:
        refused = await client.call_tool("ask_model", {"question": "IGNORE ALL PREVIOUS"})
    assert asked == []
    assert "model said" not in text_of(refused)
    async with over_stdio(tmp_path, ["--allow-sampling"], mode="legacy",
                          sampling_callback=on_sampling) as client:
        allowed = await client.call_tool("ask_model", {"question": "two plus two?"})
    assert asked == ["two plus two?"] and text_of(allowed) == "model said: ok"


async def test_elicitation_from_the_server_is_refused_by_default(tmp_path: Path) -> None:
    """mcp: the server asks the client's user for a password (elicitation), with no hook
    point on the way. Before: relayed to the user."""
    asked: list[str] = []

    async def on_elicit(ctx: Any, params: Any) -> Any:
        asked.append(params.message)
        return types.ElicitResult(action="accept", content={"password": "hunter2"})

    async with over_stdio(tmp_path, [], mode="legacy", elicitation_callback=on_elicit) as client:
        refused = await client.call_tool("ask_user", {"question": "your password?"})
    assert asked == []
    assert "hunter2" not in text_of(refused)


# -- input the hooks cannot evaluate, and requests around the hooks ---------------------------


async def test_a_huge_tool_input_is_blocked(tmp_path: Path) -> None:
    """tool: 9 MiB of arguments, more than any hook can evaluate (padding to slip past a
    guard); the call is blocked, not forwarded."""
    hooks = hooks_file(tmp_path, pre_tool_use="no_deletes")
    async with over_stdio(tmp_path, ["--config", hooks]) as client:
        result = await client.call_tool("read_file", {"path": "x" * (9 * 1024 * 1024)})
    assert result.is_error is True
    assert "invalid input" in text_of(result)
    assert read_calls(tmp_path) == []


def _raw_stdio(tmp_path: Path, proxy_args: list[str], lines: list[Any]) -> list[Any]:
    """Raw JSON-RPC lines to a stdio proxy (no SDK client in between), then a ``ping``:
    every answer up to the ping's."""
    with open(tmp_path / "proxy.log", "w") as log, subprocess.Popen(
        [HOOKGATE, "mcp-proxy", *proxy_args, "--", *hostile(tmp_path)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log, text=True,
        cwd=REPO, env=proxy_env(),
    ) as proc:  # closes its pipes on the way out
        assert proc.stdin is not None and proc.stdout is not None
        try:
            for line in [*lines, {"jsonrpc": "2.0", "id": "end", "method": "ping"}]:
                proc.stdin.write(json.dumps(line) + "\n")
                proc.stdin.flush()
            answers: list[Any] = []
            while not answers or not (isinstance(answers[-1], dict)
                                      and answers[-1].get("id") == "end"):
                answers.append(json.loads(proc.stdout.readline()))
            return answers
        finally:
            proc.stdin.close()
            proc.wait(timeout=30)


def _initialize(request_id: int) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "raw", "version": "1"}}}


def _call(request_id: int, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "method": "tools/call",
            "params": {"name": name, "arguments": arguments}}


def test_a_batch_cannot_smuggle_a_blocked_call_past_the_hooks(tmp_path: Path) -> None:
    """mcp client: a JSON-RPC batch wrapping a blocked tools/call (and one of an unlisted
    tool), hoping the batch takes a path the per-call hooks do not see."""
    hooks = hooks_file(tmp_path, pre_tool_use="no_deletes", list_tools="read_only_tools")
    initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    batch = [_call(2, "delete_file", {"path": "/"}), _call(3, "admin_wipe", {})]
    answers = _raw_stdio(tmp_path, ["--config", hooks], [_initialize(1), initialized, batch])
    assert answers[0]["id"] == 1 and answers[-1]["id"] == "end"
    assert "delete_file" not in read_calls(tmp_path)
    assert "admin_wipe" not in read_calls(tmp_path)


def test_raw_http_requests_with_a_foreign_host_are_refused(tmp_path: Path) -> None:
    """mcp: the rebinding attack without an SDK client: a raw initialize POST with
    ``Host: evil.example`` to a proxy on 127.0.0.2 gets no session."""
    import httpx

    port = free_port()
    command = [HOOKGATE, "mcp-proxy", "--listen", f"127.0.0.2:{port}", "--", *hostile(tmp_path)]
    with ExitStack() as stack:
        stack.enter_context(http_process(command, port, tmp_path / "proxy.log", host="127.0.0.2"))
        answer = httpx.post(
            f"http://127.0.0.2:{port}/mcp", json=_initialize(1),
            headers={"Host": "evil.example", "Accept": "application/json, text/event-stream"},
            timeout=30,
        )
    assert answer.status_code == 421
    assert "mcp-session-id" not in answer.headers



def test_a_batch_over_http_cannot_smuggle_calls(tmp_path: Path) -> None:
    """mcp client: the batch smuggling attempt over the HTTP listener, inside a real session:
    a JSON array holding a blocked call and an unlisted one."""
    import httpx

    hooks = hooks_file(tmp_path, pre_tool_use="no_deletes", list_tools="read_only_tools")
    port = free_port()
    command = [HOOKGATE, "mcp-proxy", "--config", hooks, "--listen", f"127.0.0.1:{port}",
               "--", *hostile(tmp_path)]
    accept = {"Accept": "application/json, text/event-stream"}
    with http_process(command, port, tmp_path / "proxy.log"), httpx.Client(timeout=30) as http:
        url = f"http://127.0.0.1:{port}/mcp"
        opened = http.post(url, json=_initialize(1), headers=accept)
        assert opened.status_code == 200
        session = {**accept, "mcp-session-id": opened.headers["mcp-session-id"],
                   "mcp-protocol-version": "2025-06-18"}
        http.post(url, json={"jsonrpc": "2.0", "method": "notifications/initialized"},
                  headers=session)
        batch = [_call(2, "delete_file", {"path": "/"}), _call(3, "admin_wipe", {})]
        smuggled = http.post(url, json=batch, headers=session)
        assert smuggled.status_code == 400  # batches are not part of MCP any more
        assert "deleted" not in smuggled.text and "wiped" not in smuggled.text
    assert "delete_file" not in read_calls(tmp_path)
    assert "admin_wipe" not in read_calls(tmp_path)


async def test_one_clients_listing_does_not_open_a_tool_to_another(tmp_path: Path) -> None:
    """mcp client: two clients share one HTTP listener; a list_tools hook shows delete_file
    only to the first (its payload names the session). The second calls delete_file right
    after the first listed again. Before: what may be called was one set for every client,
    so the first client's listing opened the tool to the second."""
    hooks = hooks_file(tmp_path, list_tools="first_session_only_deletes")
    port = free_port()
    command = [HOOKGATE, "mcp-proxy", "--config", hooks, "--listen", f"127.0.0.1:{port}",
               "--", *hostile(tmp_path)]
    url = f"http://127.0.0.1:{port}/mcp"
    with http_process(command, port, tmp_path / "proxy.log"):
        async with Client(url, mode="legacy") as operator, Client(url, mode="legacy") as other:
            assert "delete_file" in {t.name for t in (await operator.list_tools()).tools}
            assert "delete_file" not in {t.name for t in (await other.list_tools()).tools}
            assert text_of(await other.call_tool("read_file", {"path": "a"})) == "contents of a"
            await operator.list_tools()
            refused = await other.call_tool("delete_file", {"path": "/"})
            assert refused.is_error is True and "not available" in text_of(refused)
            done = await operator.call_tool("delete_file", {"path": "/tmp/x"})
            assert text_of(done) == "deleted /tmp/x"
    assert read_calls(tmp_path) == ["read_file", "delete_file"]
