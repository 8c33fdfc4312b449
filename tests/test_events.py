import pytest

from hookgate.events import (
    CATALOGUE,
    UnknownEventError,
    canonical_event,
    get_event,
    normalize_payload,
)

GOCLAW = {
    "session_start": False,
    "user_prompt_submit": True,
    "pre_tool_use": True,
    "post_tool_use": False,
    "stop": False,
    "subagent_start": True,
    "subagent_stop": False,
}


@pytest.mark.parametrize(("name", "blocking"), sorted(GOCLAW.items()))
def test_goclaw_events_have_their_kind(name: str, blocking: bool) -> None:
    assert get_event(name).blocking is blocking


@pytest.mark.parametrize(
    ("alias", "canonical"),
    [
        ("PreToolUse", "pre_tool_use"),
        ("before_tool", "pre_tool_use"),
        ("before-tool-call", "pre_tool_use"),
        ("after_tool", "post_tool_use"),
        ("PostToolUse", "post_tool_use"),
        ("UserPromptSubmit", "user_prompt_submit"),
        ("SessionStart", "session_start"),
        ("SubagentStop", "subagent_stop"),
        ("delegation.completed", "subagent_stop"),
        ("PermissionRequest", "approve_tool"),
        ("before_llm", "before_llm"),
        ("tool-result-persist", "tool_result_persist"),
    ],
)
def test_aliases_resolve(alias: str, canonical: str) -> None:
    assert canonical_event(alias) == canonical


def test_unknown_event_is_a_clear_error() -> None:
    with pytest.raises(UnknownEventError) as info:
        get_event("pre_tool")
    assert "unknown event 'pre_tool'" in str(info.value)
    assert "pre_tool_use" in str(info.value)


def test_every_entry_is_complete() -> None:
    allowed = {"block", "updated_input", "context", "result", "abort"}
    for spec in CATALOGUE:
        assert spec.outcomes <= allowed, spec.name
        assert spec.default_timeout_ms > 0
        if "updated_input" in spec.outcomes:
            assert spec.input_field in spec.fields, spec.name
        if spec.match_field:
            assert spec.match_field in spec.fields, spec.name
        if not spec.blocking and not spec.blocks_when_awaited and not spec.blocking_names:
            assert "block" not in spec.outcomes, spec.name


def test_normalize_accepts_camel_and_pascal_case() -> None:
    payload = normalize_payload(
        {"toolName": "exec", "ToolInput": {"cmd": "ls"}, "SessionID": "s", "rawInput": "hi",
         "custom_field": 1}
    )
    assert payload == {"tool_name": "exec", "tool_input": {"cmd": "ls"}, "session_id": "s",
                       "prompt": "hi", "custom_field": 1}
