"""The adapter examples in examples/adapters/ run and do what they say: with the same
examples/hooks.yaml, the destructive command is refused and ``ls`` runs."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from tests.adapters.support import require_package
from tests.support.anthropic_server import Reply, ScriptedAnthropic

ROOT = Path(__file__).resolve().parents[2]
BLOCKED = "model read: Blocked by hookgate: dangerous shell command: 'rm -rf /'"


def _run(module: str, env: dict[str, str] | None = None) -> list[str]:
    result = subprocess.run(
        [sys.executable, "-m", f"examples.adapters.{module}"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, **(env or {})},
    )
    assert result.returncode == 0, result.stderr
    return result.stdout.splitlines()


@pytest.mark.parametrize(
    ("module", "package", "extra"),
    [
        ("langchain_agent", "langchain", "langchain"),
        ("openai_agents_agent", "agents", "openai-agents"),
        ("pydantic_ai_agent", "pydantic_ai", "pydantic-ai"),
        ("adk_agent", "google.adk", "adk"),
        ("smolagents_agent", "smolagents", "smolagents"),
    ],
)
def test_framework_example(module: str, package: str, extra: str) -> None:
    require_package(package, extra)
    lines = _run(module)
    assert BLOCKED in lines
    assert "tool ran: ls" in lines
    assert "tool ran: rm -rf / --no-preserve-root" not in lines
    assert "model read: ran ls" in lines
    assert lines[-1] == "answer: done"


def test_claude_agent_sdk_example(tmp_path: Path) -> None:
    require_package("claude_agent_sdk", "claude-agent-sdk")
    home = tmp_path / "home"
    (home / ".claude").mkdir(parents=True)
    with ScriptedAnthropic(
        Reply(tool="Bash", tool_input={"command": "rm -rf / --no-preserve-root"}),
        Reply(tool="Bash", tool_input={"command": "echo listed"}),
        Reply(text="done"),
    ) as api:
        lines = _run(
            "claude_agent_sdk_agent",
            {
                "ANTHROPIC_BASE_URL": api.url,
                "ANTHROPIC_API_KEY": "sk-ant-offline",
                "HOME": str(home),
                "CLAUDE_CONFIG_DIR": str(home / ".claude"),
                "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
                "NO_PROXY": "127.0.0.1,localhost",
            },
        )
    assert any("dangerous shell command: 'rm -rf /'" in line for line in lines)
    assert "model read: listed" in lines
    assert lines[-1] == "answer: done"
