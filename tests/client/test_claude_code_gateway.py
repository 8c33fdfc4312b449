"""``hookgate claude-code --gateway URL``: Claude Code's hook answered by a shared gateway."""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.server.conftest import gateway_with_hooks, history_rows
from tests.server.gateway_process import HOOKGATE, REPO, GatewayProcess, gateway_env


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[GatewayProcess, str]]:
    with gateway_with_hooks(
        tmp_path_factory.mktemp("fleet"),
        "fleet",
        {
            "event": "pre_tool_use", "handler_type": "callable", "scope": "tenant",
            "tenant_id": "fleet", "name": "no rm", "matcher": "^Bash$",
            "if_expr": 'tool_input.command.startsWith("rm ")',
            "config": {"callable": "tests.server.hookfns:block"},
        },
    ) as served_and_key:
        yield served_and_key


def bridge(url: str, key: str | None, document: dict) -> subprocess.CompletedProcess[str]:
    env = gateway_env()
    env.pop("HOOKGATE_API_KEY", None)
    if key is not None:
        env["HOOKGATE_API_KEY"] = key
    return subprocess.run(
        [*HOOKGATE, "claude-code", "--gateway", url],
        input=json.dumps(document), capture_output=True, text=True, timeout=60, cwd=REPO,
        env=env,
    )


def pre_tool_use(command: str, session: str) -> dict:
    return {
        "session_id": session, "transcript_path": "/tmp/t.jsonl", "cwd": "/tmp",
        "hook_event_name": "PreToolUse", "tool_name": "Bash",
        "tool_input": {"command": command},
    }


def test_gateway_denies_and_allows(fleet: tuple[GatewayProcess, str]) -> None:
    served, key = fleet
    session = f"cc-{time.time_ns()}"
    denied = bridge(served.url, key, pre_tool_use("rm -rf /", session))
    assert denied.returncode == 0, denied.stderr
    specific = json.loads(denied.stdout)["hookSpecificOutput"]
    assert specific["permissionDecision"] == "deny"
    assert specific["permissionDecisionReason"] == "blocked by test hook on pre_tool_use"
    allowed = bridge(served.url, key, pre_tool_use("ls", session))
    assert allowed.returncode == 0 and allowed.stdout.strip() == ""
    # The fleet shares the gateway's audit log.
    assert [r["decision"] for r in history_rows(served, key, session)] == ["block"]


def test_unreachable_gateway_or_bad_key_fails_closed(
    fleet: tuple[GatewayProcess, str], tmp_path: Path
) -> None:
    served, _ = fleet
    for url, key, why in (
        ("http://127.0.0.1:9", "hg-x", "cannot connect"),
        (served.url, "hg-wrong", "UNAUTHORIZED"),
        (served.url, None, "HOOKGATE_API_KEY"),
    ):
        answer = bridge(url, key, pre_tool_use("ls", "s"))
        assert answer.returncode == 2, answer.stdout
        assert why in answer.stderr
    # Where Claude Code cannot be stopped, the failure is reported, not turned into a block.
    stop = bridge("http://127.0.0.1:9", "hg-x", {"session_id": "s", "hook_event_name": "Stop"})
    assert stop.returncode == 1 and "cannot connect" in stop.stderr
