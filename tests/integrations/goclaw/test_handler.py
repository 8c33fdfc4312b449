"""The quality_gate handler: a legacy gate list run as one hook."""

from __future__ import annotations

from typing import Any

import pytest

from hookgate import Engine, Settings
from hookgate.definition import DefinitionError
from hookgate.integrations.goclaw.handler import QualityGateHandler


def gate_hook(*gates: dict[str, Any]) -> dict[str, Any]:
    return {
        "event": "subagent_stop",
        "handler_type": "quality_gate",
        "config": {"gates": list(gates)},
    }


async def test_all_gates_pass_and_non_blocking_failures_are_listed() -> None:
    engine = Engine()
    engine.add(
        gate_hook(
            {"type": "command", "command": "echo noted >&2; exit 1", "block_on_failure": False},
            {"type": "command", "command": "grep -q done"},
        )
    )
    outcome = await engine.fire("delegation.completed", output="all done", wait=True)
    await engine.aclose()
    entry = outcome.trace[0]
    assert entry.decision == "allow"
    gates = entry.details["gates"]
    assert [(g["passed"], g["blocking"], g["feedback"]) for g in gates] == [
        (False, False, "noted"),
        (True, True, ""),
    ]


async def test_command_gates_never_run_on_the_standard_edition() -> None:
    settings = Settings(edition="standard")
    engine = Engine(settings=settings)
    with pytest.raises(DefinitionError, match="not available on the standard edition"):
        engine.add(gate_hook({"type": "command", "command": "true"}))
    settings.edition = "lite"
    engine.add(gate_hook({"type": "command", "command": "true"}))
    settings.edition = "standard"  # defined before a switch: refused when it would run
    outcome = await engine.fire("subagent_stop", output="x", wait=True)
    await engine.aclose()
    assert outcome.trace[0].decision == "error"
    assert "not available on the standard edition" in (outcome.trace[0].error or "")


def test_config_problems_name_the_gate() -> None:
    problems = QualityGateHandler.validate_config({"gates": [{"type": "agent"}], "x": 1})
    assert "unknown quality_gate config key 'x'" in problems
    assert any("gates[0].agent" in p for p in problems)
