"""Circuit breaker and loop-depth guard."""

from __future__ import annotations

import logging

import pytest

from hookgate import HookEvent
from hookgate.testing import HookTester

EXEC = {"tool_name": "exec", "tool_input": {"cmd": "ls"}}


def failing_tester(calls: list[int], **options: object) -> tuple[HookTester, str]:
    tester = HookTester()
    state = {"fail": True}

    @tester.hook("pre_tool_use", name="flaky", **options)  # type: ignore[arg-type]
    def flaky(event: HookEvent) -> None:
        calls.append(1)
        if state["fail"]:
            raise RuntimeError("upstream down")

    tester.state = state  # type: ignore[attr-defined]
    hook_id = tester.engine.registry.definitions()[0].id
    return tester, hook_id


def test_five_faults_open_the_breaker_and_it_keeps_blocking(
    caplog: pytest.LogCaptureFixture,
) -> None:
    calls: list[int] = []
    tester, hook_id = failing_tester(calls)
    with caplog.at_level(logging.WARNING, logger="hookgate"):
        for _ in range(5):
            assert tester.fire("pre_tool_use", EXEC).decision == "block"
    assert tester.engine.breakers.status(hook_id).state == "open"
    assert any("security.hook.circuit_breaker" in r.getMessage() for r in caplog.records)

    outcome = tester.fire("pre_tool_use", EXEC)
    assert outcome.decision == "block"  # an open breaker never opens the door
    assert "circuit breaker open" in (outcome.reason or "")
    assert outcome.trace[0].breaker == "open"
    assert len(calls) == 5  # the handler was not called


def test_deliberate_blocks_do_not_trip_the_breaker() -> None:
    tester = HookTester()
    tester.hook("pre_tool_use", name="guard")(lambda e: {"decision": "block"})
    for _ in range(20):
        outcome = tester.fire("pre_tool_use", EXEC)
    hook_id = tester.engine.registry.definitions()[0].id
    assert tester.engine.breakers.status(hook_id).state == "closed"
    assert outcome.trace[0].decision == "block"


def test_faults_outside_the_window_do_not_count() -> None:
    calls: list[int] = []
    tester, hook_id = failing_tester(calls)
    for _ in range(4):
        tester.fire("pre_tool_use", EXEC)
    tester.clock.advance(61)
    tester.fire("pre_tool_use", EXEC)
    assert tester.engine.breakers.status(hook_id).state == "closed"


def test_half_open_probe_success_closes() -> None:
    calls: list[int] = []
    tester, hook_id = failing_tester(calls)
    for _ in range(5):
        tester.fire("pre_tool_use", EXEC)
    tester.clock.advance(31)
    tester.state["fail"] = False  # type: ignore[attr-defined]
    outcome = tester.fire("pre_tool_use", EXEC)
    assert outcome.decision == "allow"
    assert outcome.trace[0].breaker == "half_open"
    assert tester.engine.breakers.status(hook_id).state == "closed"
    assert len(calls) == 6


def test_half_open_probe_failure_reopens() -> None:
    calls: list[int] = []
    tester, hook_id = failing_tester(calls)
    for _ in range(5):
        tester.fire("pre_tool_use", EXEC)
    tester.clock.advance(31)
    assert tester.fire("pre_tool_use", EXEC).decision == "block"  # the probe failed
    assert tester.engine.breakers.status(hook_id).state == "open"
    tester.fire("pre_tool_use", EXEC)
    assert len(calls) == 6  # no call while open again


def test_reenabling_resets_the_breaker() -> None:
    calls: list[int] = []
    tester, hook_id = failing_tester(calls)
    for _ in range(5):
        tester.fire("pre_tool_use", EXEC)
    tester.engine.set_enabled(hook_id, False)
    tester.engine.set_enabled(hook_id, True)
    assert tester.engine.breakers.status(hook_id).state == "closed"
    tester.state["fail"] = False  # type: ignore[attr-defined]
    assert tester.fire("pre_tool_use", EXEC).decision == "allow"


