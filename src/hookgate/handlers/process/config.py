"""The ``process`` handler type's config model (see :mod:`hookgate.handlers.process.spec`
for what the keys mean, and :func:`~hookgate.handlers.process.spec.parse_spec`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, ClassVar, Final

from pydantic import BeforeValidator, Field, ValidationError, field_validator

from hookgate.handlers.command_config import ENV_NAME_PATTERN, EnvNames
from hookgate.handlers.config_model import StatefulConfig, config_problems, problem, tuple_to_list
from hookgate.handlers.process.spec import (
    DEFAULT_HELLO_TIMEOUT_MS,
    INTERCEPT_STAGES,
    ProcessSpec,
)
from hookgate.runtime_kinds import ObserveFilter, normalize_observe

__all__ = ["ProcessConfig", "parse_spec"]

_COMMAND_MESSAGE: Final = (
    'process hooks need config.command: a non-empty list such as ["python3", "/path/hook.py"]'
)
EnvName = Annotated[str, Field(pattern=ENV_NAME_PATTERN)]


class ProcessConfig(StatefulConfig):
    """A long-lived child process that speaks JSON-RPC on stdio (PicoClaw's hook programs)."""

    messages: ClassVar = {
        "command": _COMMAND_MESSAGE,
        "dir": "dir must be a directory path",
        "env": "env must map variable names to string values",
        "allowed_env_vars": "allowed_env_vars must be a list of environment variable names",
        "observe": "observe must be a list of runtime event kinds",
        "intercept": "intercept must be a list of stage names",
        "name": "name must be a string",
        "instance": "instance must be a non-empty string",
        "hello_timeout_ms": "hello_timeout_ms must be an integer between 1 and 60000",
    }

    command: Annotated[list[str], BeforeValidator(tuple_to_list)] = Field(
        min_length=1,
        description="The program and its arguments, one per item (no shell). Started once; "
        "speaks JSON-RPC on stdio (hook.hello, hook.before_tool, …).",
        examples=[["python3", "/work/hooks/review_gate.py"]],
    )
    dir: str | None = Field(None, min_length=1, description="Working directory.")
    env: dict[EnvName, str] | None = Field(None, description="Variables set for the process.")
    allowed_env_vars: EnvNames | None = Field(
        None, description="Variables passed on from hookgate's environment."
    )
    observe: Annotated[list[Any] | None, BeforeValidator(tuple_to_list)] = Field(
        None,
        description="Runtime event kinds it is notified of (agent.tool.exec_start or "
        "tool_exec_start; * for all).",
    )
    intercept: Annotated[list[str] | None, BeforeValidator(tuple_to_list)] = Field(
        None, description=f"Stages it declares: {', '.join(INTERCEPT_STAGES)}."
    )
    transport: str | None = Field(None, description="stdio, the only transport.")
    name: str | None = Field(None, description="Sent in hook.hello (default: the hook's name).")
    instance: str | None = Field(
        None, min_length=1, description="Hooks naming the same instance share one process."
    )
    hello_timeout_ms: int = Field(
        DEFAULT_HELLO_TIMEOUT_MS, ge=1, le=60000, description="Deadline of the hook.hello answer."
    )

    @field_validator("command")
    @classmethod
    def _program_named(cls, command: list[str]) -> list[str]:
        if not command[0]:
            raise problem(_COMMAND_MESSAGE)
        return command

    @field_validator("observe")
    @classmethod
    def _known_kinds(cls, observe: list[Any] | None) -> list[Any] | None:
        try:
            normalize_observe(observe)
        except ValueError as exc:
            raise problem(f"observe: {exc}") from None
        return observe

    @field_validator("intercept")
    @classmethod
    def _known_stages(cls, intercept: list[str] | None) -> list[str] | None:
        for stage in intercept or ():
            if stage and stage not in INTERCEPT_STAGES:
                raise problem(
                    f"intercept: unknown stage {stage!r}; expected {', '.join(INTERCEPT_STAGES)}"
                )
        return intercept

    @field_validator("transport")
    @classmethod
    def _stdio(cls, transport: str | None) -> str | None:
        if transport and transport != "stdio":
            raise problem(f"transport must be 'stdio' (the only one supported), got {transport!r}")
        return transport

    def spec(self) -> ProcessSpec:
        """What the handler runs."""
        observe: ObserveFilter = normalize_observe(self.observe)
        return ProcessSpec(
            command=tuple(self.command),
            dir=self.dir,
            env=tuple(sorted((self.env or {}).items())),
            allowed_env_vars=tuple(self.allowed_env_vars or ()),
            observe=observe,
            intercept=tuple(self.intercept or ()),
            name=self.name or None,
            instance=self.instance,
            hello_timeout_s=self.hello_timeout_ms / 1000,
        )


def parse_spec(config: Mapping[str, Any]) -> ProcessSpec:
    """A :class:`ProcessSpec` from hook config; ValueError with one message per problem."""
    try:
        return ProcessConfig.model_validate(dict(config)).spec()
    except ValidationError:
        raise ValueError(*config_problems(ProcessConfig, "process", config)) from None
