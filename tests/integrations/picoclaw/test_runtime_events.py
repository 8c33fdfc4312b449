"""The runtime event bus: PicoClaw's kinds, in-order delivery, a bounded queue with counted
drops, observer isolation, and process hooks filtered by their observe list."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from typing import Any

import pytest
from tests.handlers.process_support import process_hook, read_log
from tests.support.waiting import wait_until_async

from hookgate import Engine
from hookgate.hook_event import HookEvent
from hookgate.integrations.picoclaw.runtime_events import (
    ALL_KINDS,
    KIND_ALIASES,
    KNOWN_KINDS,
    RuntimeEvent,
    RuntimeEventBus,
    canonical_kind,
    normalize_observe,
)


def test_kinds_and_aliases() -> None:
    assert len(KNOWN_KINDS) == 45
    assert set(KIND_ALIASES.values()) <= set(KNOWN_KINDS)
    assert canonical_kind("tool_exec_start") == "agent.tool.exec_start"
    assert canonical_kind("follow_up_queued") == "agent.follow_up.queued"
    assert canonical_kind("gateway.ready") == "gateway.ready"
    with pytest.raises(ValueError, match="unknown runtime event kind 'tool_started'"):
        canonical_kind("tool_started")


@pytest.mark.parametrize(
    ("names", "expected"),
    [
        ([], None),
        (None, None),
        (["*"], ALL_KINDS),
        (["all"], ALL_KINDS),
        ([""], ALL_KINDS),
        (["turn_end", "*"], ALL_KINDS),
        (
            ["tool_exec_start", "agent.tool.exec_end", "gateway.ready", "mcp.server.failed"],
            frozenset({"agent.tool.exec_start", "agent.tool.exec_end", "gateway.ready",
                       "mcp.server.failed"}),
        ),
    ],
)
def test_normalize_observe(names: list[str] | None, expected: Any) -> None:
    assert normalize_observe(names) == expected


def test_an_unknown_name_before_a_star_is_still_an_error() -> None:
    with pytest.raises(ValueError):
        normalize_observe(["nope", "*"])


async def test_events_arrive_in_order_with_the_envelope() -> None:
    seen: list[RuntimeEvent] = []
    bus = RuntimeEventBus()
    bus.subscribe(seen.append)
    for kind in ("turn_start", "llm_request", "llm_response", "tool_exec_start",
                 "tool_exec_end", "turn_end"):
        assert bus.publish(kind, {"Tool": "x"}, scope={"session_key": "s"})
    await bus.drain()
    assert [e.kind for e in seen] == [
        "agent.turn.start", "agent.llm.request", "agent.llm.response",
        "agent.tool.exec_start", "agent.tool.exec_end", "agent.turn.end",
    ]
    first = seen[0].to_dict()
    assert set(first) == {"id", "kind", "time", "source", "scope", "correlation", "severity",
                          "payload", "attrs"}
    assert first["id"] == "evt-1"
    assert first["source"] == {"component": "agent"}
    assert first["scope"] == {"session_key": "s"}
    assert first["correlation"] == {}
    assert bus.stats.delivered == 6
    await bus.aclose()


@pytest.mark.parametrize(
    ("kind", "payload", "severity"),
    [
        ("error", {"Stage": "llm"}, "error"),
        ("subturn_orphan", {}, "error"),
        ("turn_end", {"Status": "error"}, "error"),
        ("turn_end", {"Status": "aborted"}, "warn"),
        ("turn_end", {"Status": "completed"}, "info"),
        ("tool_exec_end", {"IsError": True}, "warn"),
        ("tool_exec_skipped", {}, "warn"),
        ("llm_retry", {}, "warn"),
        ("gateway.ready", {}, "info"),
    ],
)
def test_severity_rules(kind: str, payload: dict[str, Any], severity: str) -> None:
    assert RuntimeEventBus().make_event(kind, payload).severity == severity


async def test_full_queue_drops_the_new_event_and_counts_it() -> None:
    release = asyncio.Event()
    seen: list[str] = []

    async def slow(event: RuntimeEvent) -> None:
        await release.wait()
        seen.append(event.payload["n"])

    bus = RuntimeEventBus(queue_size=4)
    bus.subscribe(slow, timeout_s=5)
    accepted = [bus.publish("tool_exec_start", {"n": n}) for n in range(10)]
    await asyncio.sleep(0)  # the dispatcher takes the first event and waits in the observer
    accepted += [bus.publish("tool_exec_start", {"n": n}) for n in range(10, 20)]
    release.set()
    await bus.drain()
    assert bus.stats.published == 20
    assert bus.stats.dropped == accepted.count(False)
    assert bus.stats.dropped > 0
    assert len(seen) == bus.stats.delivered == 20 - bus.stats.dropped
    assert seen == sorted(seen)  # delivered in publish order
    await bus.aclose()


async def test_slow_and_failing_observers_are_isolated_and_counted() -> None:
    good: list[str] = []

    async def slow(event: RuntimeEvent) -> None:
        await asyncio.sleep(5)

    def broken(event: RuntimeEvent) -> None:
        raise RuntimeError("observer bug")

    bus = RuntimeEventBus(observer_timeout_s=0.05)
    bus.subscribe(slow)
    bus.subscribe(broken)
    bus.subscribe(lambda event: good.append(event.kind))
    bus.publish("turn_start")
    bus.publish("turn_end")
    await bus.drain()
    assert good == ["agent.turn.start", "agent.turn.end"]
    assert bus.stats.timed_out == 2
    assert bus.stats.failed == 2
    await bus.aclose()


async def test_subscription_kinds_filter() -> None:
    seen: list[str] = []
    bus = RuntimeEventBus()
    subscription = bus.subscribe(lambda e: seen.append(e.kind), kinds=["tool_exec_end"])
    bus.publish("tool_exec_start")
    bus.publish("tool_exec_end")
    await bus.drain()
    bus.unsubscribe(subscription)
    bus.publish("tool_exec_end")
    await bus.drain()
    assert seen == ["agent.tool.exec_end"]
    await bus.aclose()


async def test_publish_from_another_thread() -> None:
    seen: list[str] = []
    bus = RuntimeEventBus()
    bus.subscribe(lambda e: seen.append(e.kind))
    await bus.start()
    thread = threading.Thread(target=lambda: bus.publish("gateway.ready"))
    thread.start()
    thread.join()
    await wait_until_async(lambda: seen == ["gateway.ready"], "gateway.ready observed")
    await bus.aclose()


def test_publish_needs_a_loop_first() -> None:
    with pytest.raises(RuntimeError, match="event loop"):
        RuntimeEventBus().publish("turn_start")


async def test_callable_hooks_on_runtime_event_observe_with_a_matcher() -> None:
    seen: list[str] = []

    async with Engine() as engine:

        @engine.hook("runtime_event", matcher=r"^agent\.tool\.")
        def observe(event: HookEvent) -> None:
            seen.append(event["kind"])

        bus = RuntimeEventBus(engine=engine)
        for kind in ("turn_start", "tool_exec_start", "tool_exec_end", "turn_end"):
            bus.publish(kind)
        await bus.drain()
        await bus.aclose()
    assert seen == ["agent.tool.exec_start", "agent.tool.exec_end"]
    assert bus.stats.delivered == 2


@pytest.mark.parametrize(
    ("observe", "expected"),
    [
        (["tool_exec_start"], ["agent.tool.exec_start"]),
        (["agent.tool.exec_end", "turn_end"], ["agent.tool.exec_end", "agent.turn.end"]),
        (["*"], ["agent.turn.start", "agent.tool.exec_start", "agent.tool.exec_end",
                 "agent.turn.end"]),
        ([], []),
    ],
)
async def test_process_hooks_get_notifications_filtered_by_observe(
    tmp_path: Path, observe: list[str], expected: list[str]
) -> None:
    log = tmp_path / "log.jsonl"
    hook = process_hook("runtime_event", log=log, config={"observe": observe})
    async with Engine([hook]) as engine:
        bus = RuntimeEventBus(engine=engine)
        for kind in ("turn_start", "tool_exec_start", "tool_exec_end", "turn_end"):
            bus.publish(kind, {"Tool": "exec"}, scope={"session_key": "s-1"})
        await bus.drain()
        if expected:
            await wait_until_async(
                lambda: len(read_log(log)) == 1 + len(expected), "every notification logged"
            )
        await bus.aclose()
    messages = read_log(log)
    notifications = [m for m in messages if m["method"] == "hook.runtime_event"]
    assert [n["params"]["kind"] for n in notifications] == expected
    for note in notifications:
        assert "id" not in note  # a notification: no id, no answer expected
        assert note["params"]["scope"] == {"session_key": "s-1"}
        assert note["params"]["payload"] == {"Tool": "exec"}
    if expected:
        assert messages[0]["params"]["modes"] == ["observe"]
    else:
        assert messages == []  # never started: it observes nothing
