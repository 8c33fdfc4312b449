"""The real Gemini CLI (pinned, from npm into a cache folder by ``scripts/ensure-gemini``),
driven offline: a HOME of the test's own whose settings pick API-key auth and no usage
statistics, and ``GOOGLE_GEMINI_BASE_URL`` at a scripted Gemini API on loopback."""

from __future__ import annotations

import json
import os
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.conftest import require_service
from tests.support.gemini_server import ScriptedGemini

__all__ = ["GEMINI_VERSION", "GeminiProject", "require_gemini"]

GEMINI_VERSION = os.environ.get("HOOKGATE_GEMINI_VERSION", "0.61.0")
HOOKGATE = str(Path(os.environ["VIRTUAL_ENV"]) / "bin" / "hookgate") \
    if os.environ.get("VIRTUAL_ENV") else "hookgate"


def gemini_binary() -> Path | None:
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    binary = cache / "hookgate" / "gemini" / GEMINI_VERSION / "node_modules" / ".bin" / "gemini"
    return binary if binary.exists() else None


def require_gemini() -> Path:
    binary = gemini_binary()
    require_service("the Gemini CLI", binary is not None,
                    f"@google/gemini-cli@{GEMINI_VERSION} (scripts/ensure-gemini installs it)")
    assert binary is not None
    return binary


@dataclass(slots=True)
class GeminiRun:
    returncode: int
    stdout: str
    stderr: str

    @property
    def result(self) -> dict[str, Any]:
        value = json.loads(self.stdout)
        assert isinstance(value, dict)
        return value


class GeminiProject:
    """A project folder and a HOME for one Gemini CLI session."""

    def __init__(self, root: Path, api: ScriptedGemini, binary: Path) -> None:
        self.dir = root / "project"
        self.home = root / "home"
        self.api = api
        self.binary = binary
        self.dir.mkdir(parents=True)
        (self.home / ".gemini").mkdir(parents=True)
        self.user_settings = self.home / ".gemini" / "settings.json"
        self.user_settings.write_text(json.dumps({
            "security": {"auth": {"selectedType": "gemini-api-key"}},
            "privacy": {"usageStatisticsEnabled": False},
            "telemetry": {"enabled": False},
            "general": {"enableAutoUpdate": False, "enableAutoUpdateNotification": False},
        }, indent=2) + "\n")

    def env(self, **extra: str) -> dict[str, str]:
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(self.home),
            "GEMINI_API_KEY": "offline",
            "GOOGLE_GEMINI_BASE_URL": self.api.base_url,
            "GEMINI_CLI_TRUST_WORKSPACE": "true",
            "NO_PROXY": "127.0.0.1,localhost",
            "NO_COLOR": "1",
        }
        for name in ("PYTHONPATH", "VIRTUAL_ENV", "HOOKGATE_CLAUDE_CODE_WARM_DIR"):
            if name in os.environ:
                env[name] = os.environ[name]
        # Every event through the warm process of the test session (one that it does not
        # take fails), as for Claude Code.
        env["HOOKGATE_CLAUDE_CODE_WARM"] = "require"
        env.update(extra)
        return env

    def hookgate(self, *args: str) -> subprocess.CompletedProcess[str]:
        result = subprocess.run([HOOKGATE, *args], capture_output=True, text=True, timeout=60,
                                cwd=self.dir, env={**os.environ, "HOME": str(self.home)},
                                check=False)
        assert result.returncode == 0, result.stderr
        return result

    def run(self, prompt: str, *, timeout: float = 120, **env: str) -> GeminiRun:
        args = [str(self.binary), "-p", prompt, "--yolo", "-m", "gemini-2.5-flash",
                "--output-format", "json"]
        done = subprocess.run(args, cwd=self.dir, env=self.env(**env), capture_output=True,
                              text=True, timeout=timeout, check=False,
                              stdin=subprocess.DEVNULL)
        return GeminiRun(done.returncode, done.stdout, done.stderr)

    def exists(self, name: str) -> bool:
        return (self.dir / name).exists()
