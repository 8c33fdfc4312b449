"""Approvals in the library: a hook asks, the engine's approver decides, the outcome follows."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from hookgate import DefinitionError, Engine, HookEvent, MemoryAudit
from hookgate.approvals import ApprovalDecision, ApprovalRequest, CallbackApprover

EXEC = {"tool_name": "exec", "tool_input": {"cmd": "rm -rf build"}, "session_id": "s1"}


def asking_engine(approver: Any, **hook_options: Any) -> Engine:
    engine = Engine(approver=approver)

    @engine.hook("pre_tool_use", name="asker", **hook_options)
    def asker(event: HookEvent) -> dict[str, Any] | None:
        if event.tool_input.get("cmd", "").startswith("rm"):
            return {"decision": "ask", "reason": "deletes files"}
        return None

    return engine


async def test_approved_ask_allows_and_the_request_names_tool_hook_and_reason() -> None:
    seen: list[ApprovalRequest] = []

    def approve(request: ApprovalRequest) -> bool:
        seen.append(request)
        return True

    engine = asking_engine(CallbackApprover(approve, name="alice"))
    outcome = await engine.fire("pre_tool_use", EXEC)
    assert outcome.decision == "allow"
    assert outcome.reason == "approved by alice"
    assert outcome.updated_input is None
    assert outcome.approval is not None and outcome.approval["status"] == "approved"
    [request] = seen
    assert (request.tool_name, request.tool_input) == ("exec", {"cmd": "rm -rf build"})
    assert (request.hook_name, request.reason, request.kind) == ("asker", "deletes files", "ask")
    assert request.session_id == "s1" and request.timeout_s == 60.0
    assert [entry.decision for entry in outcome.trace] == ["ask"]


async def test_denied_blocks_with_the_comment_and_edited_input_becomes_updated_input() -> None:
    deny = asking_engine(
        CallbackApprover(lambda r: {"approved": False, "comment": "not today"}, name="bob")
    )
    outcome = await deny.fire("pre_tool_use", EXEC)
    assert outcome.decision == "block" and outcome.reason == "denied by bob: not today"

    edit = asking_engine(
        CallbackApprover(
            lambda r: {"approved": True, "updated_input": {"cmd": "rm -rf build/tmp"}},
            name="carol",
        )
    )
    outcome = await edit.fire("pre_tool_use", EXEC)
    assert outcome.decision == "allow" and outcome.updated_input == {"cmd": "rm -rf build/tmp"}
    assert outcome.approval is not None and outcome.approval["input_edited"] is True


async def test_an_approver_that_never_answers_expires_into_the_policy() -> None:
    never = asyncio.Event()

    async def wait_forever(request: ApprovalRequest) -> bool:
        await never.wait()
        return True

    blocked = asking_engine(CallbackApprover(wait_forever), approval={"timeout_ms": 1000})
    outcome = await blocked.fire("pre_tool_use", EXEC)
    assert outcome.decision == "block" and "not decided within 1 s" in (outcome.reason or "")
    assert outcome.approval is not None and outcome.approval["status"] == "expired"

    allowed = asking_engine(
        CallbackApprover(wait_forever), approval={"timeout_ms": 1000, "on_timeout": "allow"}
    )
    outcome = await allowed.fire("pre_tool_use", EXEC)
    assert outcome.decision == "allow" and "allowed by its policy" in (outcome.reason or "")


async def test_failing_or_confused_approvers_deny() -> None:
    def broken(request: ApprovalRequest) -> bool:
        raise RuntimeError("approver crashed")

    outcome = await asking_engine(CallbackApprover(broken)).fire("pre_tool_use", EXEC)
    assert outcome.decision == "block" and "approver crashed" in (outcome.reason or "")
    outcome = await asking_engine(CallbackApprover(lambda r: "yes")).fire("pre_tool_use", EXEC)
    assert outcome.decision == "block"


async def test_without_an_approver_ask_and_required_block() -> None:
    engine = asking_engine(None)
    outcome = await engine.fire("pre_tool_use", EXEC)
    assert outcome.decision == "block" and "no approver" in (outcome.reason or "")

    required = Engine()
    required.add(
        {
            "event": "pre_tool_use",
            "handler_type": "callable",
            "name": "gate",
            "approval": "required",
            "config": {"callable": lambda event: None},
        }
    )
    outcome = await required.fire("pre_tool_use", EXEC)
    assert outcome.decision == "block" and "requires approval" in (outcome.reason or "")


async def test_required_approval_asks_even_when_the_hook_abstains() -> None:
    asked: list[str] = []

    def approve(request: ApprovalRequest) -> ApprovalDecision:
        asked.append(request.kind)
        return ApprovalDecision("approved", decided_by="dana")

    engine = Engine(approver=CallbackApprover(approve))

    @engine.hook("pre_tool_use", matcher="^exec$", approval="required")
    def observe(event: HookEvent) -> None:
        return None

    assert (await engine.fire("pre_tool_use", EXEC)).decision == "allow"
    assert (await engine.fire("pre_tool_use", {"tool_name": "read"})).decision == "allow"
    assert asked == ["required"]  # the matcher decides which calls need a person


async def test_a_later_block_wins_without_asking_and_later_rewrites_are_shown() -> None:
    asked: list[Any] = []
    engine = Engine(approver=CallbackApprover(lambda r: asked.append(r.tool_input) or True))

    @engine.hook("pre_tool_use", priority=10)
    def ask(event: HookEvent) -> dict[str, Any]:
        return {"decision": "ask"}

    @engine.hook("pre_tool_use", priority=5)
    def rewrite(event: HookEvent) -> dict[str, Any]:
        return {"updated_input": {"cmd": event.tool_input["cmd"] + " --dry-run"}}

    @engine.hook("pre_tool_use", priority=1)
    def guard(event: HookEvent) -> dict[str, Any] | None:
        return {"decision": "block", "reason": "no"} if event.tool_name == "danger" else None

    outcome = await engine.fire("pre_tool_use", {"tool_name": "danger", "tool_input": {"cmd": "x"}})
    assert outcome.decision == "block" and asked == []
    outcome = await engine.fire("pre_tool_use", EXEC)
    assert outcome.decision == "allow" and asked == [{"cmd": "rm -rf build --dry-run"}]
    assert outcome.updated_input == {"cmd": "rm -rf build --dry-run"}


def test_fire_sync_waits_for_the_approver_too() -> None:
    audit = MemoryAudit()
    engine = Engine(approver=CallbackApprover(lambda r: False, name="erin"), audit=audit)

    @engine.hook("pre_tool_use", name="asker")
    def asker(event: HookEvent) -> dict[str, Any]:
        return {"decision": "defer"}

    try:
        outcome = engine.fire_sync("pre_tool_use", EXEC)
        assert outcome.decision == "block" and outcome.reason == "denied by erin"
        assert [r.decision for r in audit.records] == ["ask"]
    finally:
        engine.close()


@pytest.mark.parametrize(
    ("approval", "field"),
    [
        ("always", "approval"),
        ({"timeout_ms": 10}, "approval.timeout_ms"),
        ({"timeout_ms": 25 * 3600 * 1000}, "approval.timeout_ms"),
        ({"on_timeout": "maybe"}, "approval.on_timeout"),
        ({"required": "yes"}, "approval.required"),
        ({"who": "me"}, "approval.who"),
    ],
)
def test_bad_approval_settings_are_reported_by_field(approval: Any, field: str) -> None:
    with pytest.raises(DefinitionError) as caught:
        Engine().add(
            {
                "event": "pre_tool_use",
                "handler_type": "callable",
                "approval": approval,
                "config": {"callable": lambda event: None},
            }
        )
    assert field in [problem.field for problem in caught.value.problems]


def test_hours_long_approvals_are_accepted() -> None:
    definition = Engine().add(
        {
            "event": "pre_tool_use",
            "handler_type": "callable",
            "approval": {"timeout_ms": 4 * 3600 * 1000},
            "config": {"callable": lambda event: None},
        }
    )
    assert definition.approval_policy.timeout_ms == 4 * 3600 * 1000
    assert definition.to_dict()["approval"]["on_timeout"] == "block"


async def test_openclaw_require_approval_asks_with_its_own_timeout_and_behavior() -> None:
    never = asyncio.Event()
    seen: list[ApprovalRequest] = []

    async def slow_person(request: ApprovalRequest) -> bool:
        seen.append(request)
        await never.wait()
        return False

    engine = Engine(approver=CallbackApprover(slow_person))

    @engine.hook("pre_tool_use", name="openclaw plugin")
    def plugin(event: HookEvent) -> dict[str, Any]:
        return {
            "requireApproval": {
                "title": "Deploy to prod?",
                "description": "the plugin wants a person",
                "timeoutMs": 1000,
                "timeoutBehavior": "allow",
            }
        }

    outcome = await engine.fire("pre_tool_use", EXEC)
    assert outcome.decision == "allow" and "allowed by its policy" in (outcome.reason or "")
    [request] = seen
    assert request.reason == "Deploy to prod?: the plugin wants a person"
    assert (request.timeout_s, request.on_timeout) == (1.0, "allow")

    without = Engine()
    without.hook("pre_tool_use")(plugin)
    outcome = await without.fire("pre_tool_use", EXEC)
    assert outcome.decision == "block" and "no approver" in (outcome.reason or "")


@pytest.mark.parametrize(
    "answer",
    [
        {"requireApproval": "yes"},
        {"requireApproval": {"title": "x", "timeoutMs": 5}},
        {"requireApproval": {"title": "x", "timeoutBehavior": "maybe"}},
        {"requireApproval": {"title": "x"}, "decision": "allow"},
    ],
)
async def test_malformed_require_approval_blocks(answer: dict[str, Any]) -> None:
    engine = Engine(approver=CallbackApprover(lambda request: True))
    engine.hook("pre_tool_use")(lambda event: answer)
    outcome = await engine.fire("pre_tool_use", EXEC)
    assert outcome.decision == "block" and "malformed" in (outcome.trace[0].error or "")


async def test_an_edited_input_goes_through_the_hooks_after_the_one_that_asked() -> None:
    """Issue 24, item 2: the person's edit is what runs, so the later hooks judge it."""
    audit = MemoryAudit()
    edits = iter([{"cmd": "rm -rf /"}, {"cmd": "ls"}])
    engine = Engine(
        approver=CallbackApprover(lambda r: {"approved": True, "updated_input": next(edits)}),
        audit=audit,
    )

    @engine.hook("pre_tool_use", priority=10)
    def ask(event: HookEvent) -> dict[str, Any]:
        return {"decision": "ask", "additional_context": "asked a person"}

    @engine.hook("pre_tool_use", priority=1)
    def no_rm(event: HookEvent) -> dict[str, Any] | None:
        if "rm" in event.tool_input["cmd"]:
            return {"decision": "block", "reason": "no rm"}
        return {"additional_context": f"checked {event.tool_input['cmd']}"}

    blocked = await engine.fire("pre_tool_use", {"tool_name": "exec", "tool_input": {"cmd": "x"}})
    assert blocked.decision == "block" and blocked.reason is not None
    assert blocked.reason.endswith(": no rm")
    assert blocked.approval is not None and blocked.approval["input_edited"] is True
    assert [entry.decision for entry in blocked.trace] == ["ask", "allow", "block"]
    allowed = engine.fire_sync("pre_tool_use", {"tool_name": "exec", "tool_input": {"cmd": "x"}})
    assert allowed.decision == "allow" and allowed.updated_input == {"cmd": "ls"}
    assert allowed.additional_context == ["asked a person", "checked x", "checked ls"]
    engine.close()
