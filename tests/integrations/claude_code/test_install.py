"""``hookgate claude-code install`` as users expect it: Claude Code's own user folder
($CLAUDE_CONFIG_DIR), the gateway transports, hooks that would run twice after
``import claude-code``, and an imported file that goes into a tenant's store as it is."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from hookgate.integrations.claude_code.settings_file import (
    CLAUDE_CODE_PATH,
    default_settings_path,
    gateway_hook,
    is_hookgate_hook,
)

HOOKGATE = str(Path(sys.executable).parent / "hookgate")


def cli(*args: str, cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([HOOKGATE, *args], capture_output=True, text=True, timeout=60,
                          cwd=cwd, env={**os.environ, **env}, check=False, stdin=subprocess.DEVNULL)


def test_user_settings_follow_claude_config_dir(tmp_path: Path) -> None:
    assert default_settings_path(user=True, environ={"CLAUDE_CONFIG_DIR": str(tmp_path)},
                                 home=Path("/nobody")) == tmp_path / "settings.json"
    assert default_settings_path(user=True, environ={}, home=tmp_path) == (
        tmp_path / ".claude" / "settings.json")
    moved = tmp_path / "claude-config"
    result = cli("claude-code", "install", "--user", cwd=tmp_path,
                 CLAUDE_CONFIG_DIR=str(moved), HOME=str(tmp_path / "home"))
    assert result.returncode == 0, result.stderr
    assert (moved / "settings.json").is_file()
    assert not (tmp_path / "home" / ".claude").exists()


@pytest.mark.parametrize("transport", ["curl", "http", "python"])
def test_gateway_transports_are_recognised_and_removed(tmp_path: Path, transport: str) -> None:
    settings = tmp_path / "settings.json"
    settings.write_text('{"model": "opus"}\n')
    result = cli("claude-code", "install", "--settings", str(settings), "--gateway",
                 "http://gw.example:8080", "--transport", transport, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    data = json.loads(settings.read_text())
    hook = data["hooks"]["PreToolUse"][0]["hooks"][0]
    assert is_hookgate_hook(hook)
    if transport == "http":
        assert hook["url"] == "http://gw.example:8080" + CLAUDE_CODE_PATH
        assert hook["allowedEnvVars"] == ["HOOKGATE_API_KEY"]
    elif transport == "curl":
        assert hook["command"].startswith("HOOKGATE_ANSWER=$(curl ")
        assert "exit 2" in hook["command"]  # fail closed where Claude Code can be stopped
        stop = data["hooks"]["Stop"][0]["hooks"][0]["command"]
        assert "exit 1" in stop  # exit 2 on Stop would make Claude keep going
        assert "$HOOKGATE_API_KEY" in hook["command"]  # read when the hook runs, never stored
    else:
        assert hook["command"].endswith("claude-code --gateway http://gw.example:8080")
    # Switching transport replaces the entry instead of adding a second one.
    cli("claude-code", "install", "--settings", str(settings), "--gateway",
        "http://gw.example:8080", "--transport", "python", cwd=tmp_path)
    assert len(json.loads(settings.read_text())["hooks"]["PreToolUse"][0]["hooks"]) == 1
    cli("claude-code", "uninstall", "--settings", str(settings), cwd=tmp_path)
    assert settings.read_text() == '{"model": "opus"}\n'


def test_curl_hook_keeps_the_key_out_of_the_command_line() -> None:
    command = gateway_hook("http://127.0.0.1:1", event="PreToolUse")["command"]
    first_line = command.splitlines()[0]
    assert "HOOKGATE_API_KEY" not in first_line  # the key goes in on fd 3, not in argv


SETTINGS_WITH_HOOKS = {
    "hooks": {
        "PreToolUse": [{"matcher": "Bash", "hooks": [
            {"type": "command", "command": "./scripts/guard.sh"},
            {"type": "command", "command": "./scripts/lint.sh", "args": ["--fast"]},
        ]}],
        "Stop": [{"hooks": [{"type": "command", "command": "./scripts/notify.sh"}]}],
    },
    "model": "opus",
}


def imported_project(tmp_path: Path) -> Path:
    claude = tmp_path / ".claude"
    claude.mkdir()
    settings = claude / "settings.json"
    settings.write_text(json.dumps(SETTINGS_WITH_HOOKS, indent=2) + "\n")
    result = cli("import", "claude-code", str(settings), "-o", str(claude / "hookgate.yaml"),
                 cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    return settings


def test_install_after_import_warns_about_hooks_running_twice(tmp_path: Path) -> None:
    settings = imported_project(tmp_path)
    result = cli("claude-code", "install", "--settings", str(settings), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "3 hook(s)" in result.stderr and "run twice" in result.stderr
    assert "./scripts/lint.sh --fast" in result.stderr
    assert "--move-imported" in result.stderr
    hooks = json.loads(settings.read_text())["hooks"]
    assert any(h["command"] == "./scripts/guard.sh" for h in hooks["PreToolUse"][0]["hooks"])


def test_install_can_move_the_imported_hooks_out(tmp_path: Path) -> None:
    settings = imported_project(tmp_path)
    result = cli("claude-code", "install", "--settings", str(settings), "--move-imported",
                 cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "removed 3 imported hook(s)" in result.stderr
    data = json.loads(settings.read_text())
    remaining = [h for groups in data["hooks"].values() for g in groups for h in g["hooks"]]
    assert remaining and all(is_hookgate_hook(h) for h in remaining)
    assert data["model"] == "opus"
    # Installing again finds nothing to move.
    again = cli("claude-code", "install", "--settings", str(settings), cwd=tmp_path)
    assert "run twice" not in again.stderr


def test_keep_imported_is_quiet(tmp_path: Path) -> None:
    settings = imported_project(tmp_path)
    result = cli("claude-code", "install", "--settings", str(settings), "--keep-imported",
                 cwd=tmp_path)
    assert "warning" not in result.stderr
    assert "./scripts/guard.sh" in settings.read_text()


def test_imported_file_goes_into_a_tenant_store_as_it_is(tmp_path: Path) -> None:
    imported_project(tmp_path)
    hooks_file = tmp_path / ".claude" / "hookgate.yaml"
    data_dir = tmp_path / "store"
    # A new store, on purpose: --init (a data dir that does not exist is refused otherwise).
    result = cli("hooks", "import", str(hooks_file), "--tenant", "team-a", "--data-dir",
                 str(data_dir), "--init", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "3 created" in result.stdout
    exported = cli("hooks", "export", "--tenant", "team-a", "--format", "json",
                   "--data-dir", str(data_dir), cwd=tmp_path)
    assert exported.returncode == 0, exported.stderr
    hooks = json.loads(exported.stdout)["hooks"]
    assert {h["scope"] for h in hooks} == {"tenant"}
    assert sorted(h["config"]["command"] for h in hooks) == [
        "./scripts/guard.sh", "./scripts/lint.sh --fast", "./scripts/notify.sh"]
    # Without --tenant the same file is a set of global hooks.
    result = cli("hooks", "import", str(hooks_file), "--data-dir", str(tmp_path / "global"),
                 "--init", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "created    global/" in result.stdout
