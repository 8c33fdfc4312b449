"""Unconditional runs (hookgate.chain): hooks admitted whatever the payload get their calls once per
hook list, and an abstention (replied by its duration alone) is folded straight into its trace
row. They must give the same batches, outcome, trace and audit records as the general
admission, which looks at every hook; these tests turn unconditional runs off to compare."""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Mapping, Sequence
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests.support.chain_calls import TIMEOUT, Scripted, compile_scripted, reply_for

from hookgate import Engine, HookEvent
from hookgate.audit import ExecutionRecord
from hookgate.chain import (
    Batch,
    ChainSettings,
    HookReply,
    Reply,
    drive_sync,
    run_chain,
    stops_blocking_batch,
)
from hookgate.compiled_hook import HookList
from hookgate.events import get_event
from hookgate.outcome import HookError, Outcome, TraceRow
from hookgate.registry import CompiledHook
from hookgate.safeguards import BreakerBoard
from hookgate.settings import Settings

EXEC = {"tool_name": "exec", "tool_input": {"cmd": "ls"}}


def _scripted(
    calls: Any, names: list[str], answers: Mapping[str, Any], abstentions: str
) -> list[Reply]:
    """A batch's replies by the driver contract (it stops at the first that matters), each
    abstention given as ``abstentions`` says (see :func:`_drive`)."""
    replies: list[Reply] = []
    for (hook, _, row, _, _), name in zip(calls, names, strict=True):
        reply = reply_for(answers[name])
        if abstentions == "row" and row is None and not stops_blocking_batch(reply):
            reply = TraceRow(hook, True, "abstain", reply.duration_ms)
        replies.append(reply)
        if stops_blocking_batch(reply):
            break
    return replies


def _drive(
    hooks: Sequence[CompiledHook],
    answers: Mapping[str, Any],
    chain_settings: ChainSettings,
    *,
    abstentions: str,
) -> tuple[Outcome, list[list[str]]]:
    """Drive the chain by the driver contract with scripted answers (by hook name); an
    abstention replies as the async driver does (``"reply"``: a HookReply), or as the plain
    call loop does (``"row"``: an unconditional run's hook with its final trace row)."""
    chain = run_chain(hooks, get_event("pre_tool_use"), EXEC, chain_settings)
    batches: list[list[str]] = []
    try:
        batch: Batch = next(chain)
        while True:
            calls, _, _ = batch
            names = [hook.definition.name for hook, *_ in calls]
            batches.append(names)
            batch = chain.send(_scripted(calls, names, answers, abstentions))
    except StopIteration as done:
        return done.value, batches


def _drive_now(
    hooks: Sequence[CompiledHook],
    answers: Mapping[str, Any],
    chain_settings: ChainSettings,
    *,
    abstentions: str,
) -> tuple[Outcome, list[list[str]]]:
    """:func:`_drive` through drive_sync, where a list that is one unconditional run takes its
    shortcut."""
    batches: list[list[str]] = []

    def execute(calls: Any, _payload: Any, _deadline: Any) -> list[Reply]:
        names = [hook.definition.name for hook, *_ in calls]
        batches.append(names)
        return _scripted(calls, names, answers, abstentions)

    chain = run_chain(hooks, get_event("pre_tool_use"), EXEC, chain_settings)
    outcome = drive_sync(chain, execute)
    return outcome, batches


def _general(hooks: Sequence[CompiledHook]) -> tuple[CompiledHook, ...]:
    """The same hooks, never admitted as an unconditional run."""
    return tuple(dataclasses.replace(hook, unconditional=False) for hook in hooks)


KINDS: dict[str, Any] = {
    "abstain": None,
    "allow": {"decision": "allow"},
    "block": {"decision": "block", "reason": "no"},
    "rewrite": {"updated_input": {"cmd": "ls -la"}},
    "context": {"additional_context": "note"},
    "raise": RuntimeError("boom"),
    "hook_error": HookError("down", details={"status": 3}),
    "timeout": TIMEOUT,
    "malformed": {"decision": "maybe"},
}

hook_lists = st.lists(
    st.fixed_dictionaries(
        {
            "kind": st.sampled_from(list(KINDS)),
            "priority": st.integers(min_value=0, max_value=2),
            "enabled": st.booleans(),
            "matcher": st.sampled_from([None, None, "exec", "other"]),
            "approval": st.sampled_from([None, None, "required"]),
            "on_error": st.sampled_from(["block", "allow"]),
            "on_timeout": st.sampled_from(["block", "allow"]),
            "faulted": st.sampled_from([None, None, "closed", "open"]),
        }
    ),
    max_size=7,
)


