"""``command`` hooks with ``format: claude_code``: Claude Code hook scripts run unchanged."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from hookgate import Engine
from hookgate.outcome import Outcome


def claude_hook(event: str, command: str, **fields: Any) -> dict[str, Any]:
    return {"event": event, "handler_type": "command", "name": "cc",
            "config": {"command": command, "format": "claude_code", **fields.pop("config", {})},
            **fields}


def answering(answer: dict[str, Any]) -> str:
    """A script that prints ``answer`` as its JSON output."""
    return f"cat >/dev/null; echo '{json.dumps(answer)}'"


async def fire(event: str, command: str, payload: dict[str, Any], **fields: Any) -> Outcome:
    async with Engine([claude_hook(event, command, **fields)]) as engine:
        return await engine.fire(event, payload, wait=True)


TOOL = {"tool_name": "Bash", "tool_input": {"command": "ls"}, "tool_use_id": "toolu_1",
        "session_id": "sess-1", "transcript_path": "/tmp/t.jsonl", "cwd": "/work"}


# -- stdin in Claude Code's shape ---------------------------------------------------------


async def test_pre_tool_use_stdin(tmp_path: Path) -> None:
    seen = tmp_path / "in.json"
    await fire("pre_tool_use", f"cat > {seen}", {**TOOL, "tenant_id": "t-1", "depth": 1})
    document = json.loads(seen.read_text())
    assert document["hook_event_name"] == "PreToolUse"
    assert document["session_id"] == "sess-1"
    assert document["transcript_path"] == "/tmp/t.jsonl"
    assert document["cwd"] == "/work"
    assert document["permission_mode"] == "default"
    assert document["tool_name"] == "Bash"
    assert document["tool_input"] == {"command": "ls"}
    assert document["tool_use_id"] == "toolu_1"
    assert "tenant_id" not in document and "depth" not in document


async def test_post_tool_use_and_stop_stdin(tmp_path: Path) -> None:
    post, stop = tmp_path / "post.json", tmp_path / "stop.json"
    await fire("post_tool_use", f"cat > {post}", {**TOOL, "tool_response": {"stdout": "a"}})
    await fire("stop", f"cat > {stop}", {"session_id": "s", "last_message": "Done."})
    assert json.loads(post.read_text())["hook_event_name"] == "PostToolUse"
    assert json.loads(post.read_text())["tool_response"] == {"stdout": "a"}
    document = json.loads(stop.read_text())
    assert document["hook_event_name"] == "Stop"
    assert document["last_assistant_message"] == "Done."
    assert document["stop_hook_active"] is False


async def test_subagent_stop_stdin(tmp_path: Path) -> None:
    seen = tmp_path / "in.json"
    await fire("subagent_stop", f"cat > {seen}",
               {"target_agent": "reviewer", "output": "LGTM", "task": "review"})
    document = json.loads(seen.read_text())
    assert document["hook_event_name"] == "SubagentStop"
    assert document["agent_type"] == "reviewer"
    assert document["last_assistant_message"] == "LGTM"


async def test_claude_project_dir_is_set(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CLAUDE_PROJECT_DIR", raising=False)
    out = await fire("pre_tool_use", 'cat >/dev/null; echo "$CLAUDE_PROJECT_DIR"',
                     TOOL, config={"cwd": str(tmp_path)})
    assert out.trace[0].details["stdout"].strip() == str(tmp_path)


# -- exit codes ---------------------------------------------------------------------------


async def test_exit_2_blocks_with_stderr() -> None:
    out = await fire("pre_tool_use", "echo 'Use rg instead of grep' >&2; exit 2", TOOL)
    assert out.decision == "block"
    assert out.reason == "Use rg instead of grep"


async def test_exit_1_fails_closed_unlike_claude_code() -> None:
    out = await fire("pre_tool_use", "echo oops >&2; exit 1", TOOL)
    assert out.decision == "block"
    assert "exited with status 1: oops" in (out.trace[0].error or "")
    relaxed = await fire("pre_tool_use", "exit 1", TOOL, on_error="allow")
    assert relaxed.decision == "allow"


async def test_plain_stdout_is_context_for_prompts_and_session_start() -> None:
    prompt = await fire("user_prompt_submit", "echo 'Today is release day'", {"prompt": "hi"})
    assert prompt.additional_context == ["Today is release day"]
    tool = await fire("pre_tool_use", "echo 'just a log line'", TOOL)
    assert tool.additional_context == []
    assert tool.trace[0].details["stdout"] == "just a log line\n"


# -- JSON output --------------------------------------------------------------------------


async def test_permission_decision_deny() -> None:
    out = await fire("pre_tool_use", answering({"hookSpecificOutput": {
        "hookEventName": "PreToolUse", "permissionDecision": "deny",
        "permissionDecisionReason": "no network tools"}}), TOOL)
    assert out.decision == "block"
    assert out.reason == "no network tools"


async def test_permission_decision_allow_with_updated_input_and_context() -> None:
    out = await fire("pre_tool_use", answering({"hookSpecificOutput": {
        "hookEventName": "PreToolUse", "permissionDecision": "allow",
        "updatedInput": {"command": "ls -la"}, "additionalContext": "listing is safe"}}), TOOL)
    assert out.decision == "allow"
    assert out.updated_input == {"command": "ls -la"}
    assert out.additional_context == ["listing is safe"]


@pytest.mark.parametrize("asked", ["ask", "defer"])
async def test_ask_and_defer_block_without_an_approver(asked: str) -> None:
    out = await fire("pre_tool_use", answering({"hookSpecificOutput": {
        "hookEventName": "PreToolUse", "permissionDecision": asked}}), TOOL)
    assert out.decision == "block"
    assert f"asked for approval ({asked})" in (out.reason or "")
    assert out.trace[0].details["permission_decision"] == asked


async def test_continue_false_stops_with_stop_reason() -> None:
    out = await fire("pre_tool_use", answering({"continue": False, "stopReason": "budget hit",
                                                "systemMessage": "Stopping now"}), TOOL)
    assert out.decision == "block"
    assert out.continue_ is False
    assert out.reason == "budget hit"
    assert out.trace[0].details["system_message"] == "Stopping now"


async def test_user_prompt_submit_decision_block() -> None:
    out = await fire("user_prompt_submit",
                     answering({"decision": "block", "reason": "contains a secret"}),
                     {"prompt": "my key is sk-123"})
    assert out.decision == "block"
    assert out.reason == "contains a secret"


async def test_post_tool_use_updated_tool_output() -> None:
    out = await fire("post_tool_use", answering({"hookSpecificOutput": {
        "hookEventName": "PostToolUse", "updatedToolOutput": "[redacted]",
        "additionalContext": "output was redacted"}}), {**TOOL, "tool_response": "secret"})
    assert out.updated_input == "[redacted]"
    assert out.additional_context == ["output was redacted"]


async def test_post_tool_use_block_is_recorded() -> None:
    out = await fire("post_tool_use", answering({"decision": "block", "reason": "lint failed"}),
                     {**TOOL, "tool_response": "x"})
    assert out.decision == "allow"  # the tool already ran
    assert out.trace[0].decision == "block"
    assert out.trace[0].details["reason"] == "lint failed"


async def test_permission_request_decision() -> None:
    deny = await fire("approve_tool", answering({"hookSpecificOutput": {
        "hookEventName": "PermissionRequest",
        "decision": {"behavior": "deny", "message": "not today"}}}), TOOL)
    assert deny.decision == "block"
    assert deny.reason == "not today"
    allow = await fire("approve_tool", answering({"hookSpecificOutput": {
        "hookEventName": "PermissionRequest", "decision": {"behavior": "allow"}}}), TOOL)
    assert allow.decision == "allow"


@pytest.mark.parametrize(
    "answer",
    [
        {"hookSpecificOutput": {"permissionDecision": "maybe"}},
        {"decision": "deny"},
        {"continue": "no"},
        {"hookSpecificOutput": "deny"},
    ],
)
async def test_invalid_claude_answers_are_malformed(answer: dict[str, Any]) -> None:
    out = await fire("pre_tool_use", answering(answer), TOOL, on_error="allow")
    assert out.decision == "block"
    assert "malformed answer" in (out.trace[0].error or "")


async def test_exit_2_beats_json() -> None:
    out = await fire("pre_tool_use",
                     """echo '{"hookSpecificOutput": {"permissionDecision": "allow"}}'; exit 2""",
                     TOOL)
    assert out.decision == "block"
