"""The CLI's contract, as a new user meets it (real subprocesses): exit 1 for every usage
error (2 only ever means blocked), "did you mean" for event names, store commands that refuse
a data directory that does not exist, a top-level help that explains the two families of
commands, and an importer that says what it changed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def hookgate(
    *args: str, stdin: str | None = None, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "hookgate", *args],
        input=stdin,
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=60,
        env={**os.environ, **(env or {})},
    )


@pytest.fixture()
def hooks_file(tmp_path: Path) -> Path:
    path = tmp_path / "hooks.yaml"
    path.write_text(
        "hooks:\n"
        "  - name: no-rm\n"
        "    event: pre_tool_use\n"
        "    handler_type: callable\n"
        "    matcher: '^exec$'\n"
        "    config: {callable: 'tests.fixtures.sample_hooks:block_rm'}\n"
    )
    return path


@pytest.mark.parametrize(
    "args",
    [
        ("fire", "pre_tool_use"),  # --config missing
        ("fire", "pre_tol_use", "-c", "HOOKS"),  # unknown event
        ("fire", "pre_tool_use", "-c", "HOOKS", "-i", "{not json"),
        ("fire", "pre_tool_use", "-c", "HOOKS", "--edition", "gold"),
        ("no-such-command",),
        ("--no-such-option",),
        ("keys", "create", "--role", "superuser"),
        ("db", "prune", "--days", "soon"),
        ("claude-code", "install", "--timeout", "1"),
    ],
    ids=lambda a: " ".join(a),
)
def test_usage_errors_exit_1(hooks_file: Path, args: tuple[str, ...]) -> None:
    result = hookgate(*(str(hooks_file) if a == "HOOKS" else a for a in args))
    assert result.returncode == 1, (result.returncode, result.stderr)
    assert "Error" in result.stderr or "error" in result.stderr


def test_2_still_means_blocked(hooks_file: Path) -> None:
    blocked = hookgate("fire", "pre_tool_use", "-c", str(hooks_file), "-i",
                       '{"tool_name": "exec", "tool_input": {"cmd": "rm -rf /"}}')
    assert blocked.returncode == 2 and json.loads(blocked.stdout)["decision"] == "block"


@pytest.mark.parametrize("bridge", ["claude-code", "codex", "gemini"])
def test_an_agent_bridge_blocks_on_a_usage_error(bridge: str) -> None:
    """Run as an agent's hook, a usage error must stop the tool (exit 2), not let it go; its
    sub-commands and the importers are ordinary commands (exit 1)."""
    result = hookgate(bridge, "--no-such-option", stdin="{}")
    assert result.returncode == 2
    assert hookgate(bridge, "install", "--no-such-option").returncode == 1
    assert hookgate("import", "codex", "--no-such-option").returncode == 1


def test_unknown_events_get_did_you_mean(hooks_file: Path) -> None:
    result = hookgate("fire", "PreToolUs", "-c", str(hooks_file))
    assert result.returncode == 1 and "did you mean 'pre_tool_use'" in result.stderr
    dotted = hookgate("fire", "pre-tool-use", "-c", str(hooks_file))
    assert "did you mean 'pre_tool_use'" in dotted.stderr


def test_store_commands_refuse_a_data_dir_that_does_not_exist(tmp_path: Path) -> None:
    typo = tmp_path / "tpyo"
    refused = hookgate("keys", "create", "--data-dir", str(typo))
    assert refused.returncode == 1 and "does not exist" in refused.stderr
    assert "--init" in refused.stderr and not typo.exists()
    from_env = hookgate("keys", "list", env={"HOOKGATE_DATA_DIR": str(typo)})
    assert from_env.returncode == 1 and not typo.exists()
    created = hookgate("keys", "create", "--data-dir", str(typo), "--init")
    assert created.returncode == 0, created.stderr
    assert created.stdout.strip().splitlines()[-1].startswith("hg-")
    listed = hookgate("keys", "list", "--data-dir", str(typo))
    assert listed.returncode == 0 and "default" in listed.stdout


def test_top_level_help_explains_the_two_families() -> None:
    result = hookgate("--help")
    assert result.returncode == 0
    text = result.stdout
    for needle in ("--data-dir", "--database-url", "--gateway", "HOOKGATE_API_KEY", "--init",
                   "2 blocked"):
        assert needle in text, needle


def test_import_claude_code_notes_each_value_it_changed(tmp_path: Path) -> None:
    settings = tmp_path / "settings.json"
    settings.write_text(json.dumps({"hooks": {"PreToolUse": [
        {"matcher": "Bash", "hooks": [{"type": "command", "command": "./check.sh"}]},
        {"matcher": "Write", "hooks": [{"type": "command", "command": "./w.sh", "timeout": 90}]},
    ]}}))
    result = hookgate("import", "claude-code", str(settings))
    assert result.returncode == 0, result.stderr
    assert "hooks.PreToolUse[0].hooks[0].timeout: not set" in result.stderr
    assert "60 s" in result.stderr and "10 s" in result.stderr
    assert "hooks.PreToolUse[1].hooks[0].timeout: 90 s capped" in result.stderr
