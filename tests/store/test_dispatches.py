"""Dispatch records: one per dispatch, through a real engine and audit writer into SQLite and
PostgreSQL; filters, approvals, refusals, sampling, redaction and sealing, retention."""

from __future__ import annotations

import time
from typing import Any

from hookgate import Engine
from hookgate.approvals import CallbackApprover
from hookgate.secrets.keyring import Keyring, generate_key_text
from hookgate.settings import Settings
from hookgate.store import Caller, DispatchQuery, DispatchRow, ExecutionQuery
from hookgate.store.audit_writer import AuditWriter, open_dispatch_detail
from hookgate.store.base import Store
from hookgate.store.retention import prune_dispatches

MASTER = Caller.master_scope()
SECRET = "sk-live0123456789abcdefSECRET"


def _engine(writer: AuditWriter, **settings: Any) -> Engine:
    engine = Engine(audit=writer, settings=Settings(**settings))

    @engine.hook("pre_tool_use", matcher="^exec$", name="no rm")
    def no_rm(event: Any) -> dict[str, str] | None:
        if "rm" in str(event.tool_input):
            return {"decision": "block", "reason": f"no rm (token {SECRET})"}
        return None

    return engine


async def _dispatches(store: Store, **filters: Any) -> list[DispatchRow]:
    page = await store.query_dispatches(MASTER, DispatchQuery(limit=1000, **filters))
    return list(page.items)


async def test_one_record_per_dispatch_naming_its_hooks(store: Store) -> None:
    async with AuditWriter(store, mode="sync") as writer:
        engine = _engine(writer)
        blocked = await engine.fire(
            "pre_tool_use",
            tool_name="exec",
            tool_input={"cmd": "rm -rf /"},
            tenant_id="t1",
            agent_id="a1",
            session_id="s1",
        )
        allowed = await engine.fire(
            "pre_tool_use", tool_name="exec", tool_input={"cmd": "ls"}, tenant_id="t1"
        )
        await writer.flush()
    assert blocked.decision == "block" and blocked.dispatch_id != allowed.dispatch_id
    (record,) = await _dispatches(store, session_id="s1")
    assert record.id == blocked.dispatch_id == blocked.to_dict()["dispatch_id"]
    assert (record.event, record.tool_name, record.agent_id, record.tenant_id) == (
        "pre_tool_use", "exec", "a1", "t1"
    )
    assert record.decision == "block" and record.matched == 1
    assert record.hooks[0]["hook_name"] == "no rm" and record.hooks[0]["decision"] == "block"
    assert record.input_size is not None and record.input_size > 20
    assert record.duration_ms >= 0 and record.approval is None
    # Every hook row of the dispatch names it.
    rows = (await store.query_executions(MASTER, ExecutionQuery(session_id="s1"))).items
    assert [row.dispatch_id for row in rows] == [blocked.dispatch_id]
    assert record.hooks[0]["execution_id"] == rows[0].id
    fetched = await store.get_dispatch(Caller.for_tenant("t1"), blocked.dispatch_id)
    assert fetched.id == blocked.dispatch_id


async def test_a_dispatch_no_hook_matched_is_recorded(store: Store) -> None:
    async with AuditWriter(store, mode="sync") as writer:
        engine = _engine(writer)
        # No hook for this event at all, and one whose hook does not match the tool.
        first = await engine.fire("user_prompt_submit", prompt="hello", session_id="quiet")
        second = await engine.fire(
            "pre_tool_use", tool_name="read", tool_input={}, session_id="quiet"
        )
        await writer.flush()
    records = await _dispatches(store, session_id="quiet")
    assert {r.id for r in records} == {first.dispatch_id, second.dispatch_id}
    assert all(r.matched == 0 and r.hooks == [] and r.decision == "allow" for r in records)
    prompt = next(r for r in records if r.event == "user_prompt_submit")
    assert prompt.input_summary == "hello"


async def test_unmatched_records_can_be_sampled_away(store: Store) -> None:
    async with AuditWriter(store, mode="sync") as writer:
        engine = _engine(writer, audit_unmatched_sample=0.0)
        await engine.fire("user_prompt_submit", prompt="x", session_id="sampled")
        await engine.fire("pre_tool_use", tool_name="read", session_id="sampled")
        kept = await engine.fire(
            "pre_tool_use", tool_name="exec", tool_input={"cmd": "rm"}, session_id="sampled"
        )
        await writer.flush()
    assert [r.id for r in await _dispatches(store, session_id="sampled")] == [kept.dispatch_id]


async def test_secrets_are_redacted_and_the_payload_only_sealed(store: Store) -> None:
    keyring = Keyring.from_text(generate_key_text())
    async with AuditWriter(store, mode="sync", keyring=keyring) as writer:
        engine = _engine(writer)
        outcome = await engine.fire(
            "pre_tool_use",
            tool_name="exec",
            tool_input={"cmd": f"rm {SECRET}", "api_key": "plain-value-0001"},
            session_id="sealed",
        )
        await writer.flush()
    (record,) = await _dispatches(store, session_id="sealed")
    readable = str(record.to_dict())
    assert SECRET not in readable and "plain-value-0001" not in readable
    assert "[REDACTED]" in (record.reason or "") and record.detail is not None
    detail = open_dispatch_detail(keyring, record)
    assert detail is not None and SECRET in str(detail["reason"])
    assert detail["payload"]["tool_input"]["api_key"] == "plain-value-0001"  # type: ignore[index]
    assert outcome.dispatch_id == record.id
    # Without a key nothing of the payload is kept.
    async with AuditWriter(store, mode="sync") as plain:
        engine = _engine(plain)
        await engine.fire(
            "pre_tool_use", tool_name="exec", tool_input={"cmd": "rm"}, session_id="unsealed"
        )
        await plain.flush()
    (unsealed,) = await _dispatches(store, session_id="unsealed")
    assert unsealed.detail is None


