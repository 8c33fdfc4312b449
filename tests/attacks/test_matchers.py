"""Attacks on the hook matchers and their index (issue 26), through the real engine.

A matcher is the first thing between a tool call and its guard: the registry now answers
literal matchers from lookup tables and keeps each selection per (event, tenant, agent, tool
name). Whoever names the tool (a prompt-injected agent, a hostile MCP server) or shares the
gateway (another tenant) must not use the index or its cache to make a guarded call skip its
guard. These attacks did not apply before the index existed (every hook's matcher ran per
event): they guard what the index adds, and fail if it answers otherwise than RE2.
"""

from __future__ import annotations

from typing import Any

from hookgate import Engine
from hookgate.definition import HookDefinition
from hookgate.matcher_index import MAX_SELECTIONS
from hookgate.registry import HookRegistry


def _block(event: Any) -> dict[str, str]:
    return {"decision": "block", "reason": f"guarded: {event.tool_name}"}


def _guarded(matcher: str) -> Engine:
    engine = Engine()
    engine.hook("pre_tool_use", matcher=matcher, name="guard")(_block)
    return engine


def _decision(engine: Engine, tool: str, **fields: Any) -> str:
    return engine.fire_sync("pre_tool_use", {"tool_name": tool, "tool_input": {}, **fields}
                            ).decision


def test_a_tool_whose_name_contains_the_guarded_one_is_still_guarded() -> None:
    """tool: names its tool ``NotebookEdit`` so that an index reading ``Edit|Write`` as
    exact names lets it edit; the matcher is an unanchored search, as in Claude Code."""
    engine = _guarded("Edit|Write")
    assert _decision(engine, "NotebookEdit") == "block"
    assert _decision(engine, "MultiEdit") == "block"
    assert _decision(engine, "Read") == "allow"
    engine.close()


def test_every_tool_under_a_guarded_prefix_is_guarded() -> None:
    """mcp: a server adds a tool (``mcp__github__delete_repo``) the guard's author never
    listed; the prefix matcher covers it."""
    for matcher in ("^mcp__github__", "mcp__github__.*", "^mcp__github__.*", "^(mcp__github__)"):
        engine = _guarded(matcher)
        assert _decision(engine, "mcp__github__delete_repo") == "block", matcher
        assert _decision(engine, "mcp__gitlab__delete_repo") == "allow", matcher
        engine.close()


def test_another_tenants_cached_selection_is_never_served() -> None:
    """tenant: tenant A fires ``exec`` first, so a selection with no guard is cached; tenant
    B's guard for ``exec`` must still run for B (the cache is keyed by tenant and agent)."""
    registry = HookRegistry([
        HookDefinition(id="b-guard", name="b-guard", event="pre_tool_use",
                       handler_type="callable", scope="tenant", tenant_id="tenant-b",
                       matcher="^exec$", config={"callable": _block}),
    ])
    engine = Engine(source=registry)
    assert _decision(engine, "exec", tenant_id="tenant-a") == "allow"
    assert _decision(engine, "exec", tenant_id="tenant-b") == "block"
    engine.close()


def test_a_guard_added_after_the_tool_was_seen_applies_to_its_next_call() -> None:
    """tool: calls ``exec`` while no guard exists (its empty selection is cached), then again
    after the operator added one; the registry change drops every cached selection."""
    engine = Engine()
    engine.hook("pre_tool_use", matcher="^read$", name="other")(lambda e: None)
    assert _decision(engine, "exec") == "allow"
    engine.hook("pre_tool_use", matcher="^(exec|shell)$", name="guard")(_block)
    assert _decision(engine, "exec") == "block"
    engine.close()


def test_a_flood_of_made_up_tool_names_neither_grows_memory_nor_unguards() -> None:
    """tool: calls thousands of distinct (and long) made-up tool names to grow the selection
    cache without bound or evict the guard; the cache is bounded, long names are never kept,
    and the guarded tool is blocked after the flood."""
    engine = _guarded("^(exec|shell)$")
    registry = engine.registry
    for index in range(MAX_SELECTIONS + 500):
        assert _decision(engine, f"tool-{index}") == "allow"
        if index % 97 == 0:
            assert _decision(engine, "x" * 10_000 + str(index)) == "allow"
    assert len(registry._selections.selected) <= MAX_SELECTIONS
    assert all(len(key[3]) <= 256 for key in registry._selections.selected)
    assert _decision(engine, "shell") == "block"
    engine.close()


def test_a_flood_of_made_up_agent_ids_does_not_grow_memory() -> None:
    """tool: the agent names itself (``agent_id`` comes with the event), a new id per call,
    some of them megabytes long, so that the registry keeps a resolved hook list per id
    without bound (it did before: one entry per (event, tenant, agent) ever seen)."""
    engine = _guarded("^(exec|shell)$")
    registry = engine.registry
    for index in range(MAX_SELECTIONS + 500):
        assert _decision(engine, "exec", agent_id=f"agent-{index}") == "block"
        if index % 97 == 0:
            assert _decision(engine, "exec", agent_id="a" * 1_000_000 + str(index)) == "block"
    assert len(registry._cache) <= MAX_SELECTIONS
    assert len(registry._selections.selected) <= MAX_SELECTIONS
    assert all(len(key[2] or "") <= 256 for key in registry._cache)
    engine.close()
