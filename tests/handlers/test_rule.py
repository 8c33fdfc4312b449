"""Rule hooks in the library engine: limit, after, require, sequence, with matchers and
if_expr, on the memory store (a plain function) and on the loop; the JSON file store keeps
them between engines."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from hookgate import Engine
from hookgate.definition import DefinitionError
from hookgate.handlers.checks import handler_problems, offered
from hookgate.state import FileStateStore, MemoryStateStore, use_state_store


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000.0  # 40 s into a 60 s window

    def __call__(self) -> float:
        return self.now


def rule(name: str, matcher: str | None, **config: Any) -> dict[str, Any]:
    hook: dict[str, Any] = {"event": "pre_tool_use", "scope": "global", "handler_type": "rule",
                            "name": name, "config": config}
    if matcher is not None:
        hook["matcher"] = matcher
    return hook


def engine_with(*hooks: dict[str, Any], store: MemoryStateStore | None = None) -> Engine:
    engine = Engine()
    use_state_store(engine, store or MemoryStateStore(clock=Clock()))
    for hook in hooks:
        engine.add(hook)
    return engine


def call(engine: Engine, tool: str, session: str | None = "s1", **fields: Any) -> Any:
    if session is not None:
        fields["session_id"] = session
    return engine.fire_sync("pre_tool_use", tool_name=tool, **fields)


def test_limit_admits_count_calls_per_window_then_blocks_naming_rule_and_count() -> None:
    clock = Clock()
    engine = engine_with(rule("fetch-limit", "^WebFetch$",
                              limit={"count": 3, "per": "session", "window_s": 60}),
                         store=MemoryStateStore(clock=clock))
    try:
        assert [call(engine, "WebFetch").decision for _ in range(3)] == ["allow"] * 3
        blocked = call(engine, "WebFetch")
        assert blocked.decision == "block"
        assert "fetch-limit" in blocked.reason and "3 of 3" in blocked.reason
        assert "20 s" in blocked.reason  # the window ends at 1_000_020
        assert call(engine, "Bash").decision == "allow"  # the matcher selects what counts
        assert call(engine, "WebFetch", session="s2").decision == "allow"  # per session
        clock.now += 20  # the next window
        assert call(engine, "WebFetch").decision == "allow"
    finally:
        engine.close()


async def test_limit_on_the_loop_and_per_agent_and_tenant() -> None:
    engine = engine_with(
        rule("per-agent", "^exec$", limit={"count": 1, "per": "agent", "window_s": 60}),
        rule("per-tenant", "^exec$", limit={"count": 2, "per": "tenant", "window_s": 60}),
    )
    try:
        def fire(agent: str, tenant: str, session: str) -> Any:
            return engine.fire("pre_tool_use", tool_name="exec", agent_id=agent,
                               tenant_id=tenant, session_id=session)

        assert (await fire("a1", "t1", "s1")).decision == "allow"
        again = await fire("a1", "t1", "s-new")  # a new session does not reset per: agent
        assert again.decision == "block" and "per-agent" in again.reason
        assert (await fire("a2", "t1", "s3")).decision == "allow"
        third = await fire("a3", "t1", "s4")
        assert third.decision == "block" and "2 of 2 calls per tenant" in third.reason
        assert (await fire("a3", "t2", "s4")).decision == "allow"  # another tenant
    finally:
        await engine.aclose()


def test_a_call_blocked_by_a_history_check_takes_no_slot() -> None:
    engine = engine_with(rule("both", "^WebFetch$", limit={"count": 1, "window_s": 60},
                              after={"tool": "^Read$"}))
    try:
        call(engine, "Read", session="tainted")
        assert call(engine, "WebFetch", session="tainted").decision == "block"
        assert call(engine, "WebFetch", session="clean").decision == "allow"
        assert call(engine, "WebFetch", session="clean").decision == "block"
    finally:
        engine.close()


def test_after_blocks_once_the_tool_was_admitted_even_though_its_matcher_skips_it() -> None:
    clock = Clock()
    engine = engine_with(
        rule("no-exfil", "^(WebFetch|Bash)$", after={"tool": "^Read$", "within_s": 600}),
        store=MemoryStateStore(clock=clock),
    )
    try:
        assert call(engine, "WebFetch").decision == "allow"
        assert call(engine, "Read").decision == "allow"
        clock.now += 5
        blocked = call(engine, "WebFetch")
        assert blocked.decision == "block"
        assert "no-exfil" in blocked.reason and "'^Read$'" in blocked.reason
        assert "5 s ago" in blocked.reason
        assert call(engine, "WebFetch", session="s2").decision == "allow"
        clock.now += 600  # older than within_s
        assert call(engine, "WebFetch").decision == "allow"
    finally:
        engine.close()


def test_a_blocked_call_is_not_recorded() -> None:
    engine = engine_with(
        rule("no-exfil", "^WebFetch$", after={"tool": "^Read$"}),
        {"event": "pre_tool_use", "scope": "global", "handler_type": "callable",
         "matcher": "^Read$", "config": {"callable": lambda event: {"decision": "block"}}},
    )
    try:
        assert call(engine, "Read").decision == "block"
        assert call(engine, "WebFetch").decision == "allow"  # the Read never ran
    finally:
        engine.close()


def test_require_needs_an_earlier_successful_call() -> None:
    engine = engine_with(rule("tested-deploy", "^deploy$", require={"tool": "^run_tests$"}))
    try:
        first = call(engine, "deploy")
        assert first.decision == "block"
        assert "tested-deploy" in first.reason and "succeeded" in first.reason
        assert call(engine, "run_tests").decision == "allow"
        assert call(engine, "deploy").decision == "block"  # admitted, but no success yet
        engine.fire_sync("post_tool_use", tool_name="run_tests", session_id="s1",
                         tool_response={"ok": True})
        assert call(engine, "deploy").decision == "allow"
        assert call(engine, "deploy", session="s2").decision == "block"
    finally:
        engine.close()


def test_require_without_success_counts_an_admitted_call() -> None:
    engine = engine_with(rule("read-first", "^Edit$",
                              require={"tool": "^Read$", "succeeded": False}))
    try:
        assert call(engine, "Edit").decision == "block"
        call(engine, "Read")
        assert call(engine, "Edit").decision == "allow"
    finally:
        engine.close()


def test_sequence_needs_each_step_after_the_one_before() -> None:
    clock = Clock()
    engine = engine_with(
        rule("release", "^deploy$", sequence={"tools": ["^run_tests$", "^build$"],
                                              "succeeded": False}),
        store=MemoryStateStore(clock=clock),
    )
    try:
        call(engine, "build")
        clock.now += 1
        call(engine, "run_tests")
        out_of_order = call(engine, "deploy")
        assert out_of_order.decision == "block" and "after the latest call" in out_of_order.reason
        clock.now += 1
        call(engine, "build")
        assert call(engine, "deploy").decision == "allow"
    finally:
        engine.close()


def test_if_expr_narrows_what_the_rule_judges() -> None:
    hook = rule("rm-limit", "^Bash$", limit={"count": 1, "window_s": 60})
    hook["if_expr"] = 'tool_input.command.startsWith("rm ")'
    engine = engine_with(hook)
    try:
        def bash(command: str) -> str:
            return str(call(engine, "Bash", tool_input={"command": command}).decision)

        assert [bash("rm a"), bash("ls"), bash("rm b"), bash("ls")] == [
            "allow", "allow", "block", "allow"]
    finally:
        engine.close()


def test_an_event_without_the_id_the_rule_counts_per_is_blocked() -> None:
    engine = engine_with(rule("per-session", "^WebFetch$", limit={"count": 5, "window_s": 60}),
                         rule("taint", "^Bash$", after={"tool": "^Read$", "per": "agent"}))
    try:
        no_session = call(engine, "WebFetch", session=None)
        assert no_session.decision == "block"
        assert no_session.reason == ("rule 'per-session': the event has no session id, so the "
                                     "rule cannot be kept")
        assert call(engine, "Bash", agent_id="a1").decision == "allow"
        assert call(engine, "Bash").decision == "block"  # no agent id
    finally:
        engine.close()


async def test_a_dry_run_takes_no_slot() -> None:
    hook = rule("one", "^exec$", limit={"count": 1, "window_s": 60})
    engine = engine_with(hook)
    sample = {"tool_name": "exec", "session_id": "s"}
    try:
        for _ in range(3):
            assert (await engine.test(hook, sample)).decision == "allow"
        assert (await engine.fire("pre_tool_use", sample)).decision == "allow"
        tested = await engine.test(hook, sample)
        assert tested.decision == "block" and "1 of 1" in tested.reason
    finally:
        await engine.aclose()


def test_the_file_store_keeps_counters_and_history_between_engines(tmp_path: Path) -> None:
    path = tmp_path / "state.json"
    hooks = (rule("limit", "^WebFetch$", limit={"count": 2, "window_s": 3600}),
             rule("taint", "^Bash$", after={"tool": "^Read$"}))
    for expected in (["allow", "allow"], ["block"]):
        engine = engine_with(*hooks, store=FileStateStore(path))
        try:
            assert [call(engine, "WebFetch").decision for _ in expected] == expected
        finally:
            engine.close()
    engine = engine_with(*hooks, store=FileStateStore(path))
    call(engine, "Read")
    engine.close()
    engine = engine_with(*hooks, store=FileStateStore(path))
    try:
        assert call(engine, "Bash").decision == "block"
    finally:
        engine.close()


@pytest.mark.parametrize(("config", "message"), [
    ({}, "at least one of limit, after, require, sequence"),
    ({"limit": {"count": 0, "window_s": 10}}, "limit.count"),
    ({"limit": {"count": True, "window_s": 10}}, "limit.count"),
    ({"limit": {"count": 1, "window_s": 10, "per": "turn"}}, "limit.per"),
    ({"after": {"tool": "*"}}, "after.tool: must name tools"),
    ({"after": {"tool": "(unclosed"}}, "after.tool: matcher does not compile"),
    ({"after": {"tool": "a" * 5000}}, "after.tool: matcher is longer than"),
    ({"after": {"tool": "^Read$", "per": "tenant"}}, "after.per"),
    ({"require": {"tool": "x", "within_s": 10**9}}, "require.within_s"),
    ({"sequence": {"tools": ["only-one"]}}, "sequence.tools"),
    ({"limit": {"count": 1, "window_s": 10}, "callable": "os:system"}, "callable"),
])
def test_bad_configs_are_refused_naming_the_field(config: dict[str, Any], message: str) -> None:
    with pytest.raises(DefinitionError) as caught:
        Engine([rule("bad", "^x$", **config)])
    assert message in str(caught.value)


def test_a_rule_runs_no_host_code_so_every_edition_offers_it() -> None:
    config = {"limit": {"count": 1, "window_s": 10}}
    for edition in ("lite", "standard"):
        assert offered("rule", edition)
        assert handler_problems("rule", config, edition=edition, filtered=True) == []


def test_a_shadow_rule_counts_and_says_what_it_would_have_blocked() -> None:
    hook = rule("cap", "^x$", limit={"count": 1, "window_s": 60})
    engine = engine_with({**hook, "mode": "shadow"})
    try:
        outcomes = [call(engine, "x") for _ in range(2)]
        assert [o.decision for o in outcomes] == ["allow", "allow"]
        assert [row.decision for o in outcomes for row in o.shadow] == ["abstain", "would_block"]
        assert "1 of 1" in outcomes[1].shadow[0].details["reason"]
    finally:
        engine.close()


def test_a_look_back_rule_off_pre_tool_use_fails_closed_instead_of_never_seeing_a_call() -> None:
    hook = {**rule("prompt-taint", None, after={"tool": "^Read$"}), "event": "user_prompt_submit"}
    engine = engine_with(hook)
    try:
        outcome = engine.fire_sync("user_prompt_submit", prompt="hi", session_id="s1")
        assert outcome.decision == "block"
        assert "pre_tool_use calls only" in str(outcome.reason)
    finally:
        engine.close()
