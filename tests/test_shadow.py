"""Shadow mode in the library engine: a shadow hook runs, is recorded as what it would have
decided, and never changes the outcome, the breakers or the worker caps of anyone else."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from typing import Any

import pytest

from hookgate import DefinitionError, Engine, HookEvent, MemoryAudit, Settings
from hookgate.approvals import ApprovalRequest, CallbackApprover

RM = {"tool_name": "Bash", "tool_input": {"command": "rm -rf /tmp/x"}}


async def test_a_shadow_block_is_recorded_as_would_block_and_allows() -> None:
    audit = MemoryAudit()
    engine = Engine(audit=audit)

    @engine.hook("pre_tool_use", matcher="Bash", mode="shadow", name="no-rm")
    def no_rm(event: HookEvent) -> dict[str, Any]:
        return {"decision": "block", "reason": "rm is not allowed"}

    outcome = await engine.fire("pre_tool_use", RM)
    assert outcome.decision == "allow" and outcome.reason is None
    (entry,) = outcome.shadow
    assert (entry.name, entry.mode, entry.decision) == ("no-rm", "shadow", "would_block")
    assert entry.would_block and entry.details["reason"] == "rm is not allowed"
    assert outcome.to_dict()["trace"][0]["mode"] == "shadow"
    (record,) = audit.records
    assert record.decision == "would_block" and record.reason == "rm is not allowed"
    assert record.mode == "shadow" and record.metadata["mode"] == "shadow"
    (dispatch,) = audit.dispatches
    assert dispatch.decision == "allow"
    assert dispatch.executions[0].hook_entry()["mode"] == "shadow"
    await engine.aclose()


async def test_nothing_a_shadow_hook_answers_reaches_the_outcome() -> None:
    asked: list[ApprovalRequest] = []

    def approve(request: ApprovalRequest) -> dict[str, Any]:
        asked.append(request)
        return {"approved": True}

    engine = Engine(approver=CallbackApprover(approve))
    answers = [
        {"updated_input": {"command": "echo replaced"}, "additional_context": "injected"},
        {"result": "synthetic"},
        {"abort": "hard", "reason": "stop everything"},
        {"decision": "ask", "reason": "a person should look"},
        {"continue": False, "reason": "halt"},
    ]
    for index, answer in enumerate(answers):
        engine.add({
            "event": "pre_tool_use", "handler_type": "callable", "name": f"shadow-{index}",
            "mode": "shadow", "config": {"callable": lambda _e, a=answer: a},
        })

    @engine.hook("pre_tool_use", name="sees-input")
    def sees(event: HookEvent) -> None:
        assert event.tool_input == RM["tool_input"]

    outcome = await engine.fire("pre_tool_use", RM)
    assert outcome.decision == "allow" and outcome.continue_
    assert outcome.updated_input is None and outcome.additional_context == []
    assert outcome.result is None and outcome.abort is None and outcome.approval is None
    assert asked == []
    decisions = {e.name: (e.decision, e.details) for e in outcome.shadow}
    assert decisions["shadow-0"] == (
        "would_allow", {"would_rewrite": True, "would_add_context": 1}
    )
    assert decisions["shadow-1"][0] == "would_respond"
    assert decisions["shadow-2"][0] == "would_abort"
    assert decisions["shadow-3"][0] == "would_ask"
    assert decisions["shadow-4"][0] == "would_block"
    await engine.aclose()


async def test_a_shadow_hook_sees_the_input_the_agent_sent() -> None:
    """An enforce hook's rewrite is the agent's business; shadow hooks judge what came in."""
    engine = Engine()
    seen: list[Any] = []

    @engine.hook("pre_tool_use", priority=10)
    def rewrite(event: HookEvent) -> dict[str, Any]:
        return {"updated_input": {"command": "echo safe"}}

    @engine.hook("pre_tool_use", mode="shadow")
    def watch(event: HookEvent) -> None:
        seen.append(event.tool_input)

    outcome = await engine.fire("pre_tool_use", RM)
    assert outcome.updated_input == {"command": "echo safe"}
    assert seen == [RM["tool_input"]]
    await engine.aclose()


async def test_failing_shadow_hooks_never_block_nor_trip_a_breaker() -> None:
    engine = Engine(settings=Settings(breaker_threshold=2))

    @engine.hook("pre_tool_use", mode="shadow", name="raises")
    def raises(event: HookEvent) -> None:
        raise RuntimeError("shadow bug")

    @engine.hook("pre_tool_use", mode="shadow", name="slow", timeout_ms=30)
    async def slow(event: HookEvent) -> None:
        await asyncio.sleep(5)

    @engine.hook("pre_tool_use", mode="shadow", name="malformed")
    def malformed(event: HookEvent) -> Any:
        return {"decision": "maybe"}

    for _ in range(4):
        outcome = await engine.fire("pre_tool_use", RM)
        assert outcome.decision == "allow"
        found = {e.name: (e.decision, e.error) for e in outcome.shadow}
        assert found["raises"][0] == "would_block" and "shadow bug" in str(found["raises"][1])
        assert found["slow"][0] == "would_block" and "timed out" in str(found["slow"][1])
        assert found["malformed"][0] == "would_block"
    assert engine.breakers.statuses == {}
    await engine.aclose()


async def test_a_failing_shadow_hook_with_on_error_allow_says_error() -> None:
    engine = Engine()

    @engine.hook("pre_tool_use", mode="shadow", on_error="allow")
    def raises(event: HookEvent) -> None:
        raise RuntimeError("tolerated")

    (entry,) = (await engine.fire("pre_tool_use", RM)).shadow
    assert entry.decision == "error" and "tolerated" in str(entry.error)
    await engine.aclose()


async def test_on_a_non_blocking_event_shadow_hooks_run_after_the_answer() -> None:
    audit = MemoryAudit()
    engine = Engine(audit=audit)
    release = asyncio.Event()

    @engine.hook("post_tool_use", mode="shadow", name="late")
    async def late(event: HookEvent) -> dict[str, Any]:
        await release.wait()
        return {"decision": "block", "reason": "output leaks a key"}

    outcome = await engine.fire("post_tool_use", {**RM, "tool_output": "ok"})
    assert outcome.decision == "allow" and outcome.shadow == []
    release.set()
    await engine.drain()
    (record,) = audit.records
    assert (record.decision, record.reason) == ("would_block", "output leaks a key")
    assert audit.dispatches[0].id == outcome.dispatch_id
    await engine.aclose()


def test_fire_sync_runs_shadow_hooks_and_they_do_not_decide() -> None:
    engine = Engine()

    @engine.hook("pre_tool_use", mode="shadow")
    def deny(event: HookEvent) -> dict[str, Any]:
        return {"decision": "block", "reason": "sync shadow"}

    outcome = engine.fire_sync("pre_tool_use", RM)
    assert outcome.allowed and [e.decision for e in outcome.shadow] == ["would_block"]
    engine.close()


async def test_stuck_shadow_workers_count_against_no_enforce_hook() -> None:
    """The worker caps of isolated functions are the enforce hooks' own: shadow hooks that
    hang fill their own pool, never the one enforce hooks run on."""
    engine = Engine(settings=Settings(hook_threads_max_stuck=1))
    release = threading.Event()

    @engine.hook("pre_tool_use", mode="shadow", isolate="thread", timeout_ms=20)
    def hangs(event: HookEvent) -> None:
        release.wait(10)

    @engine.hook("pre_tool_use", isolate="thread", name="guard")
    def guard(event: HookEvent) -> dict[str, Any]:
        return {"decision": "allow"}

    try:
        for _ in range(3):
            outcome = await engine.fire("pre_tool_use", RM)
            assert outcome.decision == "allow", outcome.reason
            assert [e.decision for e in outcome.trace if e.name == "guard"] == ["allow"]
        assert engine.threads.stuck == 0
        assert engine.shadow_runner.pool.stuck >= 1
        stats = engine.stats.to_dict()
        assert stats["hook_threads_stuck"] == 0 and stats["shadow_hook_threads_stuck"] >= 1
    finally:
        release.set()
        await engine.aclose()


async def test_promoting_a_shadow_hook_makes_it_decide() -> None:
    engine = Engine()

    @engine.hook("pre_tool_use", mode="shadow", name="no-rm")
    def no_rm(event: HookEvent) -> dict[str, Any]:
        return {"decision": "block", "reason": "rm is not allowed"}

    assert (await engine.fire("pre_tool_use", RM)).allowed
    (shadow,) = engine.registry.definitions()
    engine.registry.put(shadow.bumped(mode="enforce"))
    outcome = await engine.fire("pre_tool_use", RM)
    assert outcome.blocked and outcome.reason == "rm is not allowed" and outcome.shadow == []
    await engine.aclose()


async def test_simulate_shows_shadow_hooks_without_letting_them_decide() -> None:
    engine = Engine()

    @engine.hook("pre_tool_use", mode="shadow", name="no-rm")
    def no_rm(event: HookEvent) -> dict[str, Any]:
        return {"decision": "block", "reason": "rm is not allowed"}

    outcome = await engine.simulate("pre_tool_use", RM)
    assert outcome.allowed and [e.decision for e in outcome.shadow] == ["would_block"]
    # Testing the one hook shows its own answer.
    (definition,) = engine.registry.definitions()
    assert (await engine.test(definition, RM)).blocked
    await engine.aclose()


async def test_a_hooks_file_takes_mode(tmp_path: Path) -> None:
    hooks = tmp_path / "hooks.yaml"
    hooks.write_text(
        "hooks:\n"
        "  - name: no-rm\n"
        "    event: pre_tool_use\n"
        "    handler_type: callable\n"
        "    mode: shadow\n"
        "    matcher: Bash\n"
        "    config: {callable: 'tests.test_shadow:deny_everything'}\n"
    )
    engine = Engine()
    (definition,) = engine.load(hooks)
    assert definition.mode == "shadow" and definition.to_dict()["mode"] == "shadow"
    outcome = await engine.fire("pre_tool_use", RM)
    assert outcome.allowed and [e.decision for e in outcome.shadow] == ["would_block"]
    await engine.aclose()


def deny_everything(event: HookEvent) -> dict[str, Any]:
    return {"decision": "block", "reason": "file hook"}


@pytest.mark.parametrize("mode", ["audit", "Shadow", 1, True])
def test_an_unknown_mode_is_refused_naming_the_field(mode: Any) -> None:
    with pytest.raises(DefinitionError) as info:
        Engine().add({
            "event": "pre_tool_use", "handler_type": "callable", "mode": mode,
            "config": {"callable": deny_everything},
        })
    (problem,) = info.value.problems
    assert problem.field == "mode" and "'enforce' or 'shadow'" in problem.message


def test_mode_defaults_to_enforce() -> None:
    definition = Engine().add({
        "event": "pre_tool_use", "handler_type": "callable",
        "config": {"callable": deny_everything},
    })
    assert definition.mode == "enforce" and definition.to_dict()["mode"] == "enforce"


async def test_a_shadow_hooks_reason_is_bounded() -> None:
    from hookgate.shadow import SHADOW_REASON_CHARS

    engine = Engine()

    @engine.hook("pre_tool_use", mode="shadow")
    def verbose(event: HookEvent) -> dict[str, Any]:
        return {"decision": "block", "reason": "x" * 1_000_000}

    (entry,) = (await engine.fire("pre_tool_use", RM)).shadow
    assert len(entry.details["reason"]) == SHADOW_REASON_CHARS
    await engine.aclose()
