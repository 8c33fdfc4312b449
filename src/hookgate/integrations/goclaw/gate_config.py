"""What a GoClaw quality gate is (:class:`Gate`) and the ``quality_gate`` handler type's
config model: the gates, each checked by :class:`GateModel` (what a gate file and
``other_config.quality_gates`` hold as well); :mod:`.gates` runs them."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, ClassVar, Final, Literal

from pydantic import BeforeValidator, Field, ValidationError, field_validator, model_validator

from hookgate.errors import HookgateError
from hookgate.handlers.config_model import HandlerConfig, problem, problems_from, tuple_to_list
from hookgate.handlers.subprocess.runner import shorten

__all__ = [
    "DEFAULT_TIMEOUT_S",
    "GATE_EVENT",
    "Gate",
    "GateConfigError",
    "GateModel",
    "QualityGateConfig",
    "parse_gates",
]

DEFAULT_TIMEOUT_S: Final = 60.0
GATE_EVENT: Final = "delegation.completed"


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



_EVENTS = frozenset({GATE_EVENT, "subagent_stop", "SubagentStop", "subagent_ended"})
_REVIEWER = ("prompt", "model", "provider", "base_url", "api_key_env")


def _kind(value: object) -> str:
    return f'use "command" or "agent" exactly, not {value!r}'


class GateModel(HandlerConfig):
    """One gate: a command, or a reviewer agent, that judges delegated work."""

    event: str = Field(GATE_EVENT, description=f"Gates run on {GATE_EVENT}.")
    type: Literal["command", "agent"] = Field(description="command or agent.")
    command: str | None = Field(None, description="A command gate's shell command.")
    agent: str | None = Field(None, description="An agent gate's reviewer agent key.")
    block_on_failure: bool = Field(True, description="A failed gate blocks (else it warns).")
    max_retries: int = Field(0, ge=0, le=10, description="Rounds of feedback before failing.")
    timeout_seconds: float = Field(DEFAULT_TIMEOUT_S, gt=0, description="Per gate run.")
    name: str | None = None
    cwd: str | None = Field(None, description="A command gate's working directory.")
    allowed_env_vars: Annotated[list[str], BeforeValidator(tuple_to_list)] = Field(
        default_factory=list, description="Variables a command gate may see."
    )
    # hookgate's additions for agent gates: how to reach the reviewer's model.
    prompt: str | None = None
    model: str | None = None
    provider: str | None = None
    base_url: str | None = None
    api_key_env: str | None = None

    @model_validator(mode="before")
    @classmethod
    def _an_object(cls, item: Any) -> Any:
        if not isinstance(item, Mapping):
            raise problem("a gate must be an object")
        return item

    @field_validator("event")
    @classmethod
    def _gate_event(cls, event: str) -> str:
        if event not in _EVENTS:
            raise problem(f"quality gates run on {GATE_EVENT}, not {event!r}")
        return event

    @model_validator(mode="after")
    def _what_runs(self) -> GateModel:
        if self.type == "command" and not self.command:
            raise problem("a command gate needs the command to run", field="command")
        if self.type == "agent" and not self.agent:
            raise problem("an agent gate needs the reviewer agent's key", field="agent")
        return self

    def gate(self, base_dir: Path | None) -> Gate:
        """The gate as it runs: a relative ``cwd`` (and, when none is given, the working
        directory of commands) is the directory of the file the gates came from."""
        cwd = self.cwd
        if base_dir is not None:
            cwd = str(base_dir / cwd) if cwd else str(base_dir)
        return Gate(
            type=self.type,
            command=self.command,
            agent=self.agent,
            block_on_failure=self.block_on_failure,
            max_retries=self.max_retries,
            timeout_seconds=float(self.timeout_seconds),
            name=self.name or "",
            cwd=cwd,
            allowed_env_vars=tuple(self.allowed_env_vars),
            reviewer={key: getattr(self, key) for key in _REVIEWER if key in self.model_fields_set},
        )


class QualityGateConfig(HandlerConfig):
    """GoClaw's legacy quality gates, run in order on a delegation's result."""

    messages: ClassVar = {
        "gates": "gates: must be a non-empty list of gates",
        "gates[].type": _kind,
        "gates[].block_on_failure": "must be true or false",
        "gates[].max_retries": "must be an integer from 0 to 10",
        "gates[].timeout_seconds": "must be a positive number",
        "gates[].allowed_env_vars": "must be a list of variable names",
        **{
            f"gates[].{key}": "must be a string"
            for key in ("event", "command", "agent", "name", "cwd", *_REVIEWER)
        },
    }

    gates: list[GateModel] = Field(min_length=1, description="The gates, run in order.")


def parse_gates(raw: Any, *, base_dir: Path | None = None, where: str = "gates") -> list[Gate]:
    """Gates from their JSON form (GoClaw's fields); raise GateConfigError with every problem,
    each naming the gate and field (``where[2].max_retries: …``)."""
    try:
        config = QualityGateConfig.model_validate({"gates": raw})
    except ValidationError as exc:
        found = problems_from(exc, QualityGateConfig.messages, "quality_gate")
        # The messages say "gates"; a gate file's gates sit elsewhere (other_config...).
        raise GateConfigError([where + m.removeprefix("gates") for m in found]) from None
    return [gate.gate(base_dir) for gate in config.gates]
