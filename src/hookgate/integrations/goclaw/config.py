"""GoClaw's legacy quality-gate configs, loaded as they are.

Told apart from hookgate's own format by shape (gates have ``type``, never
``handler_type``):

* a gate file: ``{"hooks": [{"event": "delegation.completed", "type": "command", …}, …]}``;
* a single gate object: ``{"event": "delegation.completed", "type": "agent", …}``;
* an agent record: ``{"agent_key": "orchestrator", "other_config": {"quality_gates": […]}}``
  (or just ``{"other_config": …}`` / ``{"quality_gates": […]}``).

Each becomes one ``quality_gate`` hook on ``subagent_stop`` (``delegation.completed`` is its
alias) that runs the gates in order with their own semantics (see
:mod:`hookgate.integrations.goclaw.handler`): a failing blocking gate blocks wherever a caller waits
for the event (``delegation.completed`` always; ``subagent_stop`` with ``wait``). An agent
record's gates apply to delegations from that agent (``if_expr: source_agent == "<key>"``),
as in GoClaw. Commands run in the directory of the file unless a gate names a ``cwd``.

``hookgate migrate quality-gates FILE`` converts these to native hooks instead.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from hookgate.config.formats import ConfigError, ConfigFormat
from hookgate.definition import DefinitionError, HookDefinition
from hookgate.definition_model import validate_definition
from hookgate.events import get_event
from hookgate.host_code import edition_refusal
from hookgate.integrations.goclaw.gate_config import parse_gates
from hookgate.integrations.goclaw.gates import GateConfigError

__all__ = [
    "QUALITY_GATES",
    "LegacyGates",
    "extract_gates",
    "is_quality_gates",
    "load_quality_gates",
]


class LegacyGates:
    """The gate list found in a document, where it was, and the agent that owns it."""

    def __init__(self, gates: list[Any], where: str, agent: str | None = None) -> None:
        self.gates = gates
        self.where = where
        self.agent = agent


def _is_gate(item: Any) -> bool:
    return isinstance(item, Mapping) and "type" in item and "handler_type" not in item


def extract_gates(document: Any) -> LegacyGates | None:
    """The legacy gates in ``document``, or ``None`` if it is not a legacy gate config."""
    if not isinstance(document, Mapping):
        return None
    hooks = document.get("hooks")
    if isinstance(hooks, list) and hooks and all(_is_gate(item) for item in hooks):
        return LegacyGates(list(hooks), "hooks")
    if "hooks" not in document and _is_gate(document) and "event" in document:
        return LegacyGates([dict(document)], "gate")
    agent = document.get("agent_key") or document.get("key") or document.get("id")
    other = document.get("other_config")
    if isinstance(other, Mapping) and isinstance(other.get("quality_gates"), list):
        return LegacyGates(
            list(other["quality_gates"]),
            "other_config.quality_gates",
            str(agent) if agent else None,
        )
    if isinstance(document.get("quality_gates"), list):
        return LegacyGates(list(document["quality_gates"]), "quality_gates")
    return None


def is_quality_gates(document: Any) -> bool:
    return extract_gates(document) is not None


def load_quality_gates(document: Any, *, edition: str, base_dir: Path) -> list[HookDefinition]:
    found = extract_gates(document)
    assert found is not None
    try:
        gates = parse_gates(found.gates, base_dir=base_dir, where=found.where)
    except GateConfigError as exc:
        raise ConfigError(exc.problems) from None
    refusal = edition_refusal(edition, "quality_gate")
    if refusal is not None and any(gate.type == "command" for gate in gates):
        raise ConfigError([f"{found.where}: command gates: {refusal}"])
    raw: dict[str, Any] = {
        "event": "subagent_stop",
        "handler_type": "quality_gate",
        "name": f"quality-gates-{found.agent}" if found.agent else "quality-gates",
        "config": {"gates": [gate.to_dict() for gate in gates]},
        # One hook runs the whole list, each gate within its own timeout_seconds; a second
        # more, so a gate's own timeout (and its feedback) comes before the hook's.
        "timeout_ms": min(
            get_event("subagent_stop").max_timeout_ms,
            int(sum(g.timeout_seconds for g in gates) * 1000) + 1000,
        ),
        "on_error": "block" if any(g.block_on_failure for g in gates) else "allow",
        "order": 1,
    }
    if found.agent:
        raw["if_expr"] = f"source_agent == {json.dumps(found.agent)}"
    try:
        return [validate_definition(raw, edition=edition, default_scope="global")]
    except DefinitionError as exc:
        raise ConfigError([f"{found.where}.{p.field}: {p.message}" for p in exc.problems]) from None


QUALITY_GATES = ConfigFormat("goclaw-quality-gates", is_quality_gates, load_quality_gates)
