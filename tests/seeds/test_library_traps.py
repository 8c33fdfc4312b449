"""The library's own traps: hooks registered where fire never looks, and attribute typos
that read as None."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from hookgate import Engine, HookEvent
from hookgate.registry import CompiledHook, HookRegistry


class ReadOnlySource:
    """A custom source (like the gateway's database): it resolves, it cannot be added to."""

    def resolve(
        self, event: str, tenant_id: str | None, agent_id: str | None
    ) -> Sequence[CompiledHook]:
        return ()

    def has_event(self, event: str) -> bool:
        return False


def test_engine_with_a_custom_source_refuses_hooks_fire_would_never_read() -> None:
    """Engine(source=custom) + @engine.hook used to register into a registry fire never
    reads, so a blocking hook silently allowed. Now it raises, saying where to register."""
    engine = Engine(source=ReadOnlySource())

    def deny(event: HookEvent) -> dict[str, str]:
        return {"decision": "block"}

    with pytest.raises(TypeError, match="ReadOnlySource.*fire never sees"):
        engine.hook("pre_tool_use")(deny)
    with pytest.raises(TypeError):
        engine.add({"event": "pre_tool_use", "handler_type": "callable",
                    "config": {"callable": deny}})
    assert engine.fire_sync("pre_tool_use", tool_name="exec").decision == "allow"


def test_engine_with_a_registry_source_registers_into_it() -> None:
    source = HookRegistry()
    engine = Engine(source=source)
    engine.hook("pre_tool_use")(lambda e: {"decision": "block", "reason": "no"})
    assert len(source) == 1
    assert engine.fire_sync("pre_tool_use", tool_name="exec").decision == "block"


def test_hook_event_typo_raises_attribute_error_naming_the_known_fields() -> None:
    event = HookEvent("pre_tool_use", {"tool_name": "exec", "tool_input": {"cmd": "ls"}})
    assert event.tool_name == "exec"
    assert event.tool_use_id is None  # a field the event may carry, absent here
    with pytest.raises(AttributeError) as caught:
        _ = event.tool_nmae
    message = str(caught.value)
    assert "'tool_nmae'" in message and "tool_name" in message and "tool_input" in message
    assert getattr(event, "tool_nmae", "default") == "default"
    assert HookEvent("pre_tool_use", {"custom": 1}).custom == 1  # sent fields always read


def test_a_typo_in_a_blocking_hook_fails_closed_instead_of_allowing() -> None:
    engine = Engine()

    @engine.hook("pre_tool_use")
    def guard(event: HookEvent) -> dict[str, str] | None:
        if event.tool_nmae == "exec":  # the typo
            return {"decision": "block"}
        return None

    outcome = engine.fire_sync("pre_tool_use", tool_name="exec")
    assert outcome.decision == "block"
    assert "AttributeError" in (outcome.reason or "")
