"""The chain rules, exercised through the engine with callable hooks."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from hookgate import Engine, HookEvent, HookResult, Settings
from hookgate.testing import FakeClock, HookTester

EXEC = {"tool_name": "exec", "tool_input": {"cmd": "ls"}}


def test_priority_then_registration_order() -> None:
    """Hooks run by priority, higher first; equal priorities in registration order."""
    calls: list[str] = []
    tester = HookTester()
    for name, priority in [("low", 1), ("high", 10), ("tie-a", 5), ("tie-b", 5), ("mid", 7)]:
        tester.hook("pre_tool_use", name=name, priority=priority)(
            lambda event, name=name: calls.append(name)
        )
    tester.fire("pre_tool_use", EXEC)
    assert calls == ["high", "mid", "tie-a", "tie-b", "low"]


def test_tie_break_is_stable_across_runs_and_engines() -> None:
    """The order of equal-priority hooks is the same in every run and every engine."""
    orders = []
    for _ in range(3):
        calls: list[str] = []
        tester = HookTester()
        for name in ["c", "a", "b"]:
            tester.hook("pre_tool_use", name=name)(
                lambda e, name=name, calls=calls: calls.append(name)
            )
        tester.fire("pre_tool_use", EXEC)
        orders.append(calls)
    assert orders == [["c", "a", "b"]] * 3


def test_rewrite_is_seen_by_later_hooks_and_their_filters() -> None:
    """A rewrite reaches later hooks and their if_expr; the caller's payload is untouched."""
    tester = HookTester()
    seen: list[Any] = []
    tester.hook("pre_tool_use", priority=3)(
        lambda e: {"updated_input": {**e.tool_input, "cmd": "ls -la", "safe": True}}
    )
    tester.hook("pre_tool_use", priority=2, if_expr="tool_input.safe == true")(
        lambda e: seen.append(dict(e.tool_input))
    )
    outcome = tester.fire("pre_tool_use", EXEC)
    assert seen == [{"cmd": "ls -la", "safe": True}]
    assert outcome.updated_input == {"cmd": "ls -la", "safe": True}
    assert EXEC["tool_input"] == {"cmd": "ls"}  # the caller's payload is never mutated


def test_context_from_every_hook_is_kept_in_order() -> None:
    """additional_context from every hook (string, list or HookResult) is kept in hook order."""
    tester = HookTester()
    tester.hook("user_prompt_submit", priority=2)(lambda e: {"additional_context": "first"})
    tester.hook("user_prompt_submit", priority=1)(
        lambda e: {"additional_context": ["second", "third"]}
    )
    tester.hook("user_prompt_submit", priority=0)(lambda e: None)
    tester.hook("user_prompt_submit", priority=-1)(
        lambda e: HookResult(additional_context=["fourth"])
    )
    outcome = tester.fire("user_prompt_submit", prompt="hello")
    assert outcome.additional_context == ["first", "second", "third", "fourth"]


def test_first_block_ends_the_chain() -> None:
    """The first block ends a blocking chain: later hooks are not called."""
    called: list[str] = []
    tester = HookTester()
    tester.hook("pre_tool_use", priority=2, name="guard")(
        lambda e: {"decision": "block", "reason": "nope"}
    )
    tester.hook("pre_tool_use", priority=1)(lambda e: called.append("later"))
    outcome = tester.fire("pre_tool_use", EXEC)
    assert outcome.decision == "block" and outcome.reason == "nope"
    assert called == []
    assert [t.decision for t in outcome.trace] == ["block"]


def test_continue_false_blocks() -> None:
    """continue: false on a blocking event blocks and says so in the outcome."""
    tester = HookTester()
    tester.hook("pre_tool_use")(lambda e: {"continue": False, "reason": "stop here"})
    outcome = tester.fire("pre_tool_use", EXEC)
    assert outcome.decision == "block" and outcome.continue_ is False


def test_synthetic_result_ends_the_chain_and_allows() -> None:
    """A synthetic result ends the chain as an allow carrying that result."""
    called: list[str] = []
    tester = HookTester()
    tester.hook("pre_tool_use", priority=2)(lambda e: {"result": {"for_llm": "cached"}})
    tester.hook("pre_tool_use", priority=1)(lambda e: called.append("x"))
    outcome = tester.fire("pre_tool_use", EXEC)
    assert outcome.decision == "allow" and outcome.result == {"for_llm": "cached"}
    assert called == []


