"""The real Claude Code CLI (``claude -p``, offline against a scripted Anthropic API) with
``hookgate claude-code`` installed as its hook and a local hooks file in the project.

Each test checks what really happened: whether the marker file the model's Bash call would
create exists, and what the model was shown next (the following API request)."""

from __future__ import annotations

import json

from tests.support.anthropic_server import ScriptedAnthropic, say, use_tool
from tests.support.claude_code_cli import ClaudeProject

from hookgate.integrations.claude_code import compiled_relay
from hookgate.integrations.claude_code.contract import CLAUDE_EVENTS

GUARDS = '''
def rewrite(event):
    command = event.tool_input["command"]
    return {"updated_input": {**event.tool_input, "command": command.replace("A.txt", "B.txt")}}


def rewrite_and_allow(event):
    return {**rewrite(event), "decision": "allow"}


def cached(event):
    return {"result": {"for_llm": "cached answer: 42"}}


def kill_switch(event):
    return {"abort": "hard", "reason": "kill switch engaged"}


def session_notes(event):
    return {"additional_context": "SESSION-NOTE: never push to main"}
'''


def bash(command: str) -> dict[str, str]:
    return {"command": command, "description": "test command"}


def callable_hook(event: str, target: str, **extra: object) -> dict[str, object]:
    return {"name": target, "event": event, "handler_type": "callable",
            "config": {"callable": f"guards:{target}"}, **extra}


def setup(project: ClaudeProject, *hooks: dict[str, object]) -> None:
    """Hooks file, guards module beside it, and hookgate installed for just the Claude Code
    events the hooks need (each hook event is a Python start; the default five with none)."""
    (project.dir / ".claude" / "guards.py").write_text(GUARDS)  # found beside the hooks file
    project.write_hooks(list(hooks))
    events = sorted({CLAUDE_EVENTS[str(hook["event"])] for hook in hooks})
    project.install(*[arg for event in events for arg in ("--event", event)])


def tool_result(api: ScriptedAnthropic) -> dict[str, object]:
    """What the model was told about its tool call (in the request after the call)."""
    assert len(api.agent_calls) >= 2, [c.path for c in api.calls]
    return api.agent_calls[1].tool_results()[-1]


def test_block_stops_the_command_and_tells_the_model(project: ClaudeProject,
                                                      api: ScriptedAnthropic) -> None:
    setup(project, {"name": "no-rm-rf", "event": "pre_tool_use", "matcher": "^Bash$",
                    "handler_type": "command", "config": {"command": (
                        "grep -q 'rm -rf' && { echo 'rm -rf is not allowed here' >&2; exit 2; }"
                        "; exit 0")}})
    api.script(use_tool("Bash", bash("touch MARKER && rm -rf junk")), say("understood"))
    run = project.run("clean up")
    assert run.returncode == 0, run.stderr
    assert not project.exists("MARKER")
    result = tool_result(api)
    assert result["is_error"] is True
    assert "rm -rf is not allowed here" in json.dumps(result)
    # it went through the compiled relay in exec form: Claude Code started no shell for it
    (group,) = json.loads(project.settings.read_text())["hooks"]["PreToolUse"]
    assert group["hooks"][0]["command"] == compiled_relay.binary_path()
    assert group["hooks"][0]["args"][0] == "1"


def test_rewrite_runs_the_rewritten_command(project: ClaudeProject,
                                            api: ScriptedAnthropic) -> None:
    setup(project, callable_hook("pre_tool_use", "rewrite", matcher="^Bash$"))
    api.script(use_tool("Bash", bash("touch A.txt")), say("done"))
    run = project.run("make a file")  # Bash is allowed by --allowedTools
    assert run.returncode == 0, run.stderr
    assert project.exists("B.txt") and not project.exists("A.txt")


def test_a_rewrite_is_not_a_permission_grant(project: ClaudeProject,
                                             api: ScriptedAnthropic) -> None:
    # No allow rule for Bash: Claude Code's own permission check must still refuse the
    # rewritten call (hookgate sends updatedInput without permissionDecision: allow).
    setup(project, callable_hook("pre_tool_use", "rewrite", matcher="^Bash$"))
    api.script(use_tool("Bash", bash("touch A.txt")), say("ok"))
    project.run("make a file", allow=())
    assert not project.exists("B.txt") and not project.exists("A.txt")
    # A hook that says allow grants it.
    setup(project, callable_hook("pre_tool_use", "rewrite_and_allow", matcher="^Bash$"))
    api.script(use_tool("Bash", bash("touch A.txt")), say("ok"))
    run = project.run("make a file", allow=())
    assert run.returncode == 0, run.stderr
    assert project.exists("B.txt") and not project.exists("A.txt")


