"""The chain generator driven directly (tests/support/chain_calls.py), and a property: the
synchronous and the asynchronous driver fold any set of answers into the same outcome."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests.support.chain_calls import TIMEOUT, Scripted, run_direct

from hookgate import HookEvent
from hookgate.outcome import HookError
from hookgate.testing import HookTester

EXEC = {"tool_name": "exec", "tool_input": {"cmd": "ls"}}


def test_abstaining_hooks_run_in_one_batch_in_priority_order() -> None:
    """Hooks that abstain run in one batch, in priority order."""
    run = run_direct(
        "pre_tool_use",
        [
            Scripted(name="low"),
            Scripted(name="high", options={"priority": 5}),
            Scripted(name="mid"),
        ],
        EXEC,
    )
    assert [names for names, _ in run.batches] == [["high", "low", "mid"]]
    assert run.outcome.decision == "allow"
    assert [entry.decision for entry in run.outcome.trace] == ["abstain"] * 3


def test_a_rewrite_starts_a_new_batch_that_sees_it() -> None:
    """A rewrite ends the batch; the next batch sees the rewritten input."""
    rewrite = {"updated_input": {"cmd": "ls -la"}}
    run = run_direct("pre_tool_use", [Scripted(rewrite, "first"), Scripted(None, "second")], EXEC)
    assert [names for names, _ in run.batches] == [["first", "second"], ["second"]]
    assert run.batches[1][1]["tool_input"] == {"cmd": "ls -la"}
    assert run.outcome.updated_input == {"cmd": "ls -la"}
    # The admission discarded with the first batch leaves no trace row behind.
    assert [entry.name for entry in run.outcome.trace] == ["first", "second"]


def test_the_first_block_ends_the_chain() -> None:
    """Driven directly, the first block ends the chain and leaves one row."""
    run = run_direct(
        "pre_tool_use",
        [Scripted({"decision": "block", "reason": "no"}, "guard"), Scripted(None, "after")],
        EXEC,
    )
    assert run.outcome.decision == "block"
    assert run.outcome.reason == "no"
    assert [entry.name for entry in run.outcome.trace] == ["guard"]


def test_failure_policy_on_a_blocking_event() -> None:
    """Errors follow on_error, timeouts on_timeout, and a malformed answer always blocks."""
    allowed = run_direct(
        "pre_tool_use",
        [Scripted(RuntimeError("boom"), "flaky", {"on_error": "allow"}), Scripted(None, "next")],
        EXEC,
    )
    assert allowed.outcome.decision == "allow"
    assert [entry.decision for entry in allowed.outcome.trace] == ["error", "abstain"]
    timed_out = run_direct("pre_tool_use", [Scripted(TIMEOUT, "slow")], EXEC)
    assert timed_out.outcome.decision == "block"
    assert "failed closed: timed out" in (timed_out.outcome.reason or "")
    malformed = run_direct(
        "pre_tool_use", [Scripted({"decision": "maybe"}, "odd", {"on_error": "allow"})], EXEC
    )
    assert malformed.outcome.decision == "block"


def test_a_non_blocking_event_runs_every_hook_in_one_batch_and_enforces_nothing() -> None:
    """A non-blocking event runs every hook in one batch and records, never enforces."""
    run = run_direct(
        "post_tool_use",
        [
            Scripted({"decision": "block"}, "a"),
            Scripted(HookError("down"), "b"),
            Scripted({"additional_context": "c"}, "c"),
        ],
        {**EXEC, "tool_response": {}},
    )
    assert [names for names, _ in run.batches] == [["a", "b", "c"]]
    assert run.outcome.decision == "allow"
    assert [entry.decision for entry in run.outcome.trace] == ["block", "error", "allow"]
    assert run.outcome.additional_context == ["c"]


# -- sync and async drivers agree ----------------------------------------------------------------

ANSWERS: dict[str, Callable[[int], Any]] = {
    "allow": lambda n: {"decision": "allow"},
    "block": lambda n: {"decision": "block", "reason": f"blocked by {n}"},
    "rewrite": lambda n: {"updated_input": {"cmd": f"ls {n}"}},
    "context": lambda n: {"additional_context": f"note {n}"},
    "abstain": lambda n: None,
}


def _answer(kind: str, n: int) -> Callable[[HookEvent], Any]:
    def hook(event: HookEvent) -> Any:
        if kind == "raise":
            raise RuntimeError(f"hook {n} failed")
        return ANSWERS[kind](n)

    return hook


hook_specs = st.lists(
    st.tuples(
        st.sampled_from([*ANSWERS, "raise"]),
        st.integers(min_value=0, max_value=3),  # priority
        st.sampled_from(["block", "allow"]),  # on_error
    ),
    max_size=6,
)


def _summary(outcome: Any) -> dict[str, Any]:
    data = outcome.to_dict()
    data.pop("dispatch_id", None)  # one per dispatch (issue 27): never equal across two
    for entry in data["trace"]:
        entry.pop("duration_ms", None)
    return data


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(event=st.sampled_from(["pre_tool_use", "post_tool_use"]), hooks=hook_specs)
def test_sync_and_async_drivers_give_the_same_outcome(
    event: str, hooks: list[tuple[str, int, str]]
) -> None:
    """fire_sync and await fire give the same outcome for the same hooks."""
    tester = HookTester()
    try:
        for n, (kind, priority, on_error) in enumerate(hooks):
            tester.hook(event, name=f"h{n}", priority=priority, on_error=on_error)(_answer(kind, n))
        payload = {**EXEC, "tool_response": {}}
        synced = _summary(tester.fire(event, payload))
        awaited = _summary(asyncio.run(tester.afire(event, payload)))
    finally:
        tester.close()
    assert synced == awaited
    # The first hook in order is always considered, so an empty trace would mean nothing ran.
    assert 0 < len(synced["trace"]) <= len(hooks) or not hooks
