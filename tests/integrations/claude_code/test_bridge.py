"""The Claude Code bridge: Claude Code's hook input in, Claude Code's JSON and exit code out.

In-process tests drive the seam (:func:`answer_claude_code`) with an engine; end-to-end tests
run ``hookgate claude-code`` as a real process, the way Claude Code runs it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from hookgate import Engine
from hookgate.hook_event import HookEvent
from hookgate.integrations.claude_code.contract import (
    ClaudeAnswer,
    answer_claude_code,
    default_config_path,
    engine_evaluator,
    hookgate_input,
    run_bridge,
)

HOOKGATE = str(Path(sys.executable).parent / "hookgate")
BASE = {"session_id": "sess-1", "transcript_path": "/tmp/t.jsonl", "cwd": "/tmp",
        "permission_mode": "default"}


def cc(event: str, **fields: Any) -> dict[str, Any]:
    return {**BASE, "hook_event_name": event, **fields}


async def answer(engine: Engine, data: dict[str, Any]) -> ClaudeAnswer:
    return await answer_claude_code(data, engine_evaluator(engine))


def test_input_mapping() -> None:
    spec, payload = hookgate_input(cc("Stop", last_assistant_message="bye", agent_id="a-1",
                                      stop_hook_active=True))
    assert spec.name == "stop"
    assert payload["last_message"] == "bye"
    assert payload["claude_agent_id"] == "a-1"  # never hookgate's agent scope
    assert "agent_id" not in payload
    spec, payload = hookgate_input(cc("SubagentStop", agent_type="reviewer",
                                      last_assistant_message="ok"))
    assert spec.name == "subagent_stop"
    assert payload["target_agent"] == "reviewer" and payload["output"] == "ok"


# -- PreToolUse ---------------------------------------------------------------------------


async def test_pre_tool_use_block_is_a_deny() -> None:
    async with Engine() as engine:

        @engine.hook("pre_tool_use", matcher="^Bash$")
        def guard(event: HookEvent) -> dict[str, Any] | None:
            if "rm -rf" in event.tool_input["command"]:
                return {"decision": "block", "reason": "destructive command"}
            return None

        blocked = await answer(engine, cc("PreToolUse", tool_name="Bash",
                                          tool_input={"command": "rm -rf /"}))
        allowed = await answer(engine, cc("PreToolUse", tool_name="Bash",
                                          tool_input={"command": "ls"}))
    assert blocked.exit_code == 0
    assert blocked.stdout == {"hookSpecificOutput": {
        "hookEventName": "PreToolUse", "permissionDecision": "deny",
        "permissionDecisionReason": "destructive command"}}
    # an allow without changes leaves Claude Code's own permission flow alone
    assert allowed.exit_code == 0 and allowed.stdout is None


async def test_pre_tool_use_rewrite_and_context() -> None:
    async with Engine() as engine:

        @engine.hook("pre_tool_use")
        def rewrite(event: HookEvent) -> dict[str, Any]:
            return {"updated_input": {"command": "ls -la"}, "additional_context": "listed"}

        result = await answer(engine, cc("PreToolUse", tool_name="Bash",
                                         tool_input={"command": "ls"}))
    specific = result.stdout["hookSpecificOutput"]  # type: ignore[index]
    # A rewrite is not a permission grant: Claude Code's own permission checks still run.
    assert "permissionDecision" not in specific
    assert specific["updatedInput"] == {"command": "ls -la"}
    assert specific["additionalContext"] == "listed"


async def test_rewrite_is_allowed_only_when_a_hook_said_allow() -> None:
    async with Engine() as engine:
        engine.hook("pre_tool_use", name="redact", priority=10)(
            lambda e: {"updated_input": {"command": "echo [redacted]"}})
        engine.hook("pre_tool_use", name="policy", matcher="^Bash$")(
            lambda e: {"decision": "allow", "reason": "Bash is fine here"})
        bash = await answer(engine, cc("PreToolUse", tool_name="Bash",
                                       tool_input={"command": "echo secret"}))
        write = await answer(engine, cc("PreToolUse", tool_name="Write",
                                        tool_input={"command": "echo secret"}))
    assert bash.stdout == {"hookSpecificOutput": {
        "hookEventName": "PreToolUse", "updatedInput": {"command": "echo [redacted]"},
        "permissionDecision": "allow", "permissionDecisionReason": "allowed by hookgate"}}
    assert write.stdout == {"hookSpecificOutput": {
        "hookEventName": "PreToolUse", "updatedInput": {"command": "echo [redacted]"}}}


async def test_a_rewrite_grants_no_permission_request() -> None:
    async with Engine() as engine:
        engine.hook("approve_tool")(lambda e: {"additional_context": "seen"})
        result = await answer(engine, cc("PermissionRequest", tool_name="Write", tool_input={}))
    assert result.stdout is None


async def test_pre_tool_use_synthetic_result_denies_with_the_result() -> None:
    async with Engine() as engine:

        @engine.hook("pre_tool_use")
        def cached(event: HookEvent) -> dict[str, Any]:
            return {"result": {"for_llm": "cached: 42"}}

        result = await answer(engine, cc("PreToolUse", tool_name="Calc", tool_input={}))
    specific = result.stdout["hookSpecificOutput"]  # type: ignore[index]
    assert specific["permissionDecision"] == "deny"
    assert specific["permissionDecisionReason"] == "cached: 42"


async def test_ask_from_a_claude_code_hook_goes_back_as_ask() -> None:
    script = ("""cat >/dev/null; echo '{"hookSpecificOutput": {"permissionDecision": "ask", """
              """"permissionDecisionReason": "confirm push"}}'""")
    hook = {"event": "pre_tool_use", "handler_type": "command",
            "config": {"command": script, "format": "claude_code"}}
    async with Engine([hook]) as engine:
        result = await answer(engine, cc("PreToolUse", tool_name="Bash",
                                         tool_input={"command": "git push"}))
    assert result.stdout["hookSpecificOutput"]["permissionDecision"] == "ask"  # type: ignore[index]