def _board(hooks: Sequence[CompiledHook], faults: Mapping[str, str | None]) -> BreakerBoard:
    """A breaker board where the named hooks already have an entry (one fault: closed; or
    open, past nothing: its failure policy applies)."""
    board = BreakerBoard(threshold=1 if "open" in faults.values() else 5, cooldown_s=1e9)
    for hook in hooks:
        state = faults.get(hook.definition.name)
        if state == "closed":
            board.fault(hook.definition.id, "earlier")
            board.statuses[hook.definition.id].state = "closed"
        elif state == "open":
            board.fault(hook.definition.id, "earlier")
    return board


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    specs=hook_lists,
    approvals=st.booleans(),
    abstentions=st.sampled_from(["reply", "row"]),
    now=st.booleans(),
)
def test_unconditional_runs_give_what_the_general_admission_gives(
    specs: list[dict[str, Any]], approvals: bool, abstentions: str, now: bool
) -> None:
    """Driven as a generator step by step, or by drive_sync with the unconditional run known (the
    shortcut of a list that is one unconditional run)."""
    scripted = [
        Scripted(
            KINDS[spec["kind"]],
            f"h{n}",
            {
                key: spec[key]
                for key in ("priority", "enabled", "matcher", "approval", "on_error", "on_timeout")
                if spec[key] is not None
            },
        )
        for n, spec in enumerate(specs)
    ]
    hooks = tuple(compile_scripted("pre_tool_use", scripted))
    answers = {script.name: script.answer for script in scripted}
    faults = {f"h{n}": spec["faulted"] for n, spec in enumerate(specs)}

    def run(hook_list: Sequence[CompiledHook]) -> tuple[dict[str, Any], list[list[str]], Any]:
        board = _board(hook_list, faults)
        chain_settings = ChainSettings(breakers=board, approvals=approvals)
        drive = _drive_now if now else _drive
        outcome, batches = drive(hook_list, answers, chain_settings, abstentions=abstentions)
        breakers = {hook_id: status.to_dict() for hook_id, status in board.statuses.items()}
        # dispatch_id: one per dispatch (issue 27), never equal across two runs
        return ({**_without_dispatch_id(outcome.to_dict()), "ask": outcome.pending_approval},
                batches, breakers)

    assert run(hooks) == run(_general(hooks))


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    kinds=st.lists(st.sampled_from(["abstain"] * 8 + list(KINDS)), min_size=1, max_size=6),
    abstentions=st.sampled_from(["reply", "row"]),
)
def test_a_list_that_is_one_unconditional_run_gives_what_the_general_admission_gives(
    kinds: list[str], abstentions: str
) -> None:
    """The chain's shortcut (every hook unconditional, no breaker entry), whatever they answer."""
    scripted = [Scripted(KINDS[kind], f"h{n}") for n, kind in enumerate(kinds)]
    hooks = tuple(compile_scripted("pre_tool_use", scripted))
    assert all(hook.unconditional for hook in hooks)
    answers = {script.name: script.answer for script in scripted}

    def run(hook_list: Sequence[CompiledHook]) -> Any:
        board = BreakerBoard()
        outcome, batches = _drive_now(
            hook_list, answers, ChainSettings(breakers=board), abstentions=abstentions
        )
        breakers = {hook_id: status.to_dict() for hook_id, status in board.statuses.items()}
        return _without_dispatch_id(outcome.to_dict()), batches, breakers

    assert run(hooks) == run(_general(hooks))


def test_an_answer_mid_run_starts_a_new_run_that_sees_it() -> None:
    """An answer in the middle of an unconditional run starts a new run that sees it."""
    hooks = tuple(
        compile_scripted("pre_tool_use", [Scripted(name=f"h{n}") for n in range(4)])
    )
    assert all(hook.unconditional for hook in hooks)
    answers: dict[str, Any] = {"h0": None, "h1": KINDS["rewrite"], "h2": None, "h3": None}
    outcome, batches = _drive(hooks, answers, ChainSettings(), abstentions="row")
    assert batches == [["h0", "h1", "h2", "h3"], ["h2", "h3"]]
    assert outcome.updated_input == {"cmd": "ls -la"}
    assert [(e.name, e.decision, e.matched) for e in outcome.trace] == [
        ("h0", "abstain", True),
        ("h1", "allow", True),
        ("h2", "abstain", True),
        ("h3", "abstain", True),
    ]


