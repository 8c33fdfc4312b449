"""The real Claude Code CLI, driven offline: ``claude -p`` in a throw-away project and home,
talking to a scripted Anthropic API on loopback (:mod:`tests.support.anthropic_server`).

``scripts/ensure-claude-code`` installs the pinned CLI into a cache folder; tests call
:func:`require_claude` (skips locally without it, fails under CI=true).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from tests.conftest import require_service
from tests.support.anthropic_server import ScriptedAnthropic

__all__ = ["CLAUDE_CODE_VERSION", "ClaudeProject", "ClaudeRun", "claude_binary", "require_claude"]

CLAUDE_CODE_VERSION = "2.1.330"
HOOKGATE = str(Path(sys.executable).parent / "hookgate")


def claude_binary() -> Path | None:
    """The CLI ``scripts/ensure-claude-code`` installed (or ``$HOOKGATE_CLAUDE_CODE_BIN``)."""
    explicit = os.environ.get("HOOKGATE_CLAUDE_CODE_BIN")
    if explicit:
        return Path(explicit)
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    binary = (cache / "hookgate" / "claude-code" / CLAUDE_CODE_VERSION / "node_modules"
              / "@anthropic-ai" / "claude-code" / "bin" / "claude.exe")
    return binary if binary.is_file() and os.access(binary, os.X_OK) else None


def require_claude() -> Path:
    binary = claude_binary()
    require_service("claude-code", binary is not None,
                    "run scripts/ensure-claude-code (installs the pinned Claude Code CLI)")
    assert binary is not None
    return binary


@dataclass(slots=True)
class ClaudeRun:
    returncode: int
    stdout: str
    stderr: str

    @property
    def result(self) -> dict[str, Any]:
        """The ``--output-format json`` result object."""
        return json.loads(self.stdout) if self.stdout.strip().startswith("{") else {}


class ClaudeProject:
    """A project folder and a home folder for one Claude Code session."""

    def __init__(self, root: Path, api: ScriptedAnthropic, binary: Path) -> None:
        self.dir = root / "project"
        self.home = root / "home"
        self.config_dir = self.home / ".claude"
        self.api = api
        self.binary = binary
        (self.dir / ".claude").mkdir(parents=True)
        self.config_dir.mkdir(parents=True)
        self.settings = self.dir / ".claude" / "settings.json"

    def env(self, **extra: str) -> dict[str, str]:
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(self.home),
            "CLAUDE_CONFIG_DIR": str(self.config_dir),
            "ANTHROPIC_BASE_URL": self.api.url,
            "ANTHROPIC_API_KEY": "sk-ant-offline-test",
            # Nothing but the scripted API: no telemetry, updates, error reports, other calls.
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            "DISABLE_AUTOUPDATER": "1",
            "DISABLE_TELEMETRY": "1",
            "DISABLE_ERROR_REPORTING": "1",
            "DISABLE_BUG_COMMAND": "1",
            "CLAUDE_CODE_DISABLE_TERMINAL_TITLE": "1",
            "NO_PROXY": "127.0.0.1,localhost",
            # Every hook event through the warm process of the test session's socket folder
            # (an event it does not take fails), never the user's.
            "HOOKGATE_CLAUDE_CODE_WARM": "require",
        }
        # A checkout run with PYTHONPATH pointing at its own src (a git worktree beside an
        # editable install of another) must have its hooks run that same code.
        if "PYTHONPATH" in os.environ:
            env["PYTHONPATH"] = os.environ["PYTHONPATH"]
        warm_folder = os.environ.get("HOOKGATE_CLAUDE_CODE_WARM_DIR")
        if warm_folder:
            env["HOOKGATE_CLAUDE_CODE_WARM_DIR"] = warm_folder
        env.update(extra)
        return env

    def write_hooks(self, hooks: list[dict[str, Any]]) -> Path:
        path = self.dir / ".claude" / "hookgate.yaml"
        path.write_text(yaml.safe_dump({"hooks": hooks}, sort_keys=False))
        return path

    def hookgate(self, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
        result = subprocess.run([HOOKGATE, *args], capture_output=True, text=True, timeout=60,
                                cwd=self.dir, env={**os.environ, **env}, check=False)
        assert result.returncode == 0, result.stderr
        return result

    def install(self, *args: str) -> None:
        self.hookgate("claude-code", "install", "--settings", str(self.settings), *args)

    def run(self, prompt: str, *, allow: tuple[str, ...] = ("Bash",), timeout: float = 90,
            **env: str) -> ClaudeRun:
        args = [str(self.binary), "-p", prompt, "--output-format", "json"]
        if allow:
            args += ["--allowedTools", *allow]
        done = subprocess.run(args, cwd=self.dir, env=self.env(**env), capture_output=True,
                              text=True, timeout=timeout, check=False)
        return ClaudeRun(done.returncode, done.stdout, done.stderr)

    def exists(self, name: str) -> bool:
        return (self.dir / name).exists()