async def test_abort_stops_claude() -> None:
    async with Engine() as engine:
        engine.hook("pre_tool_use")(lambda e: {"abort": "hard", "reason": "kill switch"})
        result = await answer(engine, cc("PreToolUse", tool_name="Bash", tool_input={}))
    assert result.stdout is not None
    assert result.stdout["continue"] is False
    assert result.stdout["stopReason"] == "kill switch"


# -- other events -------------------------------------------------------------------------


async def test_post_tool_use_block_context_and_output_rewrite() -> None:
    async with Engine() as engine:
        engine.hook("post_tool_use", name="audit")(lambda e: {
            "decision": "block", "reason": "lint failed: 3 errors",
            "additional_context": "run the linter", "updated_input": "[redacted]"})
        result = await answer(engine, cc("PostToolUse", tool_name="Edit", tool_input={},
                                         tool_response="secret"))
    assert result.stdout == {
        "decision": "block",
        "reason": "lint failed: 3 errors",
        "hookSpecificOutput": {"hookEventName": "PostToolUse", "updatedToolOutput": "[redacted]",
                               "additionalContext": "run the linter"},
    }


async def test_user_prompt_submit_block_context_and_rewrite() -> None:
    async with Engine() as engine:

        @engine.hook("user_prompt_submit")
        def check(event: HookEvent) -> dict[str, Any]:
            if "password" in event.prompt:
                return {"decision": "block", "reason": "looks like a credential"}
            if "token" in event.prompt:
                return {"updated_input": event.prompt.replace("token", "[scrubbed]")}
            return {"additional_context": "on-call today"}

        blocked = await answer(engine, cc("UserPromptSubmit", prompt="my password is x"))
        context = await answer(engine, cc("UserPromptSubmit", prompt="hello"))
        rewritten = await answer(engine, cc("UserPromptSubmit", prompt="use token abc"))
    assert blocked.stdout == {"decision": "block", "reason": "looks like a credential"}
    assert context.stdout == {"hookSpecificOutput": {"hookEventName": "UserPromptSubmit",
                                                     "additionalContext": "on-call today"}}
    assert rewritten.stdout is not None and rewritten.stdout["decision"] == "block"
    assert "use [scrubbed] abc" in rewritten.stdout["reason"]


