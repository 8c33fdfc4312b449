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
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Final, Literal

from hookgate.errors import HookgateError
from hookgate.handlers.base import Services
from hookgate.handlers.prompt.agent import Delegation, review
from hookgate.handlers.subprocess.runner import base_environment, run_shell, shorten
from hookgate.handlers.subprocess.sandbox import Sandbox
from hookgate.log import log_event
from hookgate.outcome import HookError

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
    "parse_gates",
    "run_with_retries",
]

DEFAULT_TIMEOUT_S: Final = 60.0
FEEDBACK_CAP: Final = 64 * 1024
FEEDBACK_CHARS: Final = 4000
GATE_EVENT: Final = "delegation.completed"
_GATE_KEYS: Final = frozenset(
    {
        "event",
        "type",
        "command",
        "agent",
        "block_on_failure",
        "max_retries",
        "timeout_seconds",
        "name",
        "cwd",
        "allowed_env_vars",
        # hookgate extensions for agent gates: how to reach the reviewer's model
        "prompt",
        "model",
        "provider",
        "base_url",
        "api_key_env",
    }
)
_EVENTS: Final = frozenset({GATE_EVENT, "subagent_stop", "SubagentStop", "subagent_ended"})


class GateConfigError(HookgateError, ValueError):
    """Invalid gates; ``problems`` names each bad entry and field."""

    def __init__(self, problems: Sequence[str]) -> None:
        self.problems = list(problems)
        super().__init__("; ".join(self.problems))


@dataclass(frozen=True, slots=True)
class Gate:
    type: Literal["command", "agent"]
    command: str | None = None
    agent: str | None = None
    block_on_failure: bool = True
    max_retries: int = 0
    timeout_seconds: float = DEFAULT_TIMEOUT_S
    name: str = ""
    cwd: str | None = None
    allowed_env_vars: tuple[str, ...] = ()
    #: Reviewer settings for agent gates (``prompt``, ``model``, ``provider``, …).
    reviewer: Mapping[str, Any] = field(default_factory=dict)

    @property
    def label(self) -> str:
        if self.name:
            return self.name
        if self.type == "agent":
            return f"agent {self.agent!r}"
        return f"command {shorten(self.command or '', 40)!r}"

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "type": self.type,
            "block_on_failure": self.block_on_failure,
            "max_retries": self.max_retries,
            "timeout_seconds": self.timeout_seconds,
        }
        for key in ("command", "agent", "name", "cwd"):
            if getattr(self, key):
                data[key] = getattr(self, key)
        if self.allowed_env_vars:
            data["allowed_env_vars"] = list(self.allowed_env_vars)
        data.update(self.reviewer)
        return data


def parse_gates(raw: Any, *, base_dir: Path | None = None, where: str = "gates") -> list[Gate]:
    """Gates from their JSON form (GoClaw's fields); raise GateConfigError with every problem.

    A relative ``cwd`` (and, when none is given, the working directory of commands) is the
    directory of the file the gates came from.
    """
    if not isinstance(raw, list) or not raw:
        raise GateConfigError([f"{where}: must be a non-empty list of gates"])
    problems: list[str] = []
    gates: list[Gate] = []
    for index, item in enumerate(raw):
        at = f"{where}[{index}]"
        if not isinstance(item, Mapping):
            problems.append(f"{at}: a gate must be an object")
            continue
        before = len(problems)
        problems.extend(f"{at}.{key}: unknown field" for key in sorted(set(item) - _GATE_KEYS))
        event = item.get("event", GATE_EVENT)
        if event not in _EVENTS:
            problems.append(f"{at}.event: quality gates run on {GATE_EVENT}, not {event!r}")
        kind = item.get("type")
        if kind not in ("command", "agent"):
            problems.append(f'{at}.type: use "command" or "agent" exactly, not {kind!r}')
        if kind == "command" and not (isinstance(item.get("command"), str) and item["command"]):
            problems.append(f"{at}.command: a command gate needs the command to run")
        if kind == "agent" and not (isinstance(item.get("agent"), str) and item["agent"]):
            problems.append(f"{at}.agent: an agent gate needs the reviewer agent's key")
        block = item.get("block_on_failure", True)
        if not isinstance(block, bool):
            problems.append(f"{at}.block_on_failure: must be true or false")
        retries = item.get("max_retries", 0)
        if not isinstance(retries, int) or isinstance(retries, bool) or not 0 <= retries <= 10:
            problems.append(f"{at}.max_retries: must be an integer from 0 to 10")
        timeout = item.get("timeout_seconds", DEFAULT_TIMEOUT_S)
        if not isinstance(timeout, int | float) or isinstance(timeout, bool) or timeout <= 0:
            problems.append(f"{at}.timeout_seconds: must be a positive number")
        env_names = item.get("allowed_env_vars", [])
        if not isinstance(env_names, list) or not all(isinstance(n, str) for n in env_names):
            problems.append(f"{at}.allowed_env_vars: must be a list of variable names")
        if len(problems) > before:
            continue
        cwd = item.get("cwd")
        if base_dir is not None:
            cwd = str(base_dir / cwd) if cwd else str(base_dir)
        gates.append(
            Gate(
                type="command" if kind == "command" else "agent",
                command=item.get("command"),
                agent=item.get("agent"),
                block_on_failure=block,
                max_retries=retries,
                timeout_seconds=float(timeout),
                name=str(item.get("name") or ""),
                cwd=cwd,
                allowed_env_vars=tuple(env_names),
                reviewer={
                    k: item[k]
                    for k in ("prompt", "model", "provider", "base_url", "api_key_env")
                    if k in item
                },
            )
        )
    if problems:
        raise GateConfigError(problems)
    return gates


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
