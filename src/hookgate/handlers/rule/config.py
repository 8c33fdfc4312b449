"""A rule hook's ``config``: one pydantic model, used to check a definition and to run it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, Final, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError, model_validator

from hookgate.matching import FilterError, Matcher

__all__ = [
    "DEFAULT_HISTORY_S",
    "HISTORY_RULE_EVENT",
    "MAX_SEQUENCE",
    "MAX_WINDOW_S",
    "AfterRule",
    "LimitRule",
    "RequireRule",
    "RuleConfig",
    "SequenceRule",
    "config_problems",
]

#: The longest window or ``within_s`` (the hook state store's longest TTL).
MAX_WINDOW_S: Final = 30 * 86400.0
#: How long a session's history is kept for a rule that gives no ``within_s``.
DEFAULT_HISTORY_S: Final = 7 * 86400.0
#: The most steps a ``sequence`` has.
MAX_SEQUENCE: Final = 8
#: The event whose rule hooks may look back (``after``, ``require``, ``sequence``): the
#: engine keeps the session history for the tool patterns they name.
HISTORY_RULE_EVENT: Final = "pre_tool_use"


def _tool_pattern(pattern: str) -> str:
    # The same bounded RE2 search as a hook's matcher; "" and "*" (any tool) say nothing.
    if pattern in ("", "*"):
        raise ValueError("must name tools (an RE2 pattern such as '^Read$' or 'secret')")
    try:
        Matcher(pattern)
    except FilterError as exc:
        raise ValueError(str(exc)) from None
    return pattern


ToolPattern = Annotated[str, AfterValidator(_tool_pattern)]
Seconds = Annotated[float, Field(strict=True, gt=0, le=MAX_WINDOW_S)]


class _Part(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class LimitRule(_Part):
    """At most ``count`` admitted calls per window of ``window_s`` seconds (windows are
    aligned to the clock: a new one starts every ``window_s``)."""

    count: int = Field(strict=True, ge=1, le=1_000_000)
    per: Literal["session", "agent", "tenant"] = "session"
    window_s: Seconds


class AfterRule(_Part):
    """Block once a call of ``tool`` was admitted in this session (or for this agent),
    within the last ``within_s`` seconds (default: the last seven days)."""

    tool: ToolPattern
    per: Literal["session", "agent"] = "session"
    within_s: Seconds | None = None


class RequireRule(_Part):
    """Block unless a call of ``tool`` came earlier in this session (or for this agent):
    one that succeeded (a ``post_tool_use`` was seen) unless ``succeeded`` is false."""

    tool: ToolPattern
    per: Literal["session", "agent"] = "session"
    within_s: Seconds | None = None
    succeeded: bool = True


class SequenceRule(_Part):
    """Block unless calls of each of ``tools`` came earlier, in that order: the latest call
    of each step is later than the latest call of the step before."""

    tools: list[ToolPattern] = Field(min_length=2, max_length=MAX_SEQUENCE)
    per: Literal["session", "agent"] = "session"
    within_s: Seconds | None = None
    succeeded: bool = True


class RuleConfig(_Part):
    """``config`` of a ``rule`` hook: at least one of ``limit``, ``after``, ``require``,
    ``sequence``; a call passes when every one given passes."""

    limit: LimitRule | None = None
    after: AfterRule | None = None
    require: RequireRule | None = None
    sequence: SequenceRule | None = None

    @model_validator(mode="after")
    def _something(self) -> RuleConfig:
        if not (self.limit or self.after or self.require or self.sequence):
            raise ValueError("a rule needs at least one of limit, after, require, sequence")
        return self


def config_problems(config: Mapping[str, Any]) -> list[str]:
    """Problems with a rule hook's ``config``, one message each, naming the field."""
    try:
        RuleConfig.model_validate(config)
    except ValidationError as exc:
        problems = []
        for error in exc.errors(include_url=False):
            where = ".".join(str(part) for part in error["loc"])
            message = str(error["msg"]).removeprefix("Value error, ")
            problems.append(f"{where}: {message}" if where else message)
        return problems
    return []
