"""Adapters against a real ``hookgate serve``: agents in two frameworks share one gateway's
tenant hooks and audit log, and hostile or refused requests never let a tool run."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator

import pytest
from tests.adapters.support import require_package
from tests.server.conftest import start_gateway
from tests.server.gateway_process import GatewayProcess

require_package("langchain", "langchain")
require_package("pydantic_ai", "pydantic-ai")

from tests.adapters.test_langchain import Harness as LangChainHarness  # noqa: E402
from tests.adapters.test_pydantic_ai import Harness as PydanticHarness  # noqa: E402

from hookgate.adapters import HookgateAbort  # noqa: E402
from hookgate.client import AsyncGatewayClient, GatewayClient  # noqa: E402

GUARD = {
    "event": "pre_tool_use",
    "handler_type": "callable",
    "scope": "tenant",
    "name": "no-shell",
    "matcher": "^shell$",
    "config": {"callable": "tests.server.hookfns:block"},
}


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayProcess]:
    gateway = start_gateway(tmp_path_factory.mktemp("fleet"), "--max-frame-bytes", "65536")
    try:
        yield gateway
    finally:
        gateway.stop()


@pytest.fixture(scope="module")
def tenant(served: GatewayProcess) -> dict[str, str]:
    admin = served.create_key("fleet", "admin")
    with GatewayClient(served.url, admin) as client:
        hook_id = client.create_hook(GUARD)["hookId"]
    return {
        "admin": admin,
        "operator": served.create_key("fleet", "operator"),
        "viewer": served.create_key("fleet", "viewer"),
        "hook": hook_id,
    }


def test_two_frameworks_share_the_tenant_hooks_and_audit(
    served: GatewayProcess, tenant: dict[str, str]
) -> None:
    with GatewayClient(served.url, tenant["operator"]) as sync_client:
        langchain = LangChainHarness(sync_client, "sync")
        langchain.run()
    assert langchain.received == []
    assert "blocked by test hook on pre_tool_use" in langchain.tool_message().text

    async def pydantic_run() -> PydanticHarness:
        async with AsyncGatewayClient(served.url, tenant["operator"]) as client:
            harness = PydanticHarness(client)
            await harness.run()
            return harness

    pydantic = asyncio.run(pydantic_run())
    assert pydantic.received == []
    assert "blocked by test hook" in pydantic.tool_result().model_response_str()

    # The audit log is written in batches: poll it (bounded) until both rows are there.
    with GatewayClient(served.url, tenant["admin"]) as admin:
        deadline = time.monotonic() + 20
        while True:
            rows = admin.history(hookId=tenant["hook"], decision="block")["executions"]
            if len(rows) >= 2 or time.monotonic() > deadline:
                break
            time.sleep(0.1)
    assert len(rows) == 2
    assert {row["agent_id"] for row in rows} == {"ops-agent"}
    assert "thread-7" in {row["session_id"] for row in rows}  # LangChain's thread id
    assert {row["tenant_id"] for row in rows} == {"fleet"}


def test_a_key_that_may_not_dispatch_blocks_the_run(
    served: GatewayProcess, tenant: dict[str, str]
) -> None:
    with GatewayClient(served.url, tenant["viewer"]) as client:
        harness = LangChainHarness(client, "sync")
        with pytest.raises(Exception, match="hookgate could not decide"):
            harness.run()
    assert harness.model.seen == []
    assert harness.received == []


def test_oversized_tool_arguments_from_the_model_never_run(
    served: GatewayProcess, tenant: dict[str, str]
) -> None:
    # A hostile model answers with arguments past the gateway's frame limit: the gateway
    # refuses the frame, the adapter gets no decision, and neither the answer nor the tool
    # call goes any further.
    with GatewayClient(served.url, tenant["operator"], timeout=3) as client:
        harness = LangChainHarness(client, "sync", args={"cmd": "x" * 200_000})
        with pytest.raises(HookgateAbort, match="after_llm"):
            harness.run()
    assert harness.received == []
    assert len(harness.model.seen) == 1
