"""Two real gateway replicas on one PostgreSQL database share prompt-hook state in Redis."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import asyncpg
import pytest
from tests.conftest import require_service
from tests.server.gateway_process import GatewayProcess
from tests.server.wsutil import ok, open_ws
from tests.store.conftest import PG_URL, need_postgres
from tests.support.llm_server import ScriptedLLM, decide

REDIS_URL = "redis://127.0.0.1:6379/0"
KEY_ENV = "HOOKGATE_TEST_LLM_KEY"

pytestmark = [pytest.mark.redis, pytest.mark.postgres]


def _redis_up() -> tuple[bool, str]:
    from hookgate.handlers.prompt.redis_state import connect

    async def ping() -> None:
        client = connect(REDIS_URL)
        try:
            await client.ping()
        finally:
            await client.aclose()

    try:
        asyncio.run(ping())
    except Exception as exc:
        return False, str(exc)
    return True, ""


@pytest.fixture
def database() -> Iterator[str]:
    need_postgres()
    name = f"hg_replicas_{uuid.uuid4().hex[:10]}"

    async def admin(sql: str) -> None:
        conn = await asyncpg.connect(PG_URL)
        try:
            await conn.execute(sql)
        finally:
            await conn.close()

    asyncio.run(admin(f'CREATE DATABASE "{name}"'))
    try:
        yield PG_URL.rsplit("/", 1)[0] + "/" + name
    finally:
        asyncio.run(admin(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))


def test_a_decision_paid_for_on_one_replica_serves_the_other(
    tmp_path: Path, database: str
) -> None:
    require_service("Redis", *_redis_up())
    env = {"HOOKGATE_SSRF_ALLOWLIST": "127.0.0.1/32", KEY_ENV: "test-key-123"}
    with ScriptedLLM(api_key="test-key-123") as llm:
        provider = f"name=scripted,format=openai,base_url={llm.openai_url},api_key_env={KEY_ENV}"
        args = ("--redis-url", REDIS_URL, "--llm-provider", provider)
        llm.script(decide("block", "deleting the build directory"))
        first = GatewayProcess(tmp_path / "a", args=args, env=env, database_url=database).start()
        second = GatewayProcess(tmp_path / "b", args=args, env=env, database_url=database)
        try:
            second.start()
            master = first.master_key
            assert master is not None
            event = {"event": "pre_tool_use", "input": {
                "tool_name": "exec", "tool_input": {"cmd": "rm -rf build"},
                "session_id": "s1", "turn_id": "t1"}}
            with open_ws(first.ws_url, master) as ws:
                ok(ws, "hooks.create", {
                    "event": "pre_tool_use", "handler_type": "prompt", "scope": "tenant",
                    "name": "llm guard", "matcher": "^exec$",
                    "config": {"prompt_template": "Block destructive commands.",
                               "model": "gpt-4o-mini", "provider": "scripted"},
                })
                assert ok(ws, "hooks.dispatch", event)["decision"] == "block"
            assert len(llm.requests) == 1
            # The second replica learns of the hook from PostgreSQL, then answers the same
            # input from the shared cache: no second model call.
            with open_ws(second.ws_url, master) as ws:
                deadline = time.monotonic() + 10
                while True:
                    outcome = ok(ws, "hooks.dispatch", event)
                    if outcome["trace"] or time.monotonic() > deadline:
                        break
                    time.sleep(0.1)
            assert outcome["decision"] == "block"
            assert len(llm.requests) == 1
        finally:
            second.stop()
            first.stop()
