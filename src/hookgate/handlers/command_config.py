"""The ``command`` handler type's config model (see :mod:`hookgate.handlers.command`)."""

from __future__ import annotations

from typing import Annotated, ClassVar, Final

from pydantic import AfterValidator, BeforeValidator, Field

from hookgate.handlers.command import NATIVE_FORMAT, command_formats, is_command_format
from hookgate.handlers.config_model import StatefulConfig, problem, tuple_to_list

__all__ = ["ENV_NAME_PATTERN", "EnvNames", "CommandConfig"]

#: An environment variable's name.
ENV_NAME_PATTERN: Final = r"^[A-Za-z_][A-Za-z0-9_]*$"
ENV_NAMES_MESSAGE: Final = "allowed_env_vars must be a list of environment variable names"

#: Names of hookgate's environment variables a hook program may see.
EnvNames = Annotated[
    list[Annotated[str, Field(pattern=ENV_NAME_PATTERN)]], BeforeValidator(tuple_to_list)
]


def _not_blank(command: str) -> str:
    if not command.strip():
        raise problem("command hooks need config.command (a non-empty shell command)")
    return command


def _known_format(name: str) -> str:
    if not is_command_format(name):
        raise problem(f"format must be one of {', '.join(command_formats())}, got {name!r}")
    return name


class CommandConfig(StatefulConfig):
    """A shell command: the event arrives on stdin; exit 0 allows, exit 2 blocks."""

    messages: ClassVar = {
        "command": "command hooks need config.command (a non-empty shell command)",
        "allowed_env_vars": ENV_NAMES_MESSAGE,
        "cwd": "cwd must be a directory path",
        "format": "format must be a string (goclaw or an integration's, such as claude_code)",
    }

    command: Annotated[str, AfterValidator(_not_blank)] = Field(
        description="Run with sh -c; the event JSON arrives on stdin. Exit 0 allows, exit 2 "
        "blocks.",
        examples=["bash ./hooks/guard.sh"],
    )
    allowed_env_vars: EnvNames = Field(
        default_factory=list,
        description="Only these of hookgate's environment variables reach the command.",
    )
    cwd: str | None = Field(None, min_length=1, description="Working directory.")
    format: Annotated[str, AfterValidator(_known_format)] = Field(
        NATIVE_FORMAT,
        description="The script contract: goclaw (default) or an integration's, such as "
        "claude_code (Claude Code hook scripts run unchanged).",
    )
