"""The ``quality_gate`` handler: GoClaw's legacy gate list, run as one hook.

Config: ``{"gates": [ …GoClaw gate objects… ]}`` (see
:mod:`hookgate.integrations.goclaw.gates`). Legacy gate files and an agent's
``other_config.quality_gates`` load as a hook of this type on
``subagent_stop`` (``delegation.completed``), so their semantics hold: gates run in order,
the first blocking failure stops the rest and blocks with the gate's feedback as the
reason; non-blocking failures are logged and listed in the details.

A gate blocks wherever a caller waits for it: ``delegation.completed`` is always waited for,
``subagent_stop`` when the caller asks (``wait``); fired and forgotten, a failing gate is
recorded (trace, audit) but nobody is there to stop. A block's reason is the gate's feedback,
and the outcome's ``retry`` says what the caller needs for GoClaw's retry loop: the failing
gate, the feedback, the ``attempt`` (the event's ``attempt`` field, 1 for the first), its
``max_retries`` and the ``retries_left`` (0 when the gate itself broke). Each gate runs within
its own ``timeout_seconds``; the hook's timeout is their sum.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from hookgate.handlers.base import Capabilities, Handler, Invocation
from hookgate.handlers.prompt.agent import Delegation
from hookgate.integrations.goclaw.gate_config import GATE_EVENT, parse_gates
from hookgate.integrations.goclaw.gates import QualityGates
from hookgate.net.outbound import close_shared_client
from hookgate.outcome import HookError, HookResult

__all__ = ["QualityGateHandler"]


class QualityGateHandler(Handler):
    handler_type: ClassVar[str] = "quality_gate"
    #: Agent gates call a model; command gates run on the host (see ``runs_on_host``).
    capabilities: ClassVar[Capabilities] = Capabilities(model_credentials=True)
    config_model: ClassVar[str] = "hookgate.integrations.goclaw.gate_config:QualityGateConfig"

    @classmethod
    def runs_on_host(cls, config: Mapping[str, Any]) -> bool:
        gates = config.get("gates")
        if not isinstance(gates, list):
            return False
        return any(isinstance(gate, Mapping) and gate.get("type") == "command" for gate in gates)

    async def run(self, call: Invocation) -> HookResult:
        gates = QualityGates(parse_gates(call.hook.config["gates"]), services=self.services)
        attempt = call.payload.get("attempt", 1)
        if not isinstance(attempt, int) or isinstance(attempt, bool) or attempt < 1:
            raise HookError(f"attempt must be a positive integer (1 first), not {attempt!r}")
        # Legacy gates know one event name, whatever name the caller fired under.
        delegation = Delegation.from_payload(call.payload, GATE_EVENT)
        report = await gates.evaluate(delegation)
        details: dict[str, Any] = {"gates": [r.to_dict() for r in report.results]}
        failure = report.failure
        if failure is None:
            return HookResult(decision="allow", details=details)
        gate = failure.gate
        # Another attempt cannot fix a gate that broke (timed out, could not start).
        left = 0 if failure.error else max(0, gate.max_retries - (attempt - 1))
        retry = {
            "gate": gate.label,
            "gate_index": failure.index,
            "feedback": failure.feedback,
            "attempt": attempt,
            "max_retries": gate.max_retries,
            "retries_left": left,
        }
        details.update(reason=failure.feedback, **retry)
        return HookResult(decision="block", reason=failure.feedback, details=details, retry=retry)

    async def aclose(self) -> None:
        await close_shared_client(self.services)
