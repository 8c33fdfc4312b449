"""Rule hooks on Redis take one round trip per event: the history read, the admit and the
event's history stamp in one script (hookgate.state.shared's rule step), atomic across
replicas. Counted on a private redis-server (``INFO commandstats``: no other client's)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from tests.support.replicas import RedisServer

from hookgate import Engine
from hookgate.state import use_state_store
from hookgate.state.shared import RedisStateStore

pytestmark = pytest.mark.redis


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
async def redis_url(tmp_path: Path) -> AsyncIterator[str]:
    server = RedisServer(tmp_path / "redis").start()
    try:
        yield server.url
    finally:
        server.stop()


def rule(name: str, matcher: str, **config: Any) -> dict[str, Any]:
    return {
        "event": "pre_tool_use",
        "scope": "global",
        "handler_type": "rule",
        "name": name,
        "matcher": matcher,
        "config": config,
    }


#: Looks back at exec calls (its matcher judges none): the engine stamps every exec call.
WATCHER = rule("watcher", "^never$", require={"tool": "^exec$", "succeeded": False})


def engine_on(client: Any, clock: Clock, *hooks: dict[str, Any]) -> Engine:
    engine = Engine()
    use_state_store(engine, RedisStateStore(client, prefix="hgtest:", clock=clock))
    for hook in hooks:
        engine.add(hook)
    return engine


async def round_trips(client: Any) -> int:
    """Scripts and history reads the server has run from its clients (a script's own
    GETs and SETs are counted apart, as GET and SET: not round trips)."""
    stats = await client.info("commandstats")
    return sum(
        int(stats.get(f"cmdstat_{name}", {}).get("calls", 0))
        for name in ("evalsha", "eval", "mget")
    )


async def fire(engine: Engine, tool: str, session: str = "s1") -> Any:
    return await engine.fire("pre_tool_use", tool_name=tool, session_id=session, agent_id="a1")


async def test_the_heaviest_rule_event_is_one_round_trip_and_keeps_its_stamp(
    redis_url: str,
) -> None:
    from hookgate.handlers.prompt.redis_state import connect

    client = connect(redis_url)
    clock = Clock()
    engine = engine_on(
        client,
        clock,
        WATCHER,
        rule("budget", "^exec$", limit={"count": 3, "window_s": 60}, after={"tool": "^Read$"}),
    )
    try:
        await fire(engine, "exec")  # loads the script
        for _ in range(2):
            before = await round_trips(client)
            assert (await fire(engine, "exec")).decision == "allow"
            # One EVALSHA: the after check, the admit and the exec stamp.
            assert await round_trips(client) - before == 1
        full = await fire(engine, "exec")
        assert full.decision == "block" and "3 of 3" in full.reason
        # The stamps were kept: a rule that needs an earlier exec passes in this session.
        needs = engine_on(
            client,
            clock,
            WATCHER,
            rule("needs-exec", "^deploy$", require={"tool": "^exec$", "succeeded": False}),
        )
        assert (await fire(needs, "deploy")).decision == "allow"
        assert (await fire(needs, "deploy", session="s2")).decision == "block"
        await needs.aclose()
    finally:
        await engine.aclose()
        await client.aclose()


async def test_history_checks_on_redis_judge_as_in_memory(redis_url: str) -> None:
    from hookgate.handlers.prompt.redis_state import connect

    client = connect(redis_url)
    clock = Clock()
    engine = engine_on(
        client,
        clock,
        rule(
            "no-exfil",
            "^WebFetch$",
            after={"tool": "^Read$", "within_s": 600},
            limit={"count": 1, "window_s": 60},
        ),
        rule(
            "tested-deploy",
            "^deploy$",
            sequence={"tools": ["^build$", "^run_tests$"], "succeeded": False},
        ),
    )
    try:
        assert (await fire(engine, "Read", session="tainted")).decision == "allow"
        clock.now += 5
        blocked = await fire(engine, "WebFetch", session="tainted")
        assert blocked.decision == "block" and "5 s ago" in blocked.reason
        # The blocked call took no slot: after the taint ages out, the one call passes.
        clock.now += 600
        assert (await fire(engine, "WebFetch", session="tainted")).decision == "allow"
        assert (await fire(engine, "WebFetch", session="tainted")).decision == "block"
        # sequence: run_tests then build is the wrong order.
        for tool in ("run_tests", "build"):
            clock.now += 1
            assert (await fire(engine, tool, session="d")).decision == "allow"
        wrong = await fire(engine, "deploy", session="d")
        assert wrong.decision == "block" and "after the latest call" in wrong.reason
        clock.now += 1
        await fire(engine, "run_tests", session="d")
        assert (await fire(engine, "deploy", session="d")).decision == "allow"
    finally:
        await engine.aclose()
        await client.aclose()


async def test_a_call_a_later_hook_blocks_is_not_stamped(redis_url: str) -> None:
    """The rule keeps the stamps only when it has the chain's last word: here a callable
    after it blocks the call, so the call is not in the history."""
    from hookgate.handlers.prompt.redis_state import connect

    client = connect(redis_url)
    clock = Clock()
    veto = {
        "event": "pre_tool_use",
        "scope": "global",
        "handler_type": "callable",
        "matcher": "^exec$",
        "priority": -10,
        "config": {"callable": lambda event: {"decision": "block", "reason": "veto"}},
    }
    engine = engine_on(
        client, clock, WATCHER, rule("budget", "^exec$", limit={"count": 5, "window_s": 60}), veto
    )
    try:
        chain = await fire(engine, "exec")
        assert chain.decision == "block" and chain.reason == "veto"
        needs = engine_on(
            client,
            clock,
            WATCHER,
            rule("needs-exec", "^deploy$", require={"tool": "^exec$", "succeeded": False}),
        )
        assert (await fire(needs, "deploy")).decision == "block"
        await needs.aclose()
    finally:
        await engine.aclose()
        await client.aclose()


async def test_two_replicas_admit_exactly_the_limit_with_history(redis_url: str) -> None:
    from hookgate.handlers.prompt.redis_state import connect

    clients = [connect(redis_url), connect(redis_url)]
    clock = Clock()
    hooks = (
        WATCHER,
        rule("budget", "^exec$", limit={"count": 5, "window_s": 60}, after={"tool": "^Read$"}),
    )
    engines = [engine_on(client, clock, *hooks) for client in clients]
    try:
        outcomes = await asyncio.gather(*(fire(engines[n % 2], "exec") for n in range(40)))
        assert sum(outcome.decision == "allow" for outcome in outcomes) == 5
    finally:
        for engine in engines:
            await engine.aclose()
        for client in clients:
            await client.aclose()


async def test_hostile_ids_stay_out_of_the_script_arguments(redis_url: str) -> None:
    """Session ids are agent input: they reach Redis only hashed into key names, never into
    the script's word list, so spaces, Lua patterns and newlines neither break nor bend it."""
    from hookgate.handlers.prompt.redis_state import connect

    client = connect(redis_url)
    clock = Clock()
    engine = engine_on(
        client,
        clock,
        WATCHER,
        rule("budget", "^exec$", limit={"count": 2, "window_s": 60}, after={"tool": "^Read$"}),
    )
    try:
        for session in ("a b 1 0 -1", "%S+ 99\n1", "' or 1 --"):
            decisions = [(await fire(engine, "exec", session=session)).decision for _ in range(3)]
            assert decisions == ["allow", "allow", "block"], session
            assert (await fire(engine, "Read", session=session)).decision == "allow"
            tainted = await fire(engine, "exec", session=session)
            assert tainted.decision == "block" and "'^Read$'" in tainted.reason, session
    finally:
        await engine.aclose()
        await client.aclose()


def test_fire_sync_takes_the_same_one_round_trip(tmp_path: Path) -> None:
    """fire_sync runs a Redis rule on the engine's loop thread; the offered stamps go with
    the call there, so its heaviest event is one script too."""
    import redis

    from hookgate.handlers.prompt.redis_state import connect

    server = RedisServer(tmp_path / "redis").start()
    client = connect(server.url)
    engine = engine_on(
        client,
        Clock(),
        WATCHER,
        rule("budget", "^exec$", limit={"count": 100, "window_s": 60}, after={"tool": "^Read$"}),
    )
    counter = redis.Redis.from_url(server.url)

    def scripts() -> int:
        stats = counter.info("commandstats")
        return sum(
            int(stats.get(f"cmdstat_{name}", {}).get("calls", 0))
            for name in ("evalsha", "eval", "mget")
        )

    payload = {"tool_name": "exec", "session_id": "s1", "agent_id": "a1"}
    try:
        engine.fire_sync("pre_tool_use", payload)
        before = scripts()
        assert engine.fire_sync("pre_tool_use", payload).decision == "allow"
        assert scripts() - before == 1
    finally:
        engine.runner.loop_thread().run(client.aclose())  # it was used on that loop
        engine.close()
        counter.close()
        server.stop()
