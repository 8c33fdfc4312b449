import pytest

from hookgate.definition import DefinitionError, validate_definition


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
