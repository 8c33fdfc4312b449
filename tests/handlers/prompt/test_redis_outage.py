"""A Redis outage is the gateway's failure, not the hook's: it fails closed while Redis is
down and never opens the hook's circuit breaker, so the hook works again as soon as Redis is
back (it used to stay down for the breaker's whole cool-down)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from tests.handlers.conftest import LOOPBACK
from tests.handlers.prompt.test_handler import fire, prompt_hook
from tests.support.llm_server import ScriptedLLM, decide
from tests.support.replicas import RedisServer

from hookgate import Engine
from hookgate.handlers.base import Services
from hookgate.handlers.prompt.redis_state import RedisDecisionCache, RedisTurnCounter, connect
from hookgate.llm.budget import MemoryBudgetStore

pytestmark = pytest.mark.redis


@pytest.fixture
def redis_server(tmp_path: Path) -> Iterator[RedisServer]:
    server = RedisServer(tmp_path / "redis").start()
    yield server
    server.stop()


@pytest.fixture
async def redis_engine(redis_server: RedisServer) -> AsyncIterator[Engine]:
    client = connect(redis_server.url)
    services = Services(
        LOOPBACK,
        budget_store=MemoryBudgetStore(),
        decision_cache=RedisDecisionCache(client),
        turn_counter=RedisTurnCounter(client),
    )
    engine = Engine(settings=LOOPBACK, services=services)
    yield engine
    await engine.aclose()
    await client.aclose()


async def test_redis_outage_fails_closed_and_never_trips_the_breaker(
    redis_engine: Engine, redis_server: RedisServer, llm: ScriptedLLM
) -> None:
    llm.default = decide("allow", "fine")
    hook = redis_engine.add(prompt_hook(llm, config={"max_invocations_per_turn": 100},
                                        on_error="allow"))
    assert (await fire(redis_engine, "before")).decision == "allow"
    redis_server.stop()
    threshold = redis_engine.breakers.threshold
    for n in range(threshold * 2):
        down = await fire(redis_engine, f"down {n}")
        # The guard could not be evaluated: blocked, although the hook says on_error=allow.
        assert down.decision == "block", down.reason
        assert "unavailable" in (down.reason or "")
    status = redis_engine.breakers.status(hook.id)
    assert status.state == "closed" and not status.faults
    redis_server.start()
    # Back at once: no cool-down to wait for, and the pooled connection Redis dropped is
    # replaced without failing the first call.
    after = await fire(redis_engine, "after")
    assert after.decision == "allow", after.reason
    assert len(llm.requests) == 2
