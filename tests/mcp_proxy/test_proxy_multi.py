"""Several upstreams behind one ``hookgate mcp-proxy`` (``--upstream NAME=…``): names are
prefixed ``NAME__``, each request reaches the upstream it names, hooks see the upstream's own
tool names with ``server`` set to NAME."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

from tests.mcp_proxy.proxy_support import (
    DEMO_SERVER,
    HOOKS,
    demo_command,
    free_port,
    http_process,
    proxy_client,
    read_calls,
    text_of,
    types,
)


async def test_two_upstreams_behind_one_proxy(tmp_path: Path) -> None:
    alpha, beta = tmp_path / "alpha", tmp_path / "beta"
    alpha.mkdir()
    beta.mkdir()
    port = free_port()
    beta_server = [sys.executable, DEMO_SERVER, "--state", str(beta), "--http", str(port)]
    with http_process(beta_server, port, tmp_path / "beta.log"):
        args = ["--config", HOOKS,
                "--upstream", f"alpha={shlex.join(demo_command(alpha))}",
                "--upstream", f"beta=http://127.0.0.1:{port}/mcp"]
        async with proxy_client(args, tmp_path / "proxy.log") as client:
            names = {tool.name for tool in (await client.list_tools()).tools}
            assert {"alpha__echo", "alpha__add", "beta__echo", "beta__add"} <= names
            assert not any("secret" in name for name in names)

            # Hooks match the upstream's own names: guard_add applies behind both prefixes.
            blocked = await client.call_tool("beta__add", {"a": 666, "b": 1})
            assert blocked.is_error is True and text_of(blocked) == "666 is not allowed here"
            assert text_of(await client.call_tool("alpha__add", {"a": 1, "b": 2})) == "30"
            assert read_calls(alpha).count("add") == 1
            assert "add" not in read_calls(beta)

            cached = await client.call_tool("beta__echo", {"text": "cached"})
            assert cached.structured_content == {"result": "answered from the cache"}
            assert text_of(await client.call_tool("beta__echo", {"text": "x"})) == "echo: x"
            assert read_calls(beta) == ["echo"]

            for refused in ("alpha__secret_info", "gamma__echo", "echo"):
                result = await client.call_tool(refused, {})
                assert result.is_error is True and "not available" in text_of(result)

            prompts = {prompt.name for prompt in (await client.list_prompts()).prompts}
            assert prompts == {"alpha__greet", "beta__greet"}
            prompt = await client.get_prompt("beta__greet", {"name": "Cy"})
            assert prompt.messages[0].content.text == "Please greet Cy warmly."
            completion = await client.complete(
                types.PromptReference(type="ref/prompt", name="alpha__greet"),
                argument={"name": "name", "value": "B"},
            )
            assert completion.completion.values == ["Bo"]

            resources = (await client.list_resources()).resources
            assert [str(resource.uri) for resource in resources] == ["demo://greeting"] * 2
            read = await client.read_resource("demo://greeting")
            assert [content.text for content in read.contents] == ["hello from the upstream"]
            assert client.instructions is not None and "alpha:" in client.instructions


def test_bad_upstream_options_are_usage_errors() -> None:
    import subprocess

    from tests.mcp_proxy.proxy_support import HOOKGATE, REPO, proxy_env

    for args, message in (
        (["--upstream", "a__b=python x.py"], "letters, digits"),
        (["--upstream", "a=python x.py", "--", "python", "y.py"], "give the upstream as"),
    ):
        done = subprocess.run([HOOKGATE, "mcp-proxy", *args], capture_output=True, text=True,
                              timeout=60, cwd=REPO, env=proxy_env(), stdin=subprocess.DEVNULL)
        assert done.returncode == 1, (args, done.stderr)  # usage errors exit 1 (issue 27)
        assert message in done.stderr, (args, done.stderr)
