"""Claude Code settings as a hooks file, and ``hookgate import claude-code``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from hookgate import Engine
from hookgate.cli import main
from hookgate.config import ConfigError, load_hooks, parse_hooks
from hookgate.integrations.claude_code.settings_format import convert_settings, translate_matcher

DENY_BASH = ("""cat >/dev/null; echo '{"hookSpecificOutput": {"hookEventName": "PreToolUse", """
             """"permissionDecision": "deny", "permissionDecisionReason": "no shell"}}'""")


def settings(**hooks: Any) -> dict[str, Any]:
    return {"permissions": {"allow": []}, "hooks": hooks}


def command(cmd: str, **fields: Any) -> dict[str, Any]:
    return {"type": "command", "command": cmd, **fields}


@pytest.mark.parametrize(
    ("matcher", "expected"),
    [
        (None, None),
        ("", None),
        ("*", None),
        ("Bash", "^(?:Bash)$"),
        ("Edit|Write", "^(?:Edit|Write)$"),
        ("mcp__github__.*", "mcp__github__.*"),
        ("Notebook.*", "Notebook.*"),
    ],
)
def test_matcher_translation(matcher: str | None, expected: str | None) -> None:
    assert translate_matcher(matcher) == expected


def test_hooks_become_claude_code_format_command_hooks() -> None:
    document = settings(
        PreToolUse=[{"matcher": "Bash", "hooks": [command("./guard.sh", timeout=5)]},
                    {"matcher": "Edit|Write", "hooks": [command("./fmt.sh", args=["--fix", "a b"],
                                                                onFailure="continue")]}],
        Stop=[{"hooks": [command("./notify.sh")]}],
    )
    hooks = parse_hooks(document)
    assert [h.event for h in hooks] == ["pre_tool_use", "pre_tool_use", "stop"]
    guard, fmt, notify = hooks
    assert guard.config == {"command": "./guard.sh", "format": "claude_code"}
    assert guard.matcher == "^(?:Bash)$"
    assert guard.timeout_ms == 5000
    assert (guard.on_error, guard.on_timeout) == ("block", "block")
    assert fmt.config["command"] == "./fmt.sh --fix 'a b'"
    assert (fmt.on_error, fmt.on_timeout) == ("allow", "allow")
    assert notify.timeout_ms == 10000  # Claude Code's 600 s default, capped
    assert notify.matcher is None


def test_long_timeouts_are_capped_with_a_note() -> None:
    conversion = convert_settings(settings(Stop=[{"hooks": [command("x", timeout=120)]}]))
    assert conversion.hooks[0]["timeout_ms"] == 10000
    assert any("capped" in note for note in conversion.notes)


def test_if_rules_async_and_the_bridge_itself() -> None:
    conversion = convert_settings(settings(PreToolUse=[{"matcher": "Bash", "hooks": [
        command("./git-guard.sh", **{"if": "Bash(git *)"}),
        command("./bg.sh", **{"async": True}),
        command("/venv/bin/hookgate claude-code --config /x.yaml"),
    ]}]))
    assert [h["config"]["command"] for h in conversion.hooks] == ["./git-guard.sh", "./bg.sh"]
    notes = " ".join(conversion.notes)
    assert "Bash(git *)" in notes and "async" in notes and "runs hookgate itself" in notes
    assert conversion.problems == []


@pytest.mark.parametrize(
    ("document", "message"),
    [
        (settings(PreToolUse=[{"hooks": [{"type": "http", "url": "http://x"}]}]),
         "'http' hooks are not imported"),
        (settings(PreToolUse=[{"hooks": [{"type": "prompt", "prompt": "ok?"}]}]),
         "'prompt' hooks are not imported"),
        # (TaskCreated was such an event until issue 28 mapped all 33 of 2.1.330)
        (settings(SomeFutureEvent=[{"hooks": [command("x")]}]), "hookgate has no event"),
        (settings(PreToolUse=[{"hooks": [command("x", shell="powershell")]}]), "powershell"),
        (settings(PreToolUse=[{"matcher": "(a", "hooks": [command("x")]}]), "matcher"),
        (settings(PreToolUse=[{"hooks": "x"}]), "must be an object with a 'hooks' list"),
    ],
)
def test_what_cannot_be_loaded_is_named(document: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_hooks(document)
    assert any(message in problem for problem in caught.value.problems), caught.value.problems


def test_disable_all_hooks() -> None:
    document = {**settings(Stop=[{"hooks": [command("x")]}]), "disableAllHooks": True}
    assert [h.enabled for h in parse_hooks(document)] == [False]


async def test_a_settings_file_runs_its_hooks(tmp_path: Path) -> None:
    path = tmp_path / "settings.json"
    path.write_text(json.dumps(settings(PreToolUse=[{"matcher": "Bash",
                                                     "hooks": [command(DENY_BASH)]}])))
    async with Engine() as engine:
        engine.load(path)
        bash = await engine.fire("PreToolUse", tool_name="Bash", tool_input={"command": "ls"})
        bash_output = await engine.fire("PreToolUse", tool_name="BashOutput", tool_input={})
    assert bash.decision == "block" and bash.reason == "no shell"
    assert bash_output.decision == "allow"  # an exact-name matcher, not a substring


def test_import_prints_a_hooks_file_that_loads(tmp_path: Path) -> None:
    source = tmp_path / "settings.json"
    source.write_text(json.dumps(settings(
        PreToolUse=[{"matcher": "Bash", "hooks": [command(DENY_BASH, timeout=3)]},
                    {"hooks": [{"type": "mcp_tool", "server": "s", "tool": "t"}]}],
        SessionStart=[{"matcher": "startup", "hooks": [command("cat README.md")]}],
    )))
    result = CliRunner().invoke(main, ["import", "claude-code", str(source)])
    assert result.exit_code == 0, result.output
    assert "not imported: hooks.PreToolUse[1].hooks[0]: 'mcp_tool'" in result.stderr
    document = yaml.safe_load(result.stdout)
    assert [h["event"] for h in document["hooks"]] == ["pre_tool_use", "session_start"]
    assert document["hooks"][0]["timeout_ms"] == 3000
    assert document["hooks"][0]["config"]["format"] == "claude_code"
    assert document["hooks"][1]["matcher"] == "^(?:startup)$"
    output = tmp_path / "hooks.yaml"
    output.write_text(result.stdout)
    assert [h.event for h in load_hooks(output)] == ["pre_tool_use", "session_start"]
    checked = CliRunner().invoke(main, ["check", str(output)])
    assert checked.exit_code == 0, checked.output


def test_import_writes_json_and_refuses_other_files(tmp_path: Path) -> None:
    source = tmp_path / "settings.json"
    source.write_text(json.dumps(settings(Stop=[{"hooks": [command("./n.sh")]}])))
    target = tmp_path / "hooks.json"
    written = CliRunner().invoke(main, ["import", "claude-code", str(source), "-o", str(target)])
    assert written.exit_code == 0, written.output
    assert json.loads(target.read_text())["hooks"][0]["config"]["command"] == "./n.sh"
    other = tmp_path / "other.json"
    other.write_text('{"hooks": []}')
    refused = CliRunner().invoke(main, ["import", "claude-code", str(other)])
    assert refused.exit_code == 1
    assert "no Claude Code hooks section" in refused.output
