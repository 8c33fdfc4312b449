"""``POST /api/v1/claude-code/hook`` on a real gateway: Claude Code's hook input in, Claude
Code's hook output out, the same answers as ``hookgate claude-code`` with the same hooks in
a local file; failures stop the action with a 200 deny/block (so Claude Code's http hook
fails closed on them too); the key's tenant decides which hooks run, whatever the input
claims."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import httpx
import pytest
from tests.server.conftest import Keys
from tests.server.gateway_process import HOOKGATE, REPO, GatewayProcess, gateway_env

from hookgate.client import GatewayClient

PATH = "/api/v1/claude-code/hook"


HOOKS = [
    {"event": "pre_tool_use", "handler_type": "callable", "name": "cc no rm",
     "matcher": "^Bash$", "if_expr": 'tool_input.command.contains("rm -rf")',
     "config": {"callable": "tests.server.hookfns:block"}},
    {"event": "post_tool_use", "handler_type": "callable", "name": "cc audit",
     "matcher": "^Edit$", "config": {"callable": "tests.server.hookfns:allow"}},
    {"event": "pre_tool_use", "handler_type": "callable", "name": "cc broken",
     "matcher": "^Explode$", "config": {"callable": "tests.server.hookfns:fail"}},
]


@pytest.fixture(scope="module")
def hooked(gateway: GatewayProcess, keys: Keys) -> GatewayProcess:
    # The gateway fixture is this module's own: the hooks need no clean-up.
    with GatewayClient(gateway.url, keys.a_admin) as admin:
        for hook in HOOKS:
            admin.create_hook({**hook, "scope": "tenant"})
    return gateway


def post(served: GatewayProcess, key: str | None, body: Any) -> httpx.Response:
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    content = body if isinstance(body, bytes) else json.dumps(body).encode()
    return httpx.post(served.url + PATH, content=content, headers=headers, timeout=30)


def cc(event: str, **fields: Any) -> dict[str, Any]:
    return {"session_id": "cc-endpoint", "transcript_path": "", "cwd": "/tmp",
            "permission_mode": "default", "hook_event_name": event, **fields}


def local_bridge(tmp_path: Path, body: dict[str, Any]) -> dict[str, Any]:
    """The answer of ``hookgate claude-code`` with the same hooks in a local hooks file."""
    hooks_file = tmp_path / "hookgate.json"
    hooks_file.write_text(json.dumps({"hooks": HOOKS}))
    done = subprocess.run([*HOOKGATE, "claude-code", "--config", str(hooks_file)],
                          input=json.dumps(body), capture_output=True, text=True, timeout=60,
                          cwd=REPO, env=gateway_env(), check=False)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout) if done.stdout.strip() else {}


CASES = [
    cc("PreToolUse", tool_name="Bash", tool_input={"command": "rm -rf /"}),
    cc("PreToolUse", tool_name="Bash", tool_input={"command": "ls"}),
    cc("PostToolUse", tool_name="Edit", tool_input={}, tool_response="ok"),
    cc("UserPromptSubmit", prompt="hello"),
    cc("WorktreeCreate", name="x"),
]


@pytest.mark.parametrize("body", CASES, ids=[c["hook_event_name"] + str(i)
                                             for i, c in enumerate(CASES)])
def test_same_answers_as_the_local_bridge(hooked: GatewayProcess, keys: Keys, tmp_path: Path,
                                          body: dict[str, Any]) -> None:
    answer = post(hooked, keys.a_operator, body)
    assert answer.status_code == 200, answer.text
    assert answer.json() == local_bridge(tmp_path, body)


def test_block_answer(hooked: GatewayProcess, keys: Keys) -> None:
    answer = post(hooked, keys.a_operator, CASES[0]).json()
    assert answer == {"hookSpecificOutput": {
        "hookEventName": "PreToolUse", "permissionDecision": "deny",
        "permissionDecisionReason": "blocked by test hook on pre_tool_use"}}
    assert post(hooked, keys.a_operator, CASES[2]).json() == {"hookSpecificOutput": {
        "hookEventName": "PostToolUse", "additionalContext": "checked by test hook"}}


def test_keys(hooked: GatewayProcess, keys: Keys) -> None:
    assert post(hooked, None, CASES[0]).status_code == 401
    assert post(hooked, "hg-not-a-key", CASES[0]).status_code == 401
    # A viewer may not dispatch: the tool call is stopped, with the reason.
    viewer = post(hooked, keys.a_viewer, CASES[1])
    assert viewer.status_code == 200
    specific = viewer.json()["hookSpecificOutput"]
    assert specific["permissionDecision"] == "deny"
    assert "hookgate:" in specific["permissionDecisionReason"]


def test_another_tenant_does_not_run_these_hooks(hooked: GatewayProcess, keys: Keys) -> None:
    # Tenant B's key, even with an input that names tenant A, runs tenant B's hooks (none).
    body = {**CASES[0], "tenant_id": "tenant-a"}
    answer = post(hooked, keys.b_admin, body)
    assert answer.status_code == 200 and answer.json() == {}


def test_failures_stop_the_action(hooked: GatewayProcess, keys: Keys) -> None:
    # A hook that raises blocks (on_error), like the local bridge.
    crashed = post(hooked, keys.a_operator, cc("PreToolUse", tool_name="Explode", tool_input={}))
    assert crashed.json()["hookSpecificOutput"]["permissionDecision"] == "deny"
    # Input over the depth limit is refused before any hook, and still stops the call.
    deep: Any = "x"
    for _ in range(300):
        deep = [deep]
    refused = post(hooked, keys.a_operator,
                   cc("PreToolUse", tool_name="Bash", tool_input={"command": "ls", "x": deep}))
    assert refused.status_code == 200
    specific = refused.json()["hookSpecificOutput"]
    assert specific["permissionDecision"] == "deny" and "hookgate:" in specific[
        "permissionDecisionReason"]
    prompt = post(hooked, keys.a_operator, cc("UserPromptSubmit", prompt=deep))
    assert prompt.json()["decision"] == "block"
    # Where Claude Code cannot be stopped, an error status (curl turns it into exit 1).
    post_tool = post(hooked, keys.a_operator, cc("PostToolUse", tool_name="Edit",
                                                 tool_input={"x": deep}))
    assert post_tool.status_code == 502


@pytest.mark.parametrize("body", [b"not json", b"[1]", b'{"tool_name": "Bash"}'],
                         ids=["not-json", "not-an-object", "no-event"])
def test_bad_bodies_are_refused(hooked: GatewayProcess, keys: Keys, body: bytes) -> None:
    answer = post(hooked, keys.a_operator, body)
    assert answer.status_code == 400, answer.text  # curl: exit 2 on blocking events