async def test_the_approval_says_who_decided_and_filters_find_it(store: Store) -> None:
    answers = iter([True, False, None])  # approve, deny, let it expire

    def person(request: Any) -> bool | None:
        return next(answers)

    async with AuditWriter(store, mode="sync") as writer:
        engine = Engine(audit=writer, approver=CallbackApprover(person, name="erin"))
        engine.add({"event": "pre_tool_use", "handler_type": "callable", "name": "ask",
                    "config": {"callable": lambda event: {"decision": "ask", "reason": "sure?"}}})
        outcomes = [
            await engine.fire("pre_tool_use", tool_name="deploy", session_id=f"ask-{n}")
            for n in range(3)
        ]
        await engine.fire("pre_tool_use", tool_name="deploy", session_id="ask-none",
                          agent_id="other")
        await writer.flush()
    assert [o.decision for o in outcomes] == ["allow", "block", "block"]
    records = {r.session_id: r for r in await _dispatches(store, decision="ask")}
    assert set(records) == {"ask-0", "ask-1", "ask-2", "ask-none"}
    statuses = [records[f"ask-{n}"].approval for n in range(3)]
    assert [a["status"] for a in statuses if a] == ["approved", "denied", "expired"]
    assert statuses[0] and statuses[0]["decided_by"] == "erin"
    assert all(a and a["id"] and records[f"ask-{n}"].approval_id == a["id"]
               for n, a in enumerate(statuses))
    # The ask rows name their dispatch, which names the approval.
    rows = (await store.query_executions(MASTER, ExecutionQuery(session_id="ask-1"))).items
    assert rows[0].decision == "ask" and rows[0].dispatch_id == outcomes[1].dispatch_id
    assert [r.session_id for r in await _dispatches(store, agent_id="other")] == ["ask-none"]
    assert len(await _dispatches(store, decision="block", tool_name="deploy")) == 3
    assert await _dispatches(store, since=time.time() + 60) == []


async def test_refused_input_is_a_dispatch_under_the_guards_name(store: Store) -> None:
    deep: Any = "x"
    for _ in range(300):
        deep = [deep]
    async with AuditWriter(store, mode="sync") as writer:
        engine = _engine(writer)
        outcome = await engine.fire(
            "pre_tool_use", tool_name="exec", tool_input={"v": deep}, session_id="deep"
        )
        await writer.flush()
    assert outcome.decision == "block"
    (record,) = await _dispatches(store, session_id="deep")
    assert record.refused and "deeper" in record.refused and record.decision == "block"
    (row,) = (await store.query_executions(MASTER, ExecutionQuery(session_id="deep"))).items
    assert row.hook_name == "hookgate input limits" and row.dispatch_id == record.id


async def test_tenants_see_only_their_records_and_retention_prunes(store: Store) -> None:
    async with AuditWriter(store, mode="sync") as writer:
        engine = _engine(writer)
        mine = await engine.fire("user_prompt_submit", prompt="a", tenant_id="t1")
        await engine.fire("user_prompt_submit", prompt="b", tenant_id="t2")
        await engine.fire("pre_tool_use", tool_name="exec", tool_input={"cmd": "rm"},
                          tenant_id="t1")
        await writer.flush()
    t1 = await store.query_dispatches(Caller.for_tenant("t1"), DispatchQuery())
    assert {r.tenant_id for r in t1.items} == {"t1"} and len(t1.items) == 2
    later = time.time() + 3600
    # Unmatched records go after an hour; the one where a hook ran stays.
    assert await prune_dispatches(store, 30, 1 / 48, now=later) == 2
    left = await _dispatches(store)
    assert [r.matched for r in left] == [1] and mine.dispatch_id not in {r.id for r in left}
    assert await prune_dispatches(store, 1 / 48, now=later) == 1


async def test_an_approval_that_edits_the_input_stays_one_dispatch(store: Store) -> None:
    """The hooks run again on the edited input write their rows under the dispatch that
    asked; that dispatch keeps one record, with the approval."""

    def person(request: Any) -> dict[str, Any]:
        return {"approved": True, "updated_input": {"cmd": "ls"}, "decided_by": "erin"}

    async with AuditWriter(store, mode="sync") as writer:
        engine = Engine(audit=writer, approver=CallbackApprover(person, name="erin"))
        engine.add({"event": "pre_tool_use", "handler_type": "callable", "name": "ask",
                    "priority": 10,
                    "config": {"callable": lambda event: {"decision": "ask", "reason": "?"}}})
        engine.add({"event": "pre_tool_use", "handler_type": "callable", "name": "later",
                    "priority": 1,
                    "config": {"callable": lambda event: {"decision": "allow"}}})
        outcome = await engine.fire("pre_tool_use", tool_name="exec", tool_input={"cmd": "rm"},
                                    session_id="edited")
        await writer.flush()
    assert outcome.decision == "allow" and outcome.updated_input == {"cmd": "ls"}
    (record,) = await _dispatches(store, session_id="edited")
    assert record.id == outcome.dispatch_id
    assert record.approval and record.approval["status"] == "approved"
    rows = (await store.query_executions(MASTER, ExecutionQuery(session_id="edited"))).items
    assert rows and {row.dispatch_id for row in rows} == {outcome.dispatch_id}
