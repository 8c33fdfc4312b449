"""Engine behaviour: background queue, sync twin, audit records, dry runs, editions."""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path
from typing import Any

import pytest

from hookgate import DefinitionError, Engine, HookEvent, MemoryAudit, Settings
from hookgate.definition import HookDefinition

EXEC = {"tool_name": "exec", "tool_input": {"cmd": "ls"}}


async def test_non_blocking_event_never_delays_the_caller() -> None:
    """fire returns while the observing hook is still waiting (here: for the caller itself,
    so a fire that waited for it would never return)."""
    engine = Engine()
    done: list[str] = []
    release = asyncio.Event()

    @engine.hook("post_tool_use")
    async def slow(event: HookEvent) -> None:
        await release.wait()
        done.append(event.tool_name)

    outcome = await engine.fire("post_tool_use", EXEC)
    assert outcome.decision == "allow" and done == []
    release.set()
    await engine.drain()
    assert done == ["exec"]
    await engine.aclose()


async def test_background_errors_are_isolated_and_audited() -> None:
    """A failing background hook does not affect the others, and its error is audited."""
    audit = MemoryAudit()
    engine = Engine(audit=audit)

    @engine.hook("stop", name="broken")
    def broken(event: HookEvent) -> None:
        raise ValueError("observer bug")

    @engine.hook("stop", name="fine")
    def fine(event: HookEvent) -> dict[str, Any]:
        return {"additional_context": "ok"}

    assert (await engine.fire("stop", session_id="s1")).decision == "allow"
    await engine.drain()
    decisions = {r.hook_name: (r.decision, r.error) for r in audit.records}
    assert decisions["broken"][0] == "error" and "observer bug" in str(decisions["broken"][1])
    assert decisions["fine"] == ("allow", None)
    await engine.aclose()


async def test_full_background_queue_drops_and_counts() -> None:
    """A full background queue drops events and counts them."""
    engine = Engine(settings=Settings(background_queue_size=2, background_workers=1))
    release = asyncio.Event()
    picked_up = asyncio.Event()
    ran: list[int] = []

    @engine.hook("post_tool_use")
    async def blocked(event: HookEvent) -> None:
        picked_up.set()
        await release.wait()
        ran.append(1)

    for _ in range(10):
        await engine.fire("post_tool_use", EXEC)
    await asyncio.wait_for(picked_up.wait(), timeout=10)  # the worker took the first job
    for _ in range(3):
        await engine.fire("post_tool_use", EXEC)
    release.set()
    await engine.drain()
    assert engine.stats.background_dropped == 8 + 2  # 10 + 3 fired, 3 ran
    assert len(ran) == 13 - engine.stats.background_dropped
    await engine.aclose()


def test_fire_sync_runs_async_hooks_and_background_work() -> None:
    """fire_sync runs coroutine hooks and queued background work on its loop thread."""
    engine = Engine()
    seen: list[str] = []

    @engine.hook("pre_tool_use")
    async def check(event: HookEvent) -> dict[str, Any]:
        await asyncio.sleep(0)
        return {"decision": "block", "reason": "async says no"}

    @engine.hook("post_tool_use")
    def observe(event: HookEvent) -> None:
        seen.append(event.tool_name)

    assert engine.fire_sync("pre_tool_use", EXEC).reason == "async says no"
    engine.fire_sync("post_tool_use", EXEC)
    engine.drain_sync()
    assert seen == ["exec"]
    engine.close()


async def test_audit_records_every_execution_once() -> None:
    """Every hook execution is audited once, a retried event id included."""
    audit = MemoryAudit()
    engine = Engine(audit=audit)
    engine.hook("pre_tool_use", name="allowing")(lambda e: {"decision": "allow"})
    engine.hook("pre_tool_use", name="not-matching", matcher="^write$")(lambda e: None)
    await engine.fire("pre_tool_use", {**EXEC, "session_id": "s1", "event_id": "e1"})
    await engine.fire("pre_tool_use", {**EXEC, "session_id": "s1", "event_id": "e1"})  # retried
    assert len(audit.records) == 1
    record = audit.records[0]
    assert (record.hook_name, record.decision, record.session_id) == ("allowing", "allow", "s1")
    assert record.dedup_key.endswith(":e1") and len(record.input_hash) == 64


async def test_dry_run_writes_no_audit_and_spares_the_breaker() -> None:
    """Engine.test runs the hook without an audit record or a breaker entry."""
    audit = MemoryAudit()
    engine = Engine(audit=audit)
    raw = {"event": "pre_tool_use", "handler_type": "callable", "scope": "tenant",
           "config": {"callable": "tests.fixtures.sample_hooks:add_flag"}}
    outcome = await engine.test(raw, {"toolName": "exec", "toolInput": {"cmd": "ls"}})
    assert outcome.updated_input == {"cmd": "ls", "dry_run": True}
    assert outcome.trace[0].decision == "allow"
    assert audit.records == []


