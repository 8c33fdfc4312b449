"""The rules a handler type brings to a hook definition, checked in one place.

A handler class declares its :class:`~hookgate.handlers.base.Capabilities` (runs host code,
editions, needs a filter, calls a model) and checks its own ``config`` in
``validate_config``; :func:`handler_problems` applies all of it when a hook is defined, for
the definition schema (:mod:`hookgate.definition_model`). The gateway and the panel ask
:func:`offered` which types an edition has.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from hookgate.handlers import available_handler_types, handler_class
from hookgate.handlers.base import Handler, edition_refusal
from hookgate.state.model import state_problems

if TYPE_CHECKING:
    from pydantic import BaseModel

__all__ = [
    "calls_models",
    "config_schemas",
    "edition_problem",
    "handler_config_models",
    "handler_problems",
    "offered",
]


def edition_problem(cls: type[Handler], edition: str, config: Mapping[str, Any]) -> str | None:
    """Why ``edition`` refuses a hook of ``cls`` with ``config`` (None: it does not). Host
    code is refused on the standard edition whatever the class declares."""
    refusal = edition_refusal(edition, cls.handler_type)
    if refusal is not None and cls.runs_on_host(config):
        return refusal
    if edition not in cls.capabilities.editions:
        return f"{cls.handler_type} hooks are not available on the {edition} edition"
    return None


def handler_problems(
    handler_type: str,
    config: Mapping[str, Any],
    *,
    edition: str,
    filtered: bool,
    check_config: bool = True,
) -> list[tuple[str, str]]:
    """Every problem a hook of ``handler_type`` has with its handler's rules, as (field,
    message): the class cannot load, it needs a filter and has none (``filtered``: the hook
    has a matcher or an if_expr), its config (``validate_config`` and ``config.state``,
    unless ``check_config`` is false) and the edition."""
    try:
        cls = handler_class(handler_type)
    except ImportError as exc:
        return [("handler_type", f"handler {handler_type!r} unavailable: {exc}")]
    problems: list[tuple[str, str]] = []
    if cls.capabilities.needs_filter and not filtered:
        problems.append((
            "matcher",
            f"a {handler_type} hook needs a matcher or an if_expr, so the model is not "
            "asked about every event",
        ))
    if check_config:
        problems.extend(("config", message) for message in cls.validate_config(config))
        problems.extend(("config", message) for message in state_problems(config.get("state")))
    refusal = edition_problem(cls, edition, config)
    if refusal is not None:
        problems.append(("handler_type", refusal))
    return problems


def offered(handler_type: str, edition: str) -> bool:
    """Does ``edition`` offer ``handler_type`` at all (types that can run host code only by
    their config, a quality gate's command gates, are offered)?"""
    try:
        cls = handler_class(handler_type)
    except (KeyError, ImportError):
        return False
    capabilities = cls.capabilities
    if capabilities.host_code and edition_refusal(edition, handler_type) is not None:
        return False
    return edition in capabilities.editions


def calls_models(handler_type: str) -> bool:
    """Do hooks of ``handler_type`` call a model with provider credentials?"""
    try:
        return handler_class(handler_type).capabilities.model_credentials
    except (KeyError, ImportError):
        return False


def handler_config_models(types: Iterable[str] | None = None) -> dict[str, type[BaseModel]]:
    """The config model of each handler type (``types``, else every one that loads), by
    type; a type without one is left out."""
    models: dict[str, type[BaseModel]] = {}
    for name in available_handler_types() if types is None else types:
        try:
            model = handler_class(name).config_class()
        except (KeyError, ImportError):
            continue
        if model is not None:
            models[name] = model
    return models


def config_schemas(types: Iterable[str] | None = None) -> dict[str, Any]:
    """Each handler type's config as JSON Schema, by type: what the panel builds the
    type's form from (the gateway's ``connect`` and ``info``)."""
    return {
        name: model.model_json_schema() for name, model in handler_config_models(types).items()
    }
