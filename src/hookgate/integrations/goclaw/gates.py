"""GoClaw's quality gates: check a delegated result, and retry it with feedback.

A gate is a ``command`` (the output on stdin; exit 0 passes, anything else fails with stderr
as the feedback) or an ``agent`` (a reviewer answering ``APPROVED`` or
``REJECTED: <feedback>``, see :mod:`hookgate.handlers.prompt.agent`). Gates run in order; the first
failing gate with ``block_on_failure`` stops the rest, a failing gate without it is logged
and the next one runs.

The retry loop is an API for the agent runtime::

    gates = QualityGates.from_config(agent_config["other_config"]["quality_gates"])
    loop = gates.retry_loop(Delegation(output, task=task, source_agent="orchestrator",
                                       target_agent="backend-dev", user_id=user))
    decision = await loop.check(output)
    while decision.should_retry:
        output = await delegate_again(task, feedback=decision.retry_prompt)
        decision = await loop.check(output)
    if not decision.passed: ...   # decision.feedback says why

Each gate may ask for a retry ``max_retries`` times; a gate that breaks (a command that
cannot start, a reviewer answering garbage) fails at once, since another attempt at the
output cannot fix it. :func:`run_with_retries` is the same loop with a callback.

A command gate gets ``HOOK_EVENT``, ``HOOK_SOURCE_AGENT``, ``HOOK_TARGET_AGENT``,
``HOOK_TASK`` and ``HOOK_USER_ID``, plus ``PATH``/``HOME``/``LANG`` and the names in its
``allowed_env_vars``; nothing else of hookgate's environment. It runs in its own process
group, killed on timeout.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Final, Literal

from hookgate.handlers.base import Services
from hookgate.handlers.prompt.agent import Delegation, review
from hookgate.handlers.subprocess.runner import base_environment, run_shell, shorten
from hookgate.integrations.goclaw.gate_config import (
    DEFAULT_TIMEOUT_S,
    GATE_EVENT,
    Gate,
    GateConfigError,
    parse_gates,
)
from hookgate.log import log_event
from hookgate.outcome import HookError
from hookgate.sandbox import Sandbox

__all__ = [
    "DEFAULT_TIMEOUT_S",
    "GATE_EVENT",
    "Delegation",
    "Gate",
    "GateConfigError",
    "GateDecision",
    "GateReport",
    "GateResult",
    "QualityGates",
    "RetryLoop",
    "run_with_retries",
]

FEEDBACK_CAP: Final = 64 * 1024
FEEDBACK_CHARS: Final = 4000
@dataclass(slots=True)
class GateResult:
    gate: Gate
    index: int
    passed: bool
    feedback: str = ""
    #: The gate itself broke (could not run, timed out, answered garbage).
    error: bool = False
    duration_ms: float = 0.0
    details: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "gate": self.gate.label,
            "index": self.index,
            "passed": self.passed,
            "blocking": self.gate.block_on_failure,
            "error": self.error,
            "feedback": self.feedback,
            "duration_ms": round(self.duration_ms, 3),
        }


@dataclass(slots=True)
class GateReport:
    results: list[GateResult]

    @property
    def failure(self) -> GateResult | None:
        """The blocking failure that stopped evaluation, if any."""
        for result in self.results:
            if not result.passed and result.gate.block_on_failure:
                return result
        return None

    @property
    def passed(self) -> bool:
        return self.failure is None


@dataclass(slots=True)
class GateDecision:
    """What the runtime does next: accept the output, retry with feedback, or give up."""

    status: Literal["passed", "retry", "failed"]
    report: GateReport
    attempt: int
    feedback: str | None = None
    gate: str | None = None
    retries_left: int = 0

    @property
    def passed(self) -> bool:
        return self.status == "passed"

    @property
    def should_retry(self) -> bool:
        return self.status == "retry"

    @property
    def retry_prompt(self) -> str | None:
        """The feedback handed back to the delegated agent as its next prompt."""
        return self.feedback if self.should_retry else None


class QualityGates:
    """An ordered list of gates and what they need to run."""

    def __init__(self, gates: Sequence[Gate], *, services: Services | None = None) -> None:
        self.gates = list(gates)
        self.services = services or Services()

    @classmethod
    def from_config(
        cls, raw: Any, *, services: Services | None = None, base_dir: Path | None = None
    ) -> QualityGates:
        return cls(parse_gates(raw, base_dir=base_dir), services=services)

    async def evaluate(self, delegation: Delegation) -> GateReport:
        """Run the gates in order; the first blocking failure stops the rest."""
        results: list[GateResult] = []
        for index, gate in enumerate(self.gates):
            result = await self._run(index, gate, delegation)
            results.append(result)
            if result.passed:
                continue
            if gate.block_on_failure:
                break
            log_event(
                "hookgate.quality_gate.failed",
                gate=gate.label,
                blocking=False,
                feedback=shorten(result.feedback, 200),
            )
        return GateReport(results)

    def retry_loop(self, delegation: Delegation) -> RetryLoop:
        return RetryLoop(self, delegation)

    async def _run(self, index: int, gate: Gate, delegation: Delegation) -> GateResult:
        started = time.perf_counter()
        try:
            async with asyncio.timeout(gate.timeout_seconds):
                if gate.type == "command":
                    passed, feedback, details = await _run_command(
                        gate, delegation, self.services.settings.sandbox()
                    )
                else:
                    verdict = await review(
                        self.services,
                        {"agent": gate.agent, **gate.reviewer},
                        delegation,
                        timeout_s=gate.timeout_seconds,
                    )
                    passed, feedback, details = verdict.approved, verdict.feedback, verdict.details
            result = GateResult(gate, index, passed, feedback, details=details)
        except TimeoutError:
            message = f"quality gate {gate.label} timed out after {gate.timeout_seconds:g} s"
            result = GateResult(gate, index, False, message, error=True)
        except HookError as exc:
            message = f"quality gate {gate.label} could not run: {exc}"
            result = GateResult(gate, index, False, message, error=True, details=exc.details)
        result.duration_ms = (time.perf_counter() - started) * 1000
        return result


class RetryLoop:
    """Checks successive attempts at one delegated task against the gates."""

    def __init__(self, gates: QualityGates, delegation: Delegation) -> None:
        self.gates = gates
        self.delegation = delegation
        self.attempts = 0
        self._retries: dict[int, int] = {}
        self._finished = False

    async def check(self, output: Any) -> GateDecision:
        """Evaluate one attempt. After ``passed`` or ``failed`` the loop is finished."""
        if self._finished:
            raise RuntimeError("this retry loop has finished; start a new one")
        self.attempts += 1
        report = await self.gates.evaluate(replace(self.delegation, output=output))
        failure = report.failure
        if failure is None:
            self._finished = True
            return GateDecision("passed", report, self.attempts)
        gate = failure.gate
        used = self._retries.get(failure.index, 0)
        if failure.error or used >= gate.max_retries:
            self._finished = True
            return GateDecision("failed", report, self.attempts, failure.feedback, gate.label)
        self._retries[failure.index] = used + 1
        return GateDecision(
            "retry",
            report,
            self.attempts,
            failure.feedback,
            gate.label,
            retries_left=gate.max_retries - used - 1,
        )


async def run_with_retries(
    gates: QualityGates,
    delegation: Delegation,
    redo: Callable[[str], Awaitable[Any]],
) -> tuple[GateDecision, Any]:
    """Check ``delegation.output``; while a gate asks for a retry, ``redo(feedback)`` makes
    the next attempt. Returns the final decision and the last output."""
    loop = gates.retry_loop(delegation)
    output = delegation.output
    decision = await loop.check(output)
    while decision.should_retry:
        assert decision.retry_prompt is not None
        output = await redo(decision.retry_prompt)
        decision = await loop.check(output)
    return decision, output


async def _run_command(
    gate: Gate, delegation: Delegation, sandbox: Sandbox
) -> tuple[bool, str, dict[str, Any]]:
    assert gate.command is not None
    env = base_environment(
        gate.allowed_env_vars,
        {
            "HOOK_EVENT": delegation.event,
            "HOOK_SOURCE_AGENT": delegation.source_agent,
            "HOOK_TARGET_AGENT": delegation.target_agent,
            "HOOK_TASK": delegation.task,
            "HOOK_USER_ID": delegation.user_id,
        },
    )
    # stdout is not part of the gate contract: drained, never kept (stdout_cap=0).
    code, _, stderr, _ = await run_shell(
        gate.command,
        delegation.output_text.encode(),
        gate.cwd,
        env,
        stdout_cap=0,
        stderr_cap=FEEDBACK_CAP,
        sandbox=sandbox,
    )
    feedback = shorten(stderr.decode("utf-8", "replace").strip(), FEEDBACK_CHARS)
    details = {"exit_code": code}
    if code == 0:
        return True, feedback, details
    return False, feedback or f"the gate command exited with status {code}", details
