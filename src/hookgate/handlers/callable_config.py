"""The ``callable`` handler type's config model (see :mod:`hookgate.handlers.callable`)."""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from pydantic import ConfigDict, Field, field_validator

from hookgate.handlers.callable import resolve_callable
from hookgate.handlers.config_model import StatefulConfig, problem

__all__ = ["CallableConfig"]


class CallableConfig(StatefulConfig):
    """A Python function (or coroutine function) is the hook."""

    # A function registered in code may carry settings of its own beside these.
    model_config = ConfigDict(extra="allow")
    messages: ClassVar = {
        "callable": "callable hooks need config.callable (a function or 'module:function')",
    }

    callable: Any = Field(
        description="A function (from code) or 'package.module:function' (in a hooks file).",
        json_schema_extra={"type": "string", "examples": ["guards:no_rm"]},
    )
    isolate: Literal["thread", "none"] | None = Field(
        None,
        description="thread: a worker with a hard deadline (the default for a function named "
        "by a string); none: in place on the caller's thread.",
    )

    @field_validator("isolate", mode="before")
    @classmethod
    def _isolation(cls, isolate: object) -> object:
        if isolate not in (None, "thread", "none"):
            raise problem(f"isolate must be 'thread' or 'none', got {isolate!r}")
        return isolate

    @field_validator("callable")
    @classmethod
    def _resolves(cls, target: object) -> object:
        try:
            resolve_callable(target)
        except ValueError as exc:
            raise problem(str(exc)) from None
        return target
