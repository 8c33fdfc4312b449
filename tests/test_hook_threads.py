"""Plain-function hooks on worker threads (the gateway's way, and any thread but the main
one): the caller gets the timeout at the deadline, stuck threads are counted, and a CEL
filter's time counts against the hook's timeout. The main thread's alarm is tested in
test_hook_alarm.py."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from hookgate import Engine
from hookgate.settings import Settings


@pytest.fixture()
def release() -> Iterator[threading.Event]:
    event = threading.Event()
    yield event
    event.set()  # let the stuck function end


def wait_until(condition: Any, seconds: float = 10.0) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "condition not reached"
        time.sleep(0.01)


def threads() -> Settings:
    """Settings that send plain functions to worker threads even on the main thread."""
    return Settings(interrupt_plain_hooks=False)


def stuck_engine(release: threading.Event, **hook: Any) -> Engine:
    engine = Engine(settings=threads())

    @engine.hook("pre_tool_use", timeout_ms=200, **hook)
    def stall(event: Any) -> None:
        release.wait(30)

    @engine.hook("pre_tool_use", name="after", priority=-1)
    def after(event: Any) -> dict[str, Any]:
        return {"additional_context": "after ran"}

    return engine


def test_fire_sync_answers_the_timeout_at_the_deadline(release: threading.Event) -> None:
    engine = stuck_engine(release)
    outcome = engine.fire_sync("pre_tool_use", {"tool_name": "x"})
    assert not release.is_set()  # the function is still running: the caller did not wait
    assert outcome.decision == "block" and "timed out" in str(outcome.reason)
    assert engine.stats.hook_threads_stuck == 1 and engine.stats.hook_threads_abandoned == 1
    release.set()
    wait_until(lambda: engine.stats.hook_threads_stuck == 0)
    engine.close()


async def test_await_fire_follows_on_timeout_allow_and_runs_the_rest(
    release: threading.Event,
) -> None:
    engine = stuck_engine(release, on_timeout="allow")
    ticks = 0

    async def ticker() -> None:
        nonlocal ticks
        while not release.is_set():
            ticks += 1
            await asyncio.sleep(0.01)

    running = asyncio.create_task(ticker())
    outcome = await engine.fire("pre_tool_use", {"tool_name": "x"})
    assert not release.is_set()
    assert outcome.decision == "allow" and outcome.additional_context == ["after ran"]
    assert ticks > 0  # the loop kept running while the function was stuck
    assert engine.stats.to_dict()["hook_threads_stuck"] == 1
    release.set()
    await running
    await engine.aclose()


async def test_a_hook_mixed_with_async_hooks_is_cancelled_at_its_deadline(
    release: threading.Event,
) -> None:
    engine = stuck_engine(release)

    @engine.hook("pre_tool_use", name="async one", priority=5)
    async def abstain(event: Any) -> None:
        return None

    outcome = await engine.fire("pre_tool_use", {"tool_name": "x"})
    assert outcome.decision == "block" and "timed out" in str(outcome.reason)
    assert engine.stats.hook_threads_stuck == 1
    release.set()
    await engine.aclose()


def test_inline_mode_keeps_the_old_behaviour() -> None:
    engine = Engine(settings=Settings(inline_sync_hooks=True))
    seen: list[str] = []
    engine.hook("pre_tool_use")(lambda event: seen.append(threading.current_thread().name))
    engine.fire_sync("pre_tool_use", {"tool_name": "x"})
    assert seen == [threading.current_thread().name]
    threaded = Engine(settings=threads())
    threaded.hook("pre_tool_use")(lambda event: seen.append(threading.current_thread().name))
    threaded.fire_sync("pre_tool_use", {"tool_name": "x"})
    assert seen[-1].startswith("hookgate-hook-")
    threaded.close()


def test_a_filters_time_counts_against_the_hook_timeout() -> None:
    expr = " || ".join(f"payload.s.contains('absent-{i}')" for i in range(45))
    engine = Engine(settings=threads())
    engine.hook("pre_tool_use", if_expr=f"!({expr})", timeout_ms=1)(lambda event: None)
    outcome = engine.fire_sync("pre_tool_use", {"tool_name": "x", "s": "ab" * 400_000})
    assert outcome.decision == "block", outcome.reason
    assert "if_expr took" in str(outcome.reason)
    engine.close()


def test_input_over_the_filter_bound_fails_closed() -> None:
    engine = Engine()
    engine.hook("pre_tool_use", if_expr="tool_name == 'x'")(lambda event: None)
    outcome = engine.fire_sync("pre_tool_use", {"tool_name": "x", "s": "a" * (2 << 20)})
    assert outcome.decision == "block" and "if_expr may be evaluated over" in str(outcome.reason)
    engine.close()


def test_context_variables_follow_the_call() -> None:
    import contextvars

    where: contextvars.ContextVar[str] = contextvars.ContextVar("where", default="unset")
    engine = Engine()
    engine.hook("pre_tool_use")(lambda event: {"additional_context": where.get()})
    where.set("the caller's")
    assert engine.fire_sync("pre_tool_use", {"tool_name": "x"}).additional_context == [
        "the caller's"
    ]
    engine.close()