@pytest.mark.parametrize("kind", ["turn", "hard"])
def test_abort_ends_the_chain(kind: str) -> None:
    """An abort (turn or hard) blocks; only a turn abort lets the agent loop continue."""
    tester = HookTester()
    tester.hook("before_llm")(lambda e: {"abort": kind, "reason": "budget"})
    outcome = tester.fire("before_llm", request={"model": "m"})
    assert outcome.decision == "block" and outcome.abort == kind
    assert outcome.continue_ is (kind == "turn")


def test_ask_without_approver_blocks() -> None:
    """An ask with no approver configured blocks, with the hook's reason."""
    tester = HookTester()
    tester.hook("pre_tool_use", name="asker")(lambda e: {"decision": "ask", "reason": "sure?"})
    outcome = tester.fire("pre_tool_use", EXEC)
    assert outcome.decision == "block"
    assert "no approver" in (outcome.reason or "") and "sure?" in (outcome.reason or "")


def test_exception_fails_closed_with_cause_in_trace() -> None:
    """A hook that raises blocks by default, naming the hook and the error."""
    tester = HookTester()

    @tester.hook("pre_tool_use", name="crashy")
    def crashy(event: HookEvent) -> None:
        raise RuntimeError("database gone")

    outcome = tester.fire("pre_tool_use", EXEC)
    assert outcome.decision == "block"
    assert "crashy" in (outcome.reason or "") and "database gone" in (outcome.reason or "")
    assert outcome.trace[0].decision == "error"
    assert "RuntimeError: database gone" in (outcome.trace[0].error or "")


def test_on_error_allow_lets_the_chain_continue() -> None:
    """on_error: allow records the error and lets later hooks run."""
    tester = HookTester()

    @tester.hook("pre_tool_use", on_error="allow", priority=1)
    def crashy(event: HookEvent) -> None:
        raise RuntimeError("x")

    tester.hook("pre_tool_use")(lambda e: {"additional_context": "ran"})
    outcome = tester.fire("pre_tool_use", EXEC)
    assert outcome.decision == "allow" and outcome.additional_context == ["ran"]
    assert outcome.trace[0].decision == "error"


@pytest.mark.parametrize(
    "answer",
    [
        {"decision": "deny"},  # misspelled block
        {"decison": "block"},  # unknown key
        {"continue": "no"},
        {"abort": "everything"},
        "block",
        42,
    ],
)
def test_malformed_answers_block_even_with_on_error_allow(answer: Any) -> None:
    """A malformed answer blocks whatever the hook's on_error says."""
    tester = HookTester()
    tester.hook("pre_tool_use", on_error="allow")(lambda e: answer)
    outcome = tester.fire("pre_tool_use", EXEC)
    assert outcome.decision == "block"
    assert "malformed answer" in (outcome.trace[0].error or "")


def test_outcome_the_event_does_not_allow_is_malformed() -> None:
    """An answer the event does not take (a result on user_prompt_submit) is malformed."""
    tester = HookTester()
    tester.hook("user_prompt_submit")(lambda e: {"result": "synthetic"})
    outcome = tester.fire("user_prompt_submit", prompt="hi")
    assert outcome.decision == "block"
    assert "takes no synthetic result" in (outcome.trace[0].error or "")


async def test_timeout_follows_on_timeout() -> None:
    """A hook past its timeout follows on_timeout: block by default, allow when set."""
    engine = Engine()

    never = asyncio.Event()  # only the timeout can end these hooks

    @engine.hook("pre_tool_use", timeout_ms=50, name="slow-block")
    async def slow(event: HookEvent) -> None:
        await never.wait()

    outcome = await engine.fire("pre_tool_use", EXEC)
    assert outcome.decision == "block"
    assert outcome.trace[0].decision == "timeout"

    lenient = Engine()

    @lenient.hook("pre_tool_use", timeout_ms=50, on_timeout="allow")
    async def slow_allow(event: HookEvent) -> None:
        await never.wait()

    outcome = await lenient.fire("pre_tool_use", EXEC)
    assert outcome.decision == "allow" and outcome.trace[0].decision == "timeout"


async def test_chain_budget_caps_the_whole_chain() -> None:
    """The second hook's own timeout (5 s) is longer than what is left of the chain's budget
    (0.3 s): the budget cuts it, and the third hook never runs. The first hook answers at once,
    so a busy machine cannot spend the budget before the second one starts. (That the driver
    grants it only the rest of the budget is tested on a fake clock in test_drivers.py.)"""
    engine = Engine(settings=Settings(chain_budget_s=0.3))
    never = asyncio.Event()
    ran: list[str] = []

    @engine.hook("pre_tool_use", timeout_ms=5000, priority=2, name="h0")
    async def quick(event: HookEvent) -> None:
        ran.append("h0")

    @engine.hook("pre_tool_use", timeout_ms=5000, priority=1, name="h1")
    async def stuck(event: HookEvent) -> None:
        ran.append("h1")
        await never.wait()

    @engine.hook("pre_tool_use", timeout_ms=5000, priority=0, name="h2")
    async def last(event: HookEvent) -> None:
        ran.append("h2")

    outcome = await engine.fire("pre_tool_use", EXEC)
    assert outcome.decision == "block"
    assert [t.decision for t in outcome.trace] == ["abstain", "timeout"]
    assert ran == ["h0", "h1"]


