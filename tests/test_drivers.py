"""The chain drivers: what they hand each call, and when they stop, on a fake clock."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest
from tests.support.chain_calls import Scripted, compile_scripted

from hookgate.chain import Call, ChainSettings, HookReply, Reply, drive_sync, run_chain
from hookgate.events import get_event
from hookgate.execution.drivers import drive_async
from hookgate.testing import FakeClock


class Recorder:
    """An ``execute`` for :func:`drive_async` that answers from a script, spends fake time
    and records the timeout the driver granted each call."""

    def __init__(self, clock: FakeClock, answers: Mapping[str, tuple[Any, float]]) -> None:
        self.clock = clock
        self.answers = answers
        self.granted: dict[str, float] = {}

    async def __call__(self, call: Call, payload: Mapping[str, Any], timeout_s: float) -> Reply:
        name = call[0].definition.name
        self.granted[name] = timeout_s
        answer, spends = self.answers[name]
        if spends >= timeout_s:
            self.clock.advance(timeout_s)
            return HookReply(None, None, True, timeout_s * 1000)
        self.clock.advance(spends)
        return HookReply(answer, None, False, spends * 1000)


async def test_the_chain_budget_caps_a_blocking_call_below_its_own_timeout() -> None:
    """A hook whose own timeout (5 s) outlasts the chain's budget gets only what is left of
    the budget; the hook after it never runs."""
    clock = FakeClock()
    hooks = compile_scripted(
        "pre_tool_use",
        [
            Scripted(name="quick", options={"timeout_ms": 5000, "priority": 2}),
            Scripted(name="stuck", options={"timeout_ms": 5000, "priority": 1}),
            Scripted(name="last", options={"timeout_ms": 5000, "priority": 0}),
        ],
    )
    execute = Recorder(clock, {"quick": (None, 0.1), "stuck": (None, 60.0), "last": (None, 0)})
    settings = ChainSettings(chain_budget_s=0.3, clock=clock)
    chain = run_chain(hooks, get_event("pre_tool_use"), {"tool_name": "x"}, settings)
    outcome = await drive_async(chain, execute, clock)
    assert execute.granted == {"quick": pytest.approx(0.3), "stuck": pytest.approx(0.2)}
    assert outcome.decision == "block"
    assert [entry.decision for entry in outcome.trace] == ["abstain", "timeout"]


async def test_observing_calls_get_their_own_timeouts_and_all_run() -> None:
    """A non-blocking batch has no deadline: every call gets its own timeout."""
    clock = FakeClock()
    hooks = compile_scripted(
        "post_tool_use",
        [
            Scripted(name="a", options={"timeout_ms": 1000}),
            Scripted(name="b", options={"timeout_ms": 2000}),
        ],
    )
    execute = Recorder(clock, {"a": ({"additional_context": "a"}, 0), "b": (None, 0)})
    chain = run_chain(hooks, get_event("post_tool_use"), {}, ChainSettings(clock=clock))
    outcome = await drive_async(chain, execute, clock)
    assert execute.granted == {"a": 1.0, "b": 2.0}
    assert outcome.additional_context == ["a"]


def test_drive_sync_sends_each_batch_its_replies() -> None:
    """drive_sync hands every batch to ``execute`` and returns the chain's outcome."""
    hooks = compile_scripted("pre_tool_use", [Scripted(name="one"), Scripted(name="two")])
    seen: list[list[str]] = []

    def execute(calls: Any, _payload: Any, _deadline: Any) -> list[Reply]:
        seen.append([call[0].definition.name for call in calls])
        return [HookReply({"decision": "block", "reason": "no"}, None, False, 1.0)]

    chain = run_chain(hooks, get_event("pre_tool_use"), {}, ChainSettings())
    outcome = drive_sync(chain, execute)
    assert seen == [["one", "two"]]
    assert outcome.decision == "block" and outcome.reason == "no"