def test_callables_named_by_import_path(tmp_path: Path) -> None:
    """Callables named by import path in a hooks file load and run, sync and async."""
    hooks = tmp_path / "hooks.yaml"
    hooks.write_text(
        "hooks:\n"
        "  - {event: pre_tool_use, handler_type: callable, name: rm,\n"
        "     config: {callable: 'tests.fixtures.sample_hooks:block_rm'}}\n"
        "  - {event: PreToolUse, handler_type: callable, name: ctx,\n"
        "     config: {callable: 'tests.fixtures.sample_hooks:async_context'}}\n"
    )
    engine = Engine()
    assert [d.name for d in engine.load(hooks)] == ["rm", "ctx"]
    outcome = engine.fire_sync("pre_tool_use", tool_name="exec", tool_input={"cmd": "rm -rf /"})
    assert outcome.reason == "rm -rf is not allowed"
    outcome = engine.fire_sync("pre_tool_use", tool_name="exec", tool_input={"cmd": "ls"},
                               session_id="s9")
    assert outcome.additional_context == ["session s9"]
    engine.close()


def test_standard_edition_refuses_command_at_definition_and_dispatch() -> None:
    """The standard edition refuses command hooks when defined and when dispatched."""
    engine = Engine(settings=Settings(edition="standard"))
    with pytest.raises(DefinitionError, match="standard edition"):
        engine.add({"event": "pre_tool_use", "handler_type": "command",
                    "config": {"command": "true"}})
    # A row that slipped past validation (say, written before an edition change) still fails.
    engine.registry.put(HookDefinition(event="pre_tool_use", handler_type="command",
                                       config={"command": "true"}))
    outcome = engine.fire_sync("pre_tool_use", EXEC)
    assert outcome.decision == "block"
    assert "standard edition" in (outcome.trace[0].error or "")
    engine.close()


async def test_scopes_select_hooks_per_tenant_and_agent() -> None:
    """Global, tenant and agent scopes select hooks per tenant and agent."""
    engine = Engine()
    for name, scope, extra in [("global", "global", {}),
                               ("tenant-a", "tenant", {"tenant_id": "A"}),
                               ("agent-a1", "agent", {"tenant_id": "A", "agent_ids": ["a1"]})]:
        engine.add({"event": "pre_tool_use", "handler_type": "callable", "scope": scope,
                    "name": name, "config": {"callable": lambda e: None}, **extra})

    async def names(**ids: str) -> list[str]:
        outcome = await engine.fire("pre_tool_use", EXEC, **ids)
        return [t.name for t in outcome.trace]

    assert await names(tenant_id="A", agent_id="a1") == ["global", "tenant-a", "agent-a1"]
    assert await names(tenant_id="A", agent_id="a2") == ["global", "tenant-a"]
    assert await names(tenant_id="B", agent_id="a1") == ["global"]


async def test_unknown_event_is_refused() -> None:
    """Firing an unknown event name raises UnknownEventError."""
    from hookgate import UnknownEventError

    with pytest.raises(UnknownEventError):
        await Engine().fire("pre_tool")


async def test_cancelling_the_caller_is_not_a_hook_timeout() -> None:
    """Cancelling the caller cancels the fire; it is not reported as a hook timeout."""
    engine = Engine()
    started = asyncio.Event()

    @engine.hook("pre_tool_use", timeout_ms=5000)
    async def slow(event: HookEvent) -> None:
        started.set()
        await asyncio.sleep(10)

    task = asyncio.ensure_future(engine.fire("pre_tool_use", EXEC))
    await started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


async def test_a_hook_that_swallows_its_cancellation_still_times_out() -> None:
    """A hook that swallows its cancellation still times out, and the caller's task stays clean."""
    engine = Engine()

    @engine.hook("pre_tool_use", timeout_ms=50, name="stubborn")
    async def stubborn(event: HookEvent) -> dict[str, Any]:
        with contextlib.suppress(asyncio.CancelledError):  # ignores the engine, answers late
            await asyncio.sleep(1)
        return {"decision": "allow"}

    outcome = await engine.fire("pre_tool_use", EXEC)
    assert outcome.decision == "block" and outcome.trace[0].decision == "timeout"
    # The caller's task is left in a normal state: it can still await things.
    await asyncio.sleep(0)
    current = asyncio.current_task()
    assert current is not None and current.cancelling() == 0
