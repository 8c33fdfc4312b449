"""Shared prompt-hook state in a real Redis (127.0.0.1:6379); mandatory under CI=true."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
from redis.asyncio import Redis
from tests.conftest import require_service
from tests.handlers.conftest import KEY_ENV, LOOPBACK
from tests.support.llm_server import ScriptedLLM, decide

from hookgate import Engine
from hookgate.handlers.base import Services
from hookgate.handlers.prompt.redis_state import RedisDecisionCache, RedisTurnCounter, connect

REDIS_URL = "redis://127.0.0.1:6379/0"

pytestmark = pytest.mark.redis


@pytest.fixture
async def prefix() -> AsyncIterator[str]:
    client = connect(REDIS_URL)
    try:
        await client.ping()
        available, why = True, ""
    except Exception as exc:  # connection refused, timeout
        available, why = False, str(exc)
    require_service("Redis", available, why)
    name = f"hookgate-test-{uuid.uuid4().hex[:12]}:"
    yield name
    keys = [key async for key in client.scan_iter(match=name + "*")]
    if keys:
        await client.delete(*keys)
    await client.aclose()


@pytest.fixture
async def clients(prefix: str) -> AsyncIterator[Callable[[], Redis]]:
    """Makes Redis clients for a test and closes them after it."""
    made: list[Redis] = []

    def new() -> Redis:
        made.append(connect(REDIS_URL))
        return made[-1]

    yield new
    for client in made:
        await client.aclose()


async def _expired(client: Redis, name: str) -> None:
    """Wait until Redis has dropped ``name`` because its TTL ran out (polled)."""
    deadline = time.monotonic() + 10
    while await client.exists(name):
        assert time.monotonic() < deadline, f"{name} never expired"
        await asyncio.sleep(0.02)


async def test_decisions_round_trip_and_expire(
    prefix: str, clients: Callable[[], Redis]
) -> None:
    client = clients()
    cache = RedisDecisionCache(client, prefix=prefix)
    await cache.put("k", {"decision": "block", "reason": "no"}, ttl_s=0.3)
    assert await cache.get("k") == {"decision": "block", "reason": "no"}
    assert await cache.get("other") is None
    assert 0 < await client.pttl(cache.prefix + "k") <= 300  # Redis holds the hook's TTL
    await _expired(client, cache.prefix + "k")
    assert await cache.get("k") is None


async def test_turn_counter_is_atomic_across_clients(
    prefix: str, clients: Callable[[], Redis]
) -> None:
    counters = [RedisTurnCounter(clients(), prefix=prefix) for _ in range(4)]
    counts = await asyncio.gather(
        *(counters[i % 4].increment("turn-1", ttl_s=30) for i in range(100))
    )
    assert sorted(counts) == list(range(1, 101))
    assert await counters[0].increment("turn-2", ttl_s=30) == 1


async def test_turn_counter_expires_after_its_last_use(
    prefix: str, clients: Callable[[], Redis]
) -> None:
    client = clients()
    counter = RedisTurnCounter(client, prefix=prefix)
    assert await counter.increment("t", ttl_s=30) == 1
    assert await counter.increment("t", ttl_s=0.3) == 2
    assert 0 < await client.pttl(counter.prefix + "t") <= 300  # the last use set the TTL
    await _expired(client, counter.prefix + "t")
    assert await counter.increment("t", ttl_s=0.3) == 1


def replica(prefix: str, clients: Callable[[], Redis]) -> Engine:
    """One gateway replica's engine: its own process state, Redis for what is shared."""
    services = Services(
        LOOPBACK,
        decision_cache=RedisDecisionCache(clients(), prefix=prefix),
        turn_counter=RedisTurnCounter(clients(), prefix=prefix),
    )
    return Engine(settings=LOOPBACK, services=services)


def prompt_hook(llm: ScriptedLLM, **config: Any) -> dict[str, Any]:
    return {
        "id": "3f0e9a52-0d7c-4a8e-9d1b-5c2f6e7a8b90",  # the same hook on every replica
        "event": "pre_tool_use",
        "handler_type": "prompt",
        "matcher": "^exec$",
        "config": {"prompt_template": "Block destructive commands.", "model": "gpt-4o-mini",
                   "base_url": llm.openai_url, "api_key_env": KEY_ENV, **config},
    }


async def test_replicas_share_decisions_and_the_per_turn_cap(
    prefix: str, llm: ScriptedLLM, clients: Callable[[], Redis]
) -> None:
    first, second = replica(prefix, clients), replica(prefix, clients)
    for engine in (first, second):
        engine.add(prompt_hook(llm, max_invocations_per_turn=2))
    llm.script(decide("block", "rm is destructive"), decide("allow", "fine"), decide("allow"))
    rm = {"tool_name": "exec", "tool_input": {"cmd": "rm -rf build"},
          "session_id": "s1", "turn_id": "t1"}

    assert (await first.fire("pre_tool_use", rm)).decision == "block"
    # The other replica answers the same input from the shared cache: no model call.
    cached = await second.fire("pre_tool_use", rm)
    assert cached.decision == "block" and len(llm.requests) == 1

    ls = {**rm, "tool_input": {"cmd": "ls"}}
    assert (await second.fire("pre_tool_use", ls)).decision == "allow"  # 2nd call this turn
    # A third model call in the turn, on the first replica, is over the shared cap.
    over = await first.fire("pre_tool_use", {**rm, "tool_input": {"cmd": "pwd"}})
    assert over.decision == "block" and len(llm.requests) == 2
    assert "per-turn" in (over.reason or "") or "cap" in (over.reason or "")
    await first.aclose()
    await second.aclose()
