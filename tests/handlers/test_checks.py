"""Handler capabilities: declared on the class, applied in one place when a hook is defined."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, ClassVar

import pytest

from hookgate.definition import DefinitionError
from hookgate.definition_model import validate_definition
from hookgate.handlers import Capabilities, Handler, handler_class, register_handler_type
from hookgate.handlers import _registered as registry
from hookgate.handlers.checks import calls_models, handler_problems, offered
from hookgate.host_code import HostCodePolicy


class HostProgram(Handler):
    handler_type: ClassVar[str] = "test_host_program"
    capabilities: ClassVar[Capabilities] = Capabilities(host_code=True)


class LiteOnly(Handler):
    handler_type: ClassVar[str] = "test_lite_only"
    capabilities: ClassVar[Capabilities] = Capabilities(editions=("lite",))


class Filtered(Handler):
    handler_type: ClassVar[str] = "test_filtered"
    capabilities: ClassVar[Capabilities] = Capabilities(needs_filter=True, model_credentials=True)

    @classmethod
    def validate_config(cls, config: Mapping[str, Any]) -> list[str]:
        return [] if "ok" in config else ["test_filtered hooks need config.ok"]


@pytest.fixture(autouse=True)
def test_types() -> Iterator[None]:
    for cls in (HostProgram, LiteOnly, Filtered):
        register_handler_type(cls.handler_type, cls)
    yield
    for cls in (HostProgram, LiteOnly, Filtered):
        registry.pop(cls.handler_type, None)


def hook(handler_type: str, **changes: Any) -> dict[str, Any]:
    return {"event": "pre_tool_use", "handler_type": handler_type, "scope": "global",
            "config": {"ok": True}, **changes}


def problems(raw: dict[str, Any], **options: Any) -> dict[str, str]:
    with pytest.raises(DefinitionError) as info:
        validate_definition(raw, **options)
    return {p.field: p.message for p in info.value.problems}


def test_the_old_host_code_attribute_is_refused_at_class_creation() -> None:
    """A handler that still sets ``host_code = True`` would slip past the host-code boundary:
    defining it fails instead."""
    with pytest.raises(TypeError, match="Capabilities\\(host_code=True\\)"):
        type("Legacy", (Handler,), {"handler_type": "legacy", "host_code": True})


def test_a_declared_host_code_type_is_refused_on_standard_everywhere() -> None:
    """Declaring host code is enough: refused when defined and when run on standard, even
    though the class left ``editions`` at its default (every edition)."""
    found = problems(hook("test_host_program"), edition="standard")
    assert "not available on the standard edition" in found["handler_type"]
    definition = validate_definition(hook("test_host_program"))
    assert HostCodePolicy().refusal(definition, "standard") is not None
    assert HostCodePolicy().refusal(definition, "lite") is None
    assert not offered("test_host_program", "standard")


def test_editions_limit_where_a_type_is_offered() -> None:
    found = problems(hook("test_lite_only"), edition="standard")
    assert found["handler_type"] == "test_lite_only hooks are not available on the standard edition"
    assert validate_definition(hook("test_lite_only")).handler_type == "test_lite_only"
    assert offered("test_lite_only", "lite") and not offered("test_lite_only", "standard")


def test_needs_filter_and_config_problems_come_together() -> None:
    """The filter rule, the handler's own config check and the edition are one pass: all
    problems at once, each on its field."""
    found = problems(hook("test_filtered", config={}))
    assert found["matcher"].startswith("a test_filtered hook needs a matcher or an if_expr")
    assert found["config"] == "test_filtered hooks need config.ok"
    assert validate_definition(hook("test_filtered", if_expr="depth < 2")).if_expr


def test_a_filter_that_does_not_compile_is_reported_alone() -> None:
    found = problems(hook("test_filtered", matcher="("))
    assert set(found) == {"matcher"} and "does not compile" in found["matcher"]


def test_capabilities_of_the_builtin_handlers() -> None:
    for name in ("command", "callable", "process"):
        assert handler_class(name).capabilities.host_code
        assert not offered(name, "standard") and offered(name, "lite")
    assert handler_class("prompt").capabilities.needs_filter
    assert {name for name in ("prompt", "agent", "quality_gate", "http", "command")
            if calls_models(name)} == {"prompt", "agent", "quality_gate"}
    assert calls_models("test_filtered") and not calls_models("no_such_type")
    # A quality gate runs host code only through a command gate: offered, checked per config.
    assert offered("quality_gate", "standard")
    command_gate = {"gates": [{"type": "command", "command": "true"}]}
    assert handler_problems("quality_gate", command_gate, edition="standard", filtered=False)