def test_open_breaker_with_on_error_allow_skips_the_hook() -> None:
    calls: list[int] = []
    tester, hook_id = failing_tester(calls, on_error="allow")
    for _ in range(5):
        assert tester.fire("pre_tool_use", EXEC).decision == "allow"
    outcome = tester.fire("pre_tool_use", EXEC)
    assert outcome.decision == "allow" and len(calls) == 5
    assert outcome.trace[0].skipped == "circuit breaker open (on_error=allow)"


def test_open_breaker_skips_non_blocking_events() -> None:
    tester = HookTester()
    calls: list[int] = []

    @tester.hook("post_tool_use", name="observer")
    def observer(event: HookEvent) -> None:
        calls.append(1)
        raise RuntimeError("x")

    for _ in range(6):
        assert tester.fire("post_tool_use", EXEC).decision == "allow"
    assert len(calls) == 5


def test_breaker_does_not_apply_to_events_the_hook_does_not_match() -> None:
    calls: list[int] = []
    tester, _ = failing_tester(calls, matcher="^exec$")
    for _ in range(5):
        tester.fire("pre_tool_use", EXEC)
    assert tester.fire("pre_tool_use", tool_name="read", tool_input={}).decision == "allow"


@pytest.mark.parametrize("event", ["pre_tool_use", "subagent_start", "user_prompt_submit"])
def test_depth_beyond_three_blocks(event: str, caplog: pytest.LogCaptureFixture) -> None:
    tester = HookTester()
    tester.hook(event)(lambda e: None)
    with caplog.at_level(logging.WARNING, logger="hookgate"):
        outcome = tester.fire(event, depth=4)
    assert outcome.decision == "block" and "depth 4" in (outcome.reason or "")
    assert any("security.hook.loop_depth_exceeded" in r.getMessage() for r in caplog.records)
    assert tester.fire(event, depth=3).decision == "allow"


def test_depth_guard_holds_even_without_hooks() -> None:
    tester = HookTester()
    assert tester.fire("subagent_start", depth=5).decision == "block"


def test_depth_guard_runs_no_hooks_on_non_blocking_events() -> None:
    tester = HookTester()
    calls: list[int] = []
    tester.hook("stop")(lambda e: calls.append(1))
    assert tester.fire("stop", depth=4).decision == "allow"
    assert calls == []
    # A waited-for result check blocks like any blocking event.
    tester.hook("subagent_stop")(lambda e: calls.append(1))
    assert tester.fire("subagent_stop", depth=4).decision == "block"
    assert calls == []


def test_probe_runs_even_when_an_earlier_hook_answers() -> None:
    calls: list[int] = []
    tester = HookTester()
    tester.hook("pre_tool_use", priority=5, name="context")(
        lambda e: {"additional_context": "from the first hook"}
    )
    state = {"fail": True}

    @tester.hook("pre_tool_use", name="flaky")
    def flaky(event: HookEvent) -> None:
        calls.append(1)
        if state["fail"]:
            raise RuntimeError("down")

    flaky_id = next(d.id for d in tester.engine.registry.definitions() if d.name == "flaky")
    for _ in range(5):
        tester.fire("pre_tool_use", EXEC)
    tester.clock.advance(31)
    state["fail"] = False
    outcome = tester.fire("pre_tool_use", EXEC)
    assert outcome.decision == "allow" and len(calls) == 6
    assert [t.name for t in outcome.trace] == ["context", "flaky"]
    assert tester.engine.breakers.status(flaky_id).state == "closed"


def test_last_fault_is_redacted() -> None:
    tester = HookTester()

    @tester.hook("pre_tool_use", name="leaky")
    def leaky(event: HookEvent) -> None:
        raise RuntimeError("login failed for ops@example.com with Bearer abc.def.ghi " + "x" * 400)

    tester.fire("pre_tool_use", EXEC)
    hook_id = tester.engine.registry.definitions()[0].id
    fault = tester.engine.breakers.status(hook_id).last_fault or ""
    assert "ops@example.com" not in fault and "abc.def.ghi" not in fault
    assert "[REDACTED]" in fault and len(fault) <= 256