async def test_stop_block_continues_the_turn() -> None:
    async with Engine() as engine:
        engine.hook("stop")(lambda e: {"decision": "block", "reason": "tests are failing"})
        result = await answer(engine, cc("Stop", stop_hook_active=False,
                                         last_assistant_message="done"))
    assert result.stdout == {"decision": "block", "reason": "tests are failing"}


async def test_session_start_context() -> None:
    async with Engine() as engine:
        engine.hook("session_start", matcher="^startup$")(
            lambda e: {"additional_context": "Never push to main."})
        result = await answer(engine, cc("SessionStart", source="startup", model="claude"))
    assert result.stdout == {"hookSpecificOutput": {"hookEventName": "SessionStart",
                                                    "additionalContext": "Never push to main."}}


async def test_permission_request() -> None:
    async with Engine() as engine:
        engine.hook("approve_tool", matcher="^Bash$")(
            lambda e: {"decision": "block", "reason": "needs review"})
        engine.hook("approve_tool", matcher="^Read$")(lambda e: {"decision": "allow"})
        denied = await answer(engine, cc("PermissionRequest", tool_name="Bash", tool_input={}))
        granted = await answer(engine, cc("PermissionRequest", tool_name="Read", tool_input={}))
        untouched = await answer(engine, cc("PermissionRequest", tool_name="Grep", tool_input={}))
    assert denied.stdout["hookSpecificOutput"]["decision"] == {  # type: ignore[index]
        "behavior": "deny", "message": "needs review"}
    assert granted.stdout["hookSpecificOutput"]["decision"] == {  # type: ignore[index]
        "behavior": "allow"}
    assert untouched.stdout is None


async def test_unknown_claude_event_is_answered_with_nothing() -> None:
    async with Engine() as engine:
        result = await answer(engine, cc("WorktreeCreate"))
    assert (result.exit_code, result.stdout, result.stderr) == (0, None, "")


async def test_a_failing_evaluator_fails_closed_only_where_claude_code_can_block() -> None:
    async def broken(event: str, payload: dict[str, Any]) -> Any:
        raise ConnectionError("gateway unreachable")

    pre = await answer_claude_code(cc("PreToolUse", tool_name="Bash"), broken)
    stop = await answer_claude_code(cc("Stop"), broken)
    assert pre.exit_code == 2 and "gateway unreachable" in pre.stderr
    assert stop.exit_code == 1  # exit 2 on Stop would make Claude keep going


# -- config discovery and the real command ------------------------------------------------


def test_default_config_path(tmp_path: Path) -> None:
    project, home = tmp_path / "project", tmp_path / "home"
    (project / ".claude").mkdir(parents=True)
    (home / ".claude").mkdir(parents=True)
    (home / ".claude" / "hookgate.yaml").write_text("hooks: []\n")
    found = default_config_path({"cwd": str(project)}, {}, home)
    assert found == str(home / ".claude" / "hookgate.yaml")
    (project / ".claude" / "hookgate.json").write_text('{"hooks": []}')
    found = default_config_path({"cwd": "/elsewhere"}, {"CLAUDE_PROJECT_DIR": str(project)}, home)
    assert found == str(project / ".claude" / "hookgate.json")
    assert default_config_path({}, {"HOOKGATE_CLAUDE_CODE_CONFIG": "/x.yaml"}, home) == "/x.yaml"
    assert default_config_path({"cwd": "/nowhere"}, {}, tmp_path / "nobody") is None


async def test_no_hooks_file_means_nothing_to_enforce(tmp_path: Path) -> None:
    result = await run_bridge(json.dumps(cc("PreToolUse", tool_name="Bash", cwd=str(tmp_path))),
                              None, environ={}, home=tmp_path)
    assert (result.exit_code, result.stdout) == (0, None)