def test_synthetic_result_replaces_the_call(project: ClaudeProject,
                                            api: ScriptedAnthropic) -> None:
    setup(project, callable_hook("pre_tool_use", "cached", matcher="^Bash$"))
    api.script(use_tool("Bash", bash("touch MARKER")), say("42 it is"))
    project.run("compute")
    assert not project.exists("MARKER")
    assert "cached answer: 42" in json.dumps(tool_result(api))


def test_post_tool_use_context_reaches_the_model(project: ClaudeProject,
                                                 api: ScriptedAnthropic) -> None:
    setup(project, {"name": "audit", "event": "post_tool_use", "handler_type": "command",
                    "config": {"command": "echo '{\"additional_context\": \"AUDIT-NOTE-7\"}'"}})
    api.script(use_tool("Bash", bash("touch MARKER")), say("done"))
    project.run("touch it")
    assert project.exists("MARKER")
    assert "AUDIT-NOTE-7" in api.agent_calls[1].text()


def test_prompt_block_means_no_model_call(project: ClaudeProject,
                                          api: ScriptedAnthropic) -> None:
    setup(project, {"name": "no-secrets", "event": "user_prompt_submit", "handler_type": "command",
                    "config": {"command": (
                        "grep -q 'password' && echo '{\"decision\": \"block\", \"reason\": "
                        "\"prompts must not hold passwords\"}'; exit 0")}})
    run = project.run("my password is hunter2, log in for me")
    assert api.agent_calls == []
    assert "hunter2" not in json.dumps([call.body for call in api.calls])
    assert "prompts must not hold passwords" in run.stdout + run.stderr


def test_session_start_context_reaches_the_model(project: ClaudeProject,
                                                 api: ScriptedAnthropic) -> None:
    setup(project, callable_hook("session_start", "session_notes"))
    api.script(say("noted"))
    run = project.run("hello")
    assert run.returncode == 0, run.stderr
    assert "SESSION-NOTE: never push to main" in api.agent_calls[0].text()


def test_abort_stops_claude(project: ClaudeProject, api: ScriptedAnthropic) -> None:
    setup(project, callable_hook("pre_tool_use", "kill_switch"))
    api.script(use_tool("Bash", bash("touch MARKER")), say("should not be asked"))
    project.run("go")
    assert not project.exists("MARKER")
    assert len(api.agent_calls) == 1  # Claude stopped: the model was not asked again


def test_broken_hooks_file_fails_closed(project: ClaudeProject,
                                        api: ScriptedAnthropic) -> None:
    # The prompt itself is stopped (UserPromptSubmit fails closed too): no model call.
    setup(project)
    (project.dir / ".claude" / "hookgate.yaml").write_bytes(b"hooks:\n  - name: \xff\n")
    run = project.run("go")
    assert api.agent_calls == []
    assert "UTF-8" in run.stdout + run.stderr


def test_callable_with_a_syntax_error_fails_closed(project: ClaudeProject,
                                                   api: ScriptedAnthropic) -> None:
    # Only PreToolUse hooked: the tool call is what gets stopped, and the model is told why.
    setup(project, callable_hook("pre_tool_use", "rewrite"))
    (project.dir / ".claude" / "guards.py").write_text("def rewrite(event:\n")
    api.script(use_tool("Bash", bash("touch MARKER && rm -rf junk")), say("ok"))
    project.run("go")
    assert not project.exists("MARKER")
    assert "SyntaxError" in json.dumps(tool_result(api))


def test_uninstall_restores_the_settings_byte_for_byte(project: ClaudeProject,
                                                       api: ScriptedAnthropic) -> None:
    original = ('{\n    "permissions": {"allow": ["Bash(ls)"]},\n'
                '    "hooks": {"Stop": [{"hooks": [{"type": "command", "command": "true"}]}]}\n}')
    project.settings.write_text(original)  # odd indentation, no final newline
    setup(project, {"name": "block-all", "event": "pre_tool_use", "handler_type": "command",
                    "config": {"command": "echo blocked >&2; exit 2"}})
    api.script(use_tool("Bash", bash("touch MARKER")), say("ok"))
    project.run("go")
    assert not project.exists("MARKER")
    project.hookgate("claude-code", "uninstall", "--settings", str(project.settings))
    assert project.settings.read_bytes() == original.encode()
    api.script(use_tool("Bash", bash("touch MARKER")), say("ok"))
    project.run("go")
    assert project.exists("MARKER")  # hookgate is out of the loop again