def test_a_hook_with_a_breaker_entry_runs_in_a_batch_of_its_own() -> None:
    """A hook with a breaker entry leaves the unconditional run: it runs in a batch of its own."""
    hooks = tuple(
        compile_scripted("pre_tool_use", [Scripted(name=f"h{n}") for n in range(3)])
    )
    board = _board(hooks, {"h1": "closed"})
    answers: dict[str, Any] = {"h0": None, "h1": None, "h2": None}
    outcome, batches = _drive(
        hooks, answers, ChainSettings(breakers=board), abstentions="row"
    )
    assert batches == [["h0"], ["h1"], ["h2"]]
    assert [e.decision for e in outcome.trace] == ["abstain"] * 3


def test_a_run_stopped_at_the_deadline_reports_the_spent_budget() -> None:
    """The driver stops an unconditional run when the budget is spent; the general admission then
    reports it (an unconditional run's admission does not read the clock)."""
    from hookgate.testing import FakeClock

    clock = FakeClock()
    hooks = tuple(
        compile_scripted("pre_tool_use", [Scripted(name=f"h{n}") for n in range(3)])
    )
    chain = run_chain(hooks, get_event("pre_tool_use"), EXEC, ChainSettings(clock=clock))
    calls, _, deadline = next(chain)
    assert deadline is not None and len(calls) == 3
    clock.advance(11)  # h0 took the whole budget: the driver runs nothing more
    try:
        chain.send([HookReply(None, None, False, 5.0)])
    except StopIteration as done:
        outcome: Outcome = done.value
    assert outcome.decision == "block" and "budget" in (outcome.reason or "")
    assert [(e.name, e.decision) for e in outcome.trace] == [("h0", "abstain"), ("h1", "timeout")]


# -- through the engine: fire_sync's plain functions -----------------------------------------


def _records_of(engine: Engine) -> list[ExecutionRecord]:
    records: list[ExecutionRecord] = []
    engine.listeners.append(records.extend)
    return records


def _comparable(records: list[ExecutionRecord], outcome: Outcome) -> Any:
    unique = ("id", "created_at", "event_id", "duration_ms", "dispatch_id")
    rows = [{k: v for k, v in dataclasses.asdict(r).items() if k not in unique} for r in records]
    trace = _without_dispatch_id(outcome.to_dict())
    for entry in trace["trace"]:
        entry.pop("duration_ms")
    return rows, trace


def _unconditional_runs_off(engine: Engine) -> None:
    """Make the hook list the chain receives for EXEC a general admission from its first
    hook (its kept unconditional run says so)."""
    hooks = engine.source.select(get_event("pre_tool_use"), EXEC)  # type: ignore[attr-defined]
    assert isinstance(hooks, HookList)
    hooks.unconditional_run = (len(hooks), ())


def test_fire_sync_audit_records_are_those_of_the_general_admission() -> None:
    """fire_sync's audit records are those of the general admission."""
    engine = Engine()
    try:
        engine.hook("pre_tool_use", name="quiet", priority=3)(lambda event: None)
        engine.hook("pre_tool_use", name="off", priority=2, enabled=False)(lambda event: None)

        @engine.hook("pre_tool_use", name="rewrites", priority=1)
        def rewrites(event: HookEvent) -> Any:
            return {"updated_input": {"cmd": "ls -la"}, "reason": "tidier"}

        @engine.hook("pre_tool_use", name="fails", on_error="allow")
        def fails(event: HookEvent) -> Any:
            raise RuntimeError("boom")

        engine.hook("pre_tool_use", name="last", priority=-1)(lambda event: None)
        records = _records_of(engine)
        fast = engine.fire_sync("pre_tool_use", EXEC)
        fast_view = _comparable(records, fast)
        assert [r.decision for r in records] == ["abstain", "allow", "error", "abstain"]
        records.clear()
        _unconditional_runs_off(engine)
        general = engine.fire_sync("pre_tool_use", EXEC)
        assert _comparable(records, general) == fast_view
    finally:
        engine.close()


