import subprocess
import sys

import pytest

from hookgate.definition import DefinitionError
from hookgate.definition_model import validate_definition


def base(**changes: object) -> dict[str, object]:
    raw: dict[str, object] = {
        "event": "pre_tool_use",
        "handler_type": "callable",
        "scope": "tenant",
        "config": {"callable": "tests.fixtures.sample_hooks:block_rm"},
    }
    raw.update(changes)
    return raw


def problems(raw: dict[str, object], **options: object) -> dict[str, str]:
    with pytest.raises(DefinitionError) as info:
        validate_definition(raw, **options)  # type: ignore[arg-type]
    return {p.field: p.message for p in info.value.problems}


def test_defaults_are_applied() -> None:
    hook = validate_definition(base())
    assert hook.timeout_ms == 5000
    assert hook.on_timeout == "block" and hook.on_error == "block"
    assert hook.priority == 0 and hook.enabled is True and hook.version == 1
    assert hook.source == "user"
    observe = validate_definition(base(event="post_tool_use"))
    assert observe.on_timeout == "allow"


def test_missing_required_fields_use_the_seed_message() -> None:
    found = problems({"config": {}})
    assert "handler_type, event, and scope are required" in found.values()


def test_matcher_that_needs_backtracking_is_refused() -> None:
    found = problems(base(matcher=r"(a)\1"))
    assert "matcher does not compile" in found["matcher"]


def test_cel_syntax_error_names_if_expr() -> None:
    found = problems(base(if_expr='tool_name == && depth'))
    assert found["if_expr"].startswith("if_expr does not compile")


def test_cel_unknown_variable_is_a_compile_error() -> None:
    assert "undeclared reference" in problems(base(if_expr="nosuch == 1"))["if_expr"]


def test_cel_must_be_boolean() -> None:
    assert "boolean" in problems(base(if_expr="tool_name"))["if_expr"]


@pytest.mark.parametrize("timeout", [60000, 10001, -5, "fast"])
def test_timeout_out_of_range(timeout: object) -> None:
    assert "timeout_ms" in problems(base(timeout_ms=timeout))


def test_timeout_bounds_accepted() -> None:
    assert validate_definition(base(timeout_ms=10000)).timeout_ms == 10000
    assert validate_definition(base(timeout_ms=0)).timeout_ms == 5000


def test_prompt_hook_needs_matcher_or_if_expr() -> None:
    found = problems(base(handler_type="prompt", config={"prompt_template": "x"}),
                     check_handler_config=False)
    assert "needs a matcher or an if_expr" in found["matcher"]


def test_agent_scope_needs_agents() -> None:
    assert "at least one agent" in problems(base(scope="agent"))["agent_ids"]
    hook = validate_definition(base(scope="agent", agent_ids=["a1"]))
    assert hook.agent_ids == ("a1",)


def test_unknown_handler_type() -> None:
    assert "unknown handler type 'lambda'" in problems(base(handler_type="lambda"))["handler_type"]


def test_command_refused_on_standard_edition() -> None:
    found = problems(base(handler_type="command", config={"command": "true"}),
                     edition="standard", check_handler_config=False)
    assert "standard edition" in found["handler_type"]


def test_every_problem_is_reported_at_once() -> None:
    found = problems(base(matcher="(", timeout_ms=99999, on_timeout="maybe", priority="high"))
    assert {"matcher", "timeout_ms", "on_timeout", "priority"} <= set(found)


def test_unknown_field_and_bad_callable() -> None:
    found = problems(base(colour="red", config={"callable": "no.such.module:fn"}))
    assert found["colour"] == "unknown field"
    assert "cannot import" in found["config"]


def test_update_bumps_version() -> None:
    hook = validate_definition(base())
    assert hook.bumped(priority=3).version == 2


@pytest.mark.parametrize(("field", "value", "message"), [
    ("priority", True, "must be an integer"),
    ("enabled", "yes", "must be true or false"),
    ("version", 0, "must be a positive integer"),
    ("on_error", "maybe", "must be 'block' or 'allow', got 'maybe'"),
    ("scope", "world", "must be one of global, tenant, agent, got 'world'"),
    ("name", 5, "must be a string"),
    ("matcher", 3, "must be a string (a regular expression)"),
    ("timeout_ms", 2.5, "must be an integer number of milliseconds"),
    ("config", [], "must be an object"),
    ("agent_ids", ["a", ""], "must be a list of agent id strings"),
], ids=lambda v: str(v)[:20])
def test_wrong_types_keep_hookgate_wording(field: str, value: object, message: str) -> None:
    """The schema's type errors read as hookgate's messages, not pydantic's."""
    assert problems(base(**{field: value}))[field] == message


def test_field_and_cross_field_problems_come_together() -> None:
    """A bad type, an unknown field and the rules between fields (agent scope, a filter a
    handler needs, the event's timeout range) are all reported in one answer."""
    found = problems(base(scope="agent", handler_type="prompt", config={"prompt_template": "x"},
                          event="approve_tool", timeout_ms=90_000_000, colour="red",
                          priority="high"))
    assert set(found) >= {"agent_ids", "matcher", "timeout_ms", "colour", "priority"}
    assert found["timeout_ms"] == "must be between 1 and 86400000 ms on approve_tool, got 90000000"


def test_unknown_fields_come_first_then_field_order() -> None:
    with pytest.raises(DefinitionError) as info:
        validate_definition(base(zeta=1, priority="x", event="nope"))
    assert [p.field for p in info.value.problems] == ["zeta", "event", "priority"]


def test_approval_shorthands_and_object() -> None:
    assert validate_definition(base(approval="on_ask")).approval is None
    required = validate_definition(base(approval="required")).approval
    assert required is not None and required.required and required.timeout_ms == 60_000
    policy = validate_definition(base(approval={"timeout_ms": 5000, "on_timeout": "allow"}))
    assert policy.approval is not None and policy.approval.on_timeout == "allow"
    found = problems(base(approval={"required": 1, "later": True}))
    assert found == {"approval.later": "unknown field",
                     "approval.required": "must be true or false"}
    assert "not a blocking event" in problems(base(event="post_tool_use", approval="required"))[
        "approval"]


def test_goclaw_blank_fields_take_their_defaults() -> None:
    """GoClaw's forms send "" for a field left blank."""
    hook = validate_definition(base(on_timeout="", on_error="", source="", name=None,
                                    agent_id="a1", scope="agent"))
    assert (hook.on_timeout, hook.source, hook.name, hook.agent_ids) == ("block", "user", "",
                                                                         ("a1",))
    assert problems(base(scope=""))["scope"] == "handler_type, event, and scope are required"


def test_not_an_object() -> None:
    assert problems(["event"]) == {"hook": "a hook definition must be an object"}  # type: ignore[arg-type]


def test_the_engine_types_import_without_pydantic() -> None:
    """``hookgate claude-code`` starts once per event: the plain definition the engine runs
    on must not pull in pydantic (the schema is imported when something is validated)."""
    script = ("import sys, hookgate.definition, hookgate.engine\n"
              "assert 'pydantic' not in sys.modules, 'pydantic imported'\n"
              "hookgate.engine.Engine().add({'event': 'stop', 'scope': 'global',"
              " 'handler_type': 'http', 'config': {'url': 'https://example.com'}})\n"
              "assert 'pydantic' in sys.modules\n")
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                            timeout=60, check=False)
    assert result.returncode == 0, result.stderr
