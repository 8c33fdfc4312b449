"""The real Codex CLI (pinned, from npm into a cache folder by ``scripts/ensure-codex``),
driven offline: a ``CODEX_HOME`` of the test's own whose only model provider is a scripted
Responses API on loopback (:mod:`tests.support.responses_server`)."""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

from tests.conftest import require_service
from tests.support.responses_server import ScriptedResponses

__all__ = ["CODEX_VERSION", "CodexProject", "require_codex"]

CODEX_VERSION = os.environ.get("HOOKGATE_CODEX_VERSION", "0.171.0")
HOOKGATE = str(Path(os.environ.get("VIRTUAL_ENV", "")) / "bin" / "hookgate") \
    if os.environ.get("VIRTUAL_ENV") else "hookgate"


def codex_binary() -> Path | None:
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    binary = cache / "hookgate" / "codex" / CODEX_VERSION / "node_modules" / ".bin" / "codex"
    return binary if binary.exists() else None


def require_codex() -> Path:
    binary = codex_binary()
    require_service("the Codex CLI", binary is not None,
                    f"@openai/codex@{CODEX_VERSION} (scripts/ensure-codex installs it)")
    assert binary is not None
    return binary


@dataclass(slots=True)
class CodexRun:
    returncode: int
    stdout: str
    stderr: str


class CodexProject:
    """A project folder and a CODEX_HOME for one Codex session."""

    def __init__(self, root: Path, api: ScriptedResponses, binary: Path) -> None:
        self.dir = root / "project"
        self.home = root / "codex-home"
        self.api = api
        self.binary = binary
        self.dir.mkdir(parents=True)
        self.home.mkdir(parents=True)
        self.config = self.home / "config.toml"
        self.config.write_text(
            'model = "fake-model"\n'
            'model_provider = "fake"\n'
            "check_for_update_on_startup = false\n\n"
            "[model_providers.fake]\n"
            'name = "fake"\n'
            f'base_url = "{api.url}"\n'
            'wire_api = "responses"\n'
            'env_key = "FAKE_API_KEY"\n\n'
            "[analytics]\nenabled = false\n\n"
            "[features]\nplugins = false\n"
        )

    def env(self, **extra: str) -> dict[str, str]:
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(self.home.parent),
            "CODEX_HOME": str(self.home),
            "FAKE_API_KEY": "offline",
            "NO_PROXY": "127.0.0.1,localhost",
        }
        # A worktree run with PYTHONPATH at its own src has its hooks run that code.
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
                                cwd=self.dir, env={**os.environ, "CODEX_HOME": str(self.home)},
                                check=False)
        assert result.returncode == 0, result.stderr
        return result

    def run(self, prompt: str, *, timeout: float = 120, **env: str) -> CodexRun:
        args = [str(self.binary), "exec", "--skip-git-repo-check",
                "--dangerously-bypass-approvals-and-sandbox", prompt]
        done = subprocess.run(args, cwd=self.dir, env=self.env(**env), capture_output=True,
                              text=True, timeout=timeout, check=False,
                              stdin=subprocess.DEVNULL)
        return CodexRun(done.returncode, done.stdout, done.stderr)

    def exists(self, name: str) -> bool:
        return (self.dir / name).exists()
