"""The base of every handler type's ``Config`` model, and its errors in hookgate's words.

Each handler type owns one pydantic model of its ``config`` (a subclass of
:class:`HandlerConfig`, named by the handler class's ``config_model``). The one model is
what checks a definition (:func:`hookgate.handlers.checks.handler_problems`), what the
gateway's OpenAPI document shows under the type's name, and what the panel builds the
type's form from (:func:`hookgate.handlers.checks.config_schemas`). The models are
imported only when something is validated or documented: pydantic stays off the engine's
import path.

A problem names its field: ``unknown http config key 'body'``, ``hello_timeout_ms must be
an integer between 1 and 60000``, ``headers.X-Team: the value must be a one-line string``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any, ClassVar, Final

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from pydantic_core import PydanticCustomError

__all__ = [
    "HandlerConfig",
    "StatefulConfig",
    "config_problems",

    "problem",
    "problems_from",
    "tuple_to_list",
]

#: A field's message, or one made from the bad value.
Message = str | Callable[[Any], str]
#: The error type of a message worded in full by a model's own check.
_OWN: Final = "hookgate_config"


def problem(message: str, *, field: str | None = None) -> PydanticCustomError:
    """A check's failure, worded in full (raised from a model's validators); ``field``:
    the field it is about, when a check of the whole model finds it."""
    # The template is a placeholder, never the message: a message may hold braces.
    return PydanticCustomError(_OWN, "{message}", {"message": message, "field": field})


def tuple_to_list(value: Any) -> Any:
    """Code registration may pass a tuple where a hooks file has a list."""
    return list(value) if isinstance(value, tuple) else value


class HandlerConfig(BaseModel):
    """What every handler type's config model is: strict, and unknown keys are refused."""

    model_config = ConfigDict(extra="forbid", strict=True)

    #: Per field: the whole message when the value is missing, of the wrong type or out of
    #: range (pydantic's own checks); a field not listed gets ``<field>: <pydantic's text>``.
    messages: ClassVar[Mapping[str, Message]] = {}


class StatefulConfig(HandlerConfig):
    """The config of a handler type whose hooks may keep hook state: ``state`` (checked
    with the definition by :func:`hookgate.state.model.state_problems`)."""

    state: Any = Field(
        None,
        description="Hook state: true, or {namespace, ttl_s}; the hook reads and writes a "
        "small key-value map per session and per run.",
    )


def _where(loc: Iterable[int | str]) -> str:
    parts: list[str] = []
    for part in loc:
        if isinstance(part, int):
            parts[-1:] = [f"{parts[-1] if parts else ''}[{part}]"]
        else:
            parts.append(part)
    return ".".join(parts)


def config_problems(
    model: type[BaseModel], handler_type: str, config: Mapping[str, Any]
) -> list[str]:
    """Every problem ``config`` has with ``model``, one message each (empty when valid); a
    model that is no :class:`HandlerConfig` gets pydantic's words, each with its path."""
    try:
        model.model_validate(dict(config))
    except ValidationError as exc:
        return problems_from(exc, getattr(model, "messages", {}), handler_type)
    return []


def problems_from(
    exc: ValidationError, messages: Mapping[str, Message], handler_type: str
) -> list[str]:
    """pydantic's errors in hookgate's words. ``messages`` is keyed by field path (an item
    of a list as ``[]``: ``gates[].max_retries``); a top-level field's message is a whole
    sentence, a nested one follows its path (``gates[2].max_retries: must be …``)."""
    found: list[str] = []
    for error in exc.errors(include_url=False):
        loc = [part for part in error["loc"] if not _is_union_tag(part)]
        where = _where(loc)
        nested = len(loc) > 1
        kind = error["type"]
        message: Message | None
        if kind == _OWN:
            message = error["ctx"]["message"]
            if error["ctx"]["field"]:
                where, nested = ".".join(filter(None, (where, error["ctx"]["field"]))), True
        elif kind == "extra_forbidden":
            message = "unknown field" if nested else f"unknown {handler_type} config key {where!r}"
        elif (exact := messages.get(re.sub(r"\[\d+\]", "[]", where))) is not None:
            message = exact
        elif loc and (whole := messages.get(str(loc[0]))) is not None:
            message, nested = whole, False  # the field's own sentence covers its parts
        else:
            message, nested = error["msg"].lower(), bool(loc)
        if callable(message):
            message = message(error.get("input"))
        found.append(f"{where}: {message}" if nested else str(message))
    return list(dict.fromkeys(found))  # a list with several bad items: one problem


def _is_union_tag(part: int | str) -> bool:
    # pydantic names the member of a union it tried (``list[str]``, ``function-after[...]``).
    return isinstance(part, str) and ("[" in part or part in ("str", "int", "bool"))