@pytest.fixture
def hooks_file(tmp_path: Path) -> Path:
    """A hooks file of command hooks, one per Claude Code event the bridge must answer."""
    path = tmp_path / "hookgate.yaml"
    hooks = [
        {"name": "no-rm", "event": "pre_tool_use", "handler_type": "command", "matcher": "^Bash$",
         "config": {"command": "grep -q 'rm -rf' && { echo 'rm -rf is blocked' >&2; exit 2; }; "
                               "exit 0"}},
        {"name": "audit", "event": "post_tool_use", "handler_type": "command",
         "config": {"command": """echo '{"additionalContext": "audited"}'"""}},
        {"name": "prompt", "event": "user_prompt_submit", "handler_type": "command",
         "config": {"command": """grep -q secret && echo '{"decision": "block", """
                               """"reason": "no secrets"}' || true"""}},
        {"name": "stop", "event": "stop", "handler_type": "command",
         "config": {"command": """echo '{"decision": "block", "reason": "run the tests"}'"""}},
        {"name": "start", "event": "session_start", "handler_type": "command",
         "config": {"command": """echo '{"additional_context": "repo: demo"}'"""}},
    ]
    path.write_text(yaml.safe_dump({"hooks": hooks}))
    return path


def run_cli(data: dict[str, Any], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([HOOKGATE, "claude-code", *args], input=json.dumps(data),
                          capture_output=True, text=True, timeout=30, check=False)


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (cc("PreToolUse", tool_name="Bash", tool_input={"command": "rm -rf /"}),
         {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny",
                                 "permissionDecisionReason": "rm -rf is blocked"}}),
        (cc("PostToolUse", tool_name="Bash", tool_input={}, tool_response="ok"),
         {"hookSpecificOutput": {"hookEventName": "PostToolUse",
                                 "additionalContext": "audited"}}),
        (cc("UserPromptSubmit", prompt="here is my secret"),
         {"decision": "block", "reason": "no secrets"}),
        (cc("Stop", stop_hook_active=False), {"decision": "block", "reason": "run the tests"}),
        (cc("SessionStart", source="startup"),
         {"hookSpecificOutput": {"hookEventName": "SessionStart",
                                 "additionalContext": "repo: demo"}}),
    ],
    ids=["PreToolUse", "PostToolUse", "UserPromptSubmit", "Stop", "SessionStart"],
)
@pytest.mark.usefixtures("bridge_path")
def test_hookgate_claude_code_command(hooks_file: Path, data: dict[str, Any],
                                      expected: dict[str, Any]) -> None:
    result = run_cli(data, "--config", str(hooks_file))
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == expected


@pytest.mark.usefixtures("bridge_path")
def test_allowed_tool_call_prints_nothing(hooks_file: Path) -> None:
    result = run_cli(cc("PreToolUse", tool_name="Bash", tool_input={"command": "ls"}),
                     "--config", str(hooks_file))
    assert (result.returncode, result.stdout) == (0, "")


@pytest.mark.usefixtures("bridge_path")
def test_invalid_hooks_file_blocks_tool_calls_but_not_stop(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("hooks:\n  - event: pre_tool_use\n")
    pre = run_cli(cc("PreToolUse", tool_name="Bash", tool_input={}), "--config", str(bad))
    assert pre.returncode == 2
    assert "hooks file" in pre.stderr and "invalid" in pre.stderr
    stop = run_cli(cc("Stop"), "--config", str(bad))
    assert stop.returncode == 1


@pytest.mark.usefixtures("bridge_path")
def test_garbage_stdin_fails_closed() -> None:
    # Which event it was cannot be told, so hookgate stops whatever it was.
    result = subprocess.run([HOOKGATE, "claude-code"], input="not json", capture_output=True,
                            text=True, timeout=30, check=False)
    assert result.returncode == 2
    assert "not Claude Code hook JSON" in result.stderr
