"""Helpers for testing your own hooks.

from hookgate.testing import HookTester

tester = HookTester.from_file("hooks.yaml")
outcome = tester.fire("pre_tool_use", tool_name="exec", tool_input={"cmd": "rm -rf /"})
tester.assert_blocked(outcome, reason_contains="dangerous")
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from hookgate.audit import MemoryAudit
from hookgate.definition import HookDefinition
from hookgate.engine import Engine
from hookgate.outcome import Outcome
from hookgate.settings import Settings

__all__ = ["FakeClock", "HookTester", "assert_allowed", "assert_blocked", "sample_event"]


class FakeClock:
    """A monotonic clock you move by hand: for breaker cool-downs and chain budgets."""

    def __init__(self, start: float = 1000.0) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


_SAMPLES: dict[str, dict[str, Any]] = {
    "pre_tool_use": {"tool_name": "exec", "tool_input": {"cmd": "ls -la"}},
    "post_tool_use": {"tool_name": "exec", "tool_input": {"cmd": "ls"}, "tool_response": "a b"},
    "user_prompt_submit": {"prompt": "Summarise the README"},
    "session_start": {"source": "startup"},
    "stop": {"last_message": "Done."},
    "subagent_start": {"source_agent": "lead", "target_agent": "coder", "task": "Write tests"},
    "subagent_stop": {
        "source_agent": "lead",
        "target_agent": "coder",
        "task": "Write tests",
        "output": "def test_x(): ...",
    },
    "approve_tool": {"tool_name": "exec", "tool_input": {"cmd": "ls"}},
}


def sample_event(event: str, **overrides: Any) -> dict[str, Any]:
    """A plausible payload for ``event`` (session id included), with ``overrides`` applied."""
    from hookgate.events import get_event

    spec = get_event(event)
    payload = {"session_id": "test-session", **_SAMPLES.get(spec.name, {})}
    payload.update(overrides)
    return payload


def assert_blocked(outcome: Outcome, *, reason_contains: str | None = None) -> None:
    assert outcome.decision == "block", f"expected block, got allow; trace: {outcome.to_dict()}"
    if reason_contains is not None:
        assert outcome.reason and reason_contains in outcome.reason, (
            f"reason {outcome.reason!r} does not contain {reason_contains!r}"
        )


def assert_allowed(outcome: Outcome) -> None:
    assert outcome.decision == "allow", f"expected allow, got block: {outcome.reason}"


class HookTester:
    """An engine with an in-memory audit log and a fake clock, fired synchronously."""

    def __init__(
        self,
        hooks: Iterable[HookDefinition | Mapping[str, Any]] = (),
        *,
        settings: Settings | None = None,
    ) -> None:
        self.clock = FakeClock()
        self.audit = MemoryAudit()
        self.engine = Engine(hooks, settings=settings, audit=self.audit, clock=self.clock)

    @classmethod
    def from_file(cls, path: str | Path, *, settings: Settings | None = None) -> HookTester:
        tester = cls(settings=settings)
        tester.engine.load(path)
        return tester

    def hook(self, event: str, **options: Any) -> Callable[[Any], Any]:
        return self.engine.hook(event, **options)

    def fire(self, event: str, payload: Mapping[str, Any] | None = None, **fields: Any) -> Outcome:
        """Fire and wait, non-blocking events included, so the trace is complete."""
        return self.engine.fire_sync(event, payload, wait=True, **fields)

    async def afire(
        self, event: str, payload: Mapping[str, Any] | None = None, **fields: Any
    ) -> Outcome:
        return await self.engine.fire(event, payload, wait=True, **fields)

    assert_blocked = staticmethod(assert_blocked)
    assert_allowed = staticmethod(assert_allowed)

    def close(self) -> None:
        self.engine.close()
