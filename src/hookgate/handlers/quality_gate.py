"""The ``quality_gate`` handler: GoClaw's legacy gate list, run as one hook.

Config: ``{"gates": [ …GoClaw gate objects… ]}`` (see :mod:`hookgate.quality_gates`). Legacy
gate files and an agent's ``other_config.quality_gates`` load as a hook of this type on
``subagent_stop`` (``delegation.completed``), so their semantics hold: gates run in order,
the first blocking failure stops the rest and blocks with the gate's feedback as the
reason; non-blocking failures are logged and listed in the details.

``subagent_stop`` is a non-blocking event, so through the engine a failing gate is recorded
(trace, audit) rather than enforced; runtimes enforce gates, and retry with the feedback,
through :class:`hookgate.quality_gates.RetryLoop`. The engine's hook timeout (10 s at most)
bounds the whole list here; the API honours each gate's ``timeout_seconds`` in full.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from hookgate.handlers.agent import Delegation
from hookgate.handlers.base import Handler, Invocation
from hookgate.outbound import close_shared_client
from hookgate.outcome import HookResult
from hookgate.quality_gates import GateConfigError, QualityGates, parse_gates

__all__ = ["QualityGateHandler"]


class QualityGateHandler(Handler):
    handler_type: ClassVar[str] = "quality_gate"

    @classmethod
    def validate_config(cls, config: Mapping[str, Any]) -> list[str]:
        problems = [f"unknown quality_gate config key {k!r}" for k in set(config) - {"gates"}]
        try:
            parse_gates(config.get("gates"), where="gates")
        except GateConfigError as exc:
            problems.extend(exc.problems)
        return problems

    @classmethod
    def runs_on_host(cls, config: Mapping[str, Any]) -> bool:
        gates = config.get("gates")
        if not isinstance(gates, list):
            return False
        return any(isinstance(gate, Mapping) and gate.get("type") == "command" for gate in gates)

    async def run(self, call: Invocation) -> HookResult:
        gates = QualityGates(parse_gates(call.hook.config["gates"]), services=self.services)
        delegation = Delegation.from_payload(call.payload, call.event.name)
        report = await gates.evaluate(delegation)
        details: dict[str, Any] = {"gates": [r.to_dict() for r in report.results]}
        failure = report.failure
        if failure is None:
            return HookResult(decision="allow", details=details)
        reason = f"quality gate {failure.gate.label} failed: {failure.feedback}"
        details.update(
            reason=reason,
            feedback=failure.feedback,
            gate=failure.gate.label,
            gate_index=failure.index,
            max_retries=failure.gate.max_retries,
        )
        return HookResult(decision="block", reason=reason, details=details)

    async def aclose(self) -> None:
        await close_shared_client(self.services)