def test_budget_exhausted_before_a_hook_runs() -> None:
    """A hook admitted after the chain budget is spent is not called, and the event blocks."""
    clock = FakeClock()
    engine = Engine(clock=clock)
    engine.hook("pre_tool_use", priority=1)(lambda e: clock.advance(11))
    called: list[int] = []
    engine.hook("pre_tool_use")(lambda e: called.append(1))
    outcome = engine.fire_sync("pre_tool_use", EXEC)
    assert outcome.decision == "block" and "budget" in (outcome.reason or "")
    assert called == []


async def test_non_blocking_outcome_is_independent_of_completion_order() -> None:
    """The hooks finish in the order b, c, a (each waits for the one before it); the
    outcome still lists their context in chain order."""
    engine = Engine()
    finished = {name: asyncio.Event() for name in "abc"}
    waits_for = {"a": "c", "b": None, "c": "b"}
    for priority, name in enumerate(["a", "b", "c"]):

        @engine.hook("post_tool_use", priority=-priority, name=name)
        async def hook(event: HookEvent, name: str = name) -> dict[str, Any]:
            before = waits_for[name]
            if before is not None:
                await finished[before].wait()
            finished[name].set()
            return {"additional_context": name}

    outcome = await engine.fire("post_tool_use", EXEC, wait=True)
    assert outcome.additional_context == ["a", "b", "c"]


async def test_non_blocking_hooks_run_concurrently_and_cannot_block() -> None:
    """Each hook answers only once all five have started: run one after another, the first
    would wait until its timeout."""
    engine = Engine()
    started: list[int] = []
    all_started = asyncio.Event()
    for index in range(5):

        @engine.hook("stop", name=f"h{index}", timeout_ms=10_000)
        async def hook(event: HookEvent, index: int = index) -> dict[str, Any]:
            started.append(index)
            if len(started) == 5:
                all_started.set()
            await all_started.wait()
            return {"decision": "block"}

    outcome = await engine.fire("stop", wait=True)
    assert outcome.decision == "allow"
    assert [t.decision for t in outcome.trace] == ["block"] * 5
    assert "not enforced" in outcome.trace[0].details["note"]


def test_outcome_serialises_with_exactly_the_documented_keys() -> None:
    """to_json has exactly the documented keys; a rejected matcher leaves no trace row."""
    tester = HookTester()
    tester.hook("pre_tool_use", matcher="^exec$", name="m")(lambda e: None)
    tester.hook("pre_tool_use", matcher="^other$", name="not-this-tool")(lambda e: None)
    tester.hook("pre_tool_use", name="skipped", enabled=False)(lambda e: None)
    data = json.loads(tester.fire("pre_tool_use", EXEC).to_json())
    assert set(data) == {"decision", "reason", "updated_input", "additional_context", "result",
                         "abort", "continue", "retry", "trace", "dispatch_id"}
    # A hook whose matcher rejects the tool leaves no row (issue 26); a disabled one does.
    assert [(t["name"], t["matched"], t["skipped"]) for t in data["trace"]] == [
        ("m", True, None), ("skipped", False, "disabled")]
    assert set(data["trace"][0]) >= {"hook_id", "name", "handler_type", "matched", "skipped",
                                     "decision", "duration_ms", "error"}


def test_if_expr_error_skips_with_the_error_in_the_trace() -> None:
    """An if_expr that cannot be evaluated skips the hook, with the error in its row."""
    tester = HookTester()
    tester.hook("pre_tool_use", if_expr="size(tool_input.path) > 3")(
        lambda e: {"decision": "block"}
    )
    outcome = tester.fire("pre_tool_use", EXEC)
    assert outcome.decision == "allow"
    assert outcome.trace[0].skipped == "if_expr could not be evaluated"
    assert "path" in (outcome.trace[0].error or "")


def test_disabled_hook_is_skipped() -> None:
    """A disabled hook is skipped, and its row says so."""
    tester = HookTester()
    tester.hook("pre_tool_use", enabled=False)(lambda e: {"decision": "block"})
    outcome = tester.fire("pre_tool_use", EXEC)
    assert outcome.decision == "allow" and outcome.trace[0].skipped == "disabled"
