from dataclasses import replace

from hookgate import Engine
from hookgate.builtins import builtin_definitions
from hookgate.builtins.pii_redactor import mask


def enabled_builtins() -> Engine:
    engine = Engine()
    for definition in builtin_definitions():
        engine.add(replace(definition, enabled=True))
    return engine


def test_mask_emails_and_phone_numbers_only() -> None:
    text = "mail ana@example.org or call +44 20 7946 0958; port 8080, year 2026"
    assert mask(text) == "mail [EMAIL] or call [PHONE]; port 8080, year 2026"


def test_prompt_and_tool_input_are_rewritten() -> None:
    engine = enabled_builtins()
    prompt = engine.fire_sync("user_prompt_submit", prompt="I am bob@corp.io")
    assert prompt.updated_input == "I am [EMAIL]"
    tool = engine.fire_sync("pre_tool_use", tool_name="exec",
                            tool_input={"cmd": "echo 555-123-4567", "cwd": "/tmp"})
    assert tool.updated_input == {"cmd": "echo [PHONE]", "cwd": "/tmp"}
    clean = engine.fire_sync("pre_tool_use", tool_name="exec", tool_input={"cmd": "ls"})
    assert clean.updated_input is None and clean.trace[0].decision == "abstain"
    engine.close()


def test_builtins_are_stable_global_and_disabled_by_default() -> None:
    first, second = builtin_definitions(), builtin_definitions()
    assert [d.id for d in first] == [d.id for d in second]
    assert all(d.source == "builtin" and d.scope == "global" and not d.enabled for d in first)
