"""Each handler type owns one pydantic config model: it checks a hook's ``config`` (every
problem naming its field), and the same model is what the OpenAPI document and the panel's
forms describe."""

from __future__ import annotations

from typing import Any

import pytest

from hookgate.definition import DefinitionError
from hookgate.definition_model import validate_definition
from hookgate.handlers import available_handler_types, handler_class
from hookgate.handlers.checks import config_schemas, handler_config_models
from hookgate.handlers.process.config import parse_spec
from hookgate.integrations.goclaw.gate_config import GateConfigError, parse_gates
from hookgate.server.openapi import openapi_document


def config_problems(handler_type: str, config: dict[str, Any], **fields: Any) -> list[str]:
    """What validating a hook of ``handler_type`` with ``config`` reports about the config."""
    raw = {"event": "pre_tool_use", "handler_type": handler_type, "scope": "global",
           "matcher": "Bash", "config": config, **fields}
    with pytest.raises(DefinitionError) as caught:
        validate_definition(raw)
    return [p.message for p in caught.value.problems if p.field == "config"]


def test_every_handler_type_has_a_config_model() -> None:
    """No type is left to a hand-written check: each names its model, and the model loads."""
    models = handler_config_models()
    assert set(models) == set(available_handler_types())
    for name, model in models.items():
        assert handler_class(name).config_class() is model


@pytest.mark.parametrize(
    ("handler_type", "config", "message"),
    [
        # The path of the bad field, inside a map or a list too.
        ("process", {"command": ["x"], "env": {"A": "1", "B": 2}},
         "env must map variable names to string values"),
        ("process", {"command": ["x"], "hello_timeout_ms": True},
         "hello_timeout_ms must be an integer between 1 and 60000"),
        ("http", {"url": "https://x.example/", "headers": {"X-Team": 5}},
         "headers.X-Team: the value must be a one-line string"),
        ("quality_gate", {"gates": [{"type": "command", "command": "x"},
                                    {"type": "command", "command": "x", "max_retries": 11}]},
         "gates[1].max_retries: must be an integer from 0 to 10"),
        ("quality_gate", {"gates": [{"type": "agent"}]},
         "gates[0].agent: an agent gate needs the reviewer agent's key"),
        ("quality_gate", {"gates": ["x"]}, "gates[0]: a gate must be an object"),
        ("command", {"command": "true", "allowed_env_vars": ["OK", "no-dash"]},
         "allowed_env_vars must be a list of environment variable names"),
        ("agent", {"max_tokens": "many"}, "max_tokens: input should be a valid integer"),
    ],
)
def test_problems_name_the_field(handler_type: str, config: dict[str, Any],
                                 message: str) -> None:
    """A bad value is reported once, with where it is."""
    found = config_problems(handler_type, config)
    assert message in found, found
    assert len(found) == 1, found


def test_a_secret_header_value_is_never_echoed() -> None:
    """A header value that fails is named by its header, never quoted: it may be a key."""
    found = config_problems("http", {"url": "https://x.example/",
                                     "headers": {"Authorization": "Bearer sk-1\nX: y"}})
    assert found == ["headers.Authorization: the value must be a one-line string"]


def test_unknown_keys_are_named_with_the_type() -> None:
    """An unknown top-level key names the handler type; one inside a gate, its place."""
    assert config_problems("command", {"command": "true", "shell": "zsh"}) == [
        "unknown command config key 'shell'"]
    assert config_problems("quality_gate", {"gates": [
        {"type": "command", "command": "x", "retries": 1}]}) == ["gates[0].retries: unknown field"]


def test_the_model_builds_what_runs() -> None:
    """Validation is the one parse: the process spec and the gates come out of the models."""
    spec = parse_spec({"command": ("python3", "hook.py"), "env": {"A": "1"},
                       "observe": ["tool_exec_start"], "hello_timeout_ms": 250})
    assert spec.command == ("python3", "hook.py") and spec.env == (("A", "1"),)
    assert spec.observe == frozenset({"agent.tool.exec_start"})
    assert spec.hello_timeout_s == 0.25
    with pytest.raises(ValueError, match="transport must be 'stdio'"):
        parse_spec({"command": ["x"], "transport": "tcp"})
    gates = parse_gates([{"type": "agent", "agent": "qa", "model": "haiku"}])
    assert (gates[0].agent, dict(gates[0].reviewer)) == ("qa", {"model": "haiku"})
    with pytest.raises(GateConfigError) as caught:
        parse_gates([{"type": "x"}], where="other_config.quality_gates")
    assert caught.value.problems == [
        "other_config.quality_gates[0].type: use \"command\" or \"agent\" exactly, not 'x'"]


def test_the_openapi_document_describes_each_types_config() -> None:
    """Each model is a component, and the definition's config names which one applies."""
    schemas = openapi_document()["components"]["schemas"]
    by_type = schemas["HookDefinition"]["properties"]["config"]["x-config-by-handler-type"]
    assert set(by_type) == set(available_handler_types())
    http = schemas[by_type["http"]["$ref"].rsplit("/", 1)[1]]
    assert "url" in http["required"] and http["additionalProperties"] is False
    assert "SSRF" in http["properties"]["url"]["description"]
    gate = schemas[by_type["quality_gate"]["$ref"].rsplit("/", 1)[1]]
    assert gate["properties"]["gates"]["items"] == {"$ref": "#/components/schemas/GateModel"}
    assert schemas["GateModel"]["properties"]["max_retries"]["maximum"] == 10


def test_the_panel_gets_the_same_schemas() -> None:
    """What the panel builds a form from is the model's own JSON Schema."""
    schemas = config_schemas(["command", "rule"])
    assert set(schemas) == {"command", "rule"}
    assert schemas["command"]["required"] == ["command"]
    assert schemas["command"]["properties"]["format"]["default"] == "goclaw"