@pytest.mark.parametrize("answering", [None, "rewrites", "fails"])
@pytest.mark.parametrize("mode", ["in_place", "worker", "mixed"])
def test_fire_sync_of_one_unconditional_run_gives_the_general_admissions_records(
    answering: str | None, mode: str
) -> None:
    """Every hook unconditional: the chain's shortcut, with the rows the call loop makes (in place,
    on a worker, or both in one batch)."""
    answers: dict[str, Any] = {
        "rewrites": {"updated_input": {"cmd": "ls -la"}, "reason": "tidier"},
        "fails": RuntimeError("boom"),
    }

    def hook_for(name: str) -> Any:
        def hook(event: HookEvent) -> Any:
            answer = answers.get(name) if name == answering else None
            if isinstance(answer, Exception):
                raise answer
            return answer

        return hook

    engine = Engine(settings=Settings(isolate_callables=mode == "worker"))
    try:
        for priority, name in enumerate(["last", "fails", "rewrites", "quiet"]):
            isolate = "thread" if mode == "mixed" and priority % 2 else None
            engine.hook(
                "pre_tool_use", name=name, priority=priority, on_error="allow", isolate=isolate
            )(hook_for(name))
        records = _records_of(engine)
        # From here on the hook list's unconditional run is known.
        engine.fire_sync("pre_tool_use", EXEC)
        records.clear()
        fast = engine.fire_sync("pre_tool_use", EXEC)
        fast_view = _comparable(records, fast)
        assert len(records) == 4
        records.clear()
        _unconditional_runs_off(engine)
        general = engine.fire_sync("pre_tool_use", EXEC)
        assert _comparable(records, general) == fast_view
    finally:
        engine.close()


def test_fire_sync_a_timeout_mid_run_ends_the_chain() -> None:
    """An isolated hook past its timeout is given up mid-run (its batch's other hooks run in
    place); the hooks after it do not run, and the hooks before it keep their abstentions."""
    engine = Engine()
    never = threading.Event()
    ran: list[str] = []
    try:
        for n in range(3):
            engine.hook("pre_tool_use", name=f"q{n}", priority=10 - n)(
                lambda event, n=n: ran.append(f"q{n}")
            )

        @engine.hook("pre_tool_use", name="stuck", priority=1, timeout_ms=100, isolate="thread")
        def stuck(event: HookEvent) -> None:
            ran.append("stuck")
            never.wait(30)

        engine.hook("pre_tool_use", name="after", priority=0)(lambda event: ran.append("after"))
        outcome = engine.fire_sync("pre_tool_use", EXEC)
    finally:
        never.set()
        engine.close()
    assert outcome.decision == "block"
    assert ran == ["q0", "q1", "q2", "stuck"]
    assert [(e.name, e.decision) for e in outcome.trace] == [
        ("q0", "abstain"),
        ("q1", "abstain"),
        ("q2", "abstain"),
        ("stuck", "timeout"),
    ]


def test_fire_sync_approval_required_and_disabled_hooks_leave_the_run() -> None:
    """A hook needing approval is not unconditional: without an approver its abstention blocks."""
    engine = Engine()
    try:
        engine.hook("pre_tool_use", name="quiet", priority=2)(lambda event: None)
        engine.hook("pre_tool_use", name="off", priority=1, enabled=False)(lambda event: None)
        engine.hook("pre_tool_use", name="gate", approval="required")(lambda event: None)
        hooks = engine.source.resolve("pre_tool_use", None, None)
        assert [hook.unconditional for hook in hooks] == [True, False, False]
        outcome = engine.fire_sync("pre_tool_use", EXEC)
    finally:
        engine.close()
    assert outcome.decision == "block" and "requires approval" in (outcome.reason or "")
    assert [(e.name, e.decision, e.skipped) for e in outcome.trace] == [
        ("quiet", "abstain", None),
        ("off", None, "disabled"),
        ("gate", "ask", None),
    ]


def _without_dispatch_id(data: dict[str, Any]) -> dict[str, Any]:
    data.pop("dispatch_id", None)
    return data


def test_the_abstained_outcome_is_a_default_outcome_with_its_rows() -> None:
    """abstained_outcome sets every slot as ``Outcome()`` does (a slot added to Outcome and
    forgotten there would read differently, or raise, here)."""
    from hookgate.outcome import Outcome, abstained_outcome

    rows: list[Any] = []
    made, default = abstained_outcome(rows), Outcome()
    default._rows = rows
    for slot in Outcome.__slots__:
        assert getattr(made, slot) == getattr(default, slot), slot
    made_dict, default_dict = made.to_dict(), default.to_dict()
    del made_dict["dispatch_id"], default_dict["dispatch_id"]  # each names itself when read
    assert made_dict == default_dict
    assert made.additional_context is not abstained_outcome(rows).additional_context
