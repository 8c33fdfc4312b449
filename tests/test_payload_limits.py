"""Payload depth and size limits: a block with a reason and an audit row, never a raise."""

from __future__ import annotations

from typing import Any

import pytest

from hookgate import Engine
from hookgate.audit import MemoryAudit
from hookgate.engine import INPUT_GUARD_ID
from hookgate.payload_limits import MAX_DEPTH, payload_problem


def nested(levels: int) -> dict[str, Any]:
    root: dict[str, Any] = {}
    node = root
    for _ in range(levels - 1):
        node["a"] = {}
        node = node["a"]
    return root


def test_the_bounds_are_exact_with_and_without_json_values() -> None:
    assert payload_problem(nested(MAX_DEPTH)) is None
    assert "nested deeper than 255" in str(payload_problem(nested(MAX_DEPTH + 1)))
    # A value orjson cannot encode takes the walking path, with the same answer.
    odd = nested(MAX_DEPTH)
    odd["x"] = object()
    assert payload_problem(odd) is None
    assert payload_problem({"x": object(), "deep": nested(MAX_DEPTH)}) is not None
    assert "larger than 100 bytes" in str(payload_problem({"x": "y" * 200}, max_size=100))
    assert "larger than 100 characters" in str(
        payload_problem({"x": "y" * 200, "o": object()}, max_size=100)
    )
    assert "nested deeper than 3" in str(payload_problem(nested(4), max_depth=3))


@pytest.mark.parametrize("sync", [False, True])
def test_a_blocking_event_blocks_with_a_row(sync: bool) -> None:
    audit = MemoryAudit()
    engine = Engine(audit=audit)
    engine.hook("pre_tool_use", if_expr="tool_name == 'x'")(lambda event: None)
    payload = {"tool_name": "x", "tool_input": nested(1000), "session_id": "s"}
    if sync:
        outcome = engine.fire_sync("pre_tool_use", payload)
        engine.close()
    else:
        import asyncio

        outcome = asyncio.run(engine.fire("pre_tool_use", payload))
    assert outcome.decision == "block"
    assert outcome.reason == "invalid input: event input is nested deeper than 255 levels"
    [row] = audit.records
    assert row.hook_id == INPUT_GUARD_ID and row.decision == "block"
    assert row.session_id == "s" and row.error is not None


async def test_a_non_blocking_event_is_dropped_with_a_row() -> None:
    audit = MemoryAudit()
    engine = Engine(audit=audit)
    engine.hook("post_tool_use")(lambda event: {"additional_context": "seen"})
    outcome = await engine.fire("post_tool_use", {"tool_name": "x", "tool_input": nested(300)})
    assert outcome.decision == "allow" and outcome.additional_context == []
    assert [row.decision for row in audit.records] == ["error"]
