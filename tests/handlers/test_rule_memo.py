"""The keys a rule hook reads and the stamps the engine writes are memoized per session
(hookgate.handlers.rule.judge.history_keys, history.HistoryPlan.keyed): the memo must give
what working them out gives, for ids of any JSON type, and after it is dropped whole."""

from __future__ import annotations

from typing import Any

import pytest

from hookgate import Engine
from hookgate.handlers.rule import history, judge
from hookgate.state import MemoryStateStore, use_state_store


def engine_with_taint() -> Engine:
    engine = Engine()
    use_state_store(engine, MemoryStateStore())
    engine.add(
        {
            "event": "pre_tool_use",
            "scope": "global",
            "handler_type": "rule",
            "name": "no-exfil",
            "matcher": "^WebFetch$",
            "config": {"after": {"tool": "^Read$"}},
        }
    )
    return engine


def call(engine: Engine, tool: str, session: Any, **fields: Any) -> str:
    outcome = engine.fire_sync("pre_tool_use", tool_name=tool, session_id=session, **fields)
    return outcome.decision


@pytest.mark.parametrize("session", [7, 7.5, True, "s-1"])
def test_ids_of_any_type_keep_their_taint_apart(session: Any) -> None:
    engine = engine_with_taint()
    try:
        for _ in range(2):  # the second time from the memo, where there is one
            assert call(engine, "WebFetch", session) == "allow"
        assert call(engine, "Read", session) == "allow"
        assert call(engine, "WebFetch", session) == "block"
        assert call(engine, "WebFetch", "another") == "allow"
        # Another tenant's session of the same id is apart.
        assert call(engine, "WebFetch", session, tenant_id="t2") == "allow"
    finally:
        engine.close()


def test_the_memos_dropped_whole_still_give_each_session_its_own(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(judge, "_KEYS_KEPT", 3)
    monkeypatch.setattr(history, "_KEYS_KEPT", 3)
    engine = engine_with_taint()
    try:
        sessions = [f"s-{n}" for n in range(10)]
        for session in sessions[::2]:
            assert call(engine, "Read", session) == "allow"
        for _ in range(2):
            assert [call(engine, "WebFetch", s) for s in sessions] == ["block", "allow"] * 5
    finally:
        engine.close()
