"""The real Gemini CLI (pinned, from npm into a cache folder by ``scripts/ensure-gemini``),
driven offline: a HOME of the test's own whose settings pick API-key auth and no usage
statistics, and ``GOOGLE_GEMINI_BASE_URL`` at a scripted Gemini API on loopback."""

from __future__ import annotations

import json
import os
from pathlib import Path

from tests.support.agent_project import HOOKGATE, AgentProject, pinned_cli
from tests.support.gemini_server import ScriptedGemini

__all__ = ["GEMINI_VERSION", "HOOKGATE", "GeminiProject", "require_gemini"]

GEMINI_VERSION = os.environ.get("HOOKGATE_GEMINI_VERSION", "0.61.0")


def require_gemini() -> Path:
    return pinned_cli("the Gemini CLI", "gemini", GEMINI_VERSION, "gemini",
                      "@google/gemini-cli")


class GeminiProject(AgentProject):
    """A project folder and a HOME for one Gemini CLI session."""

    def __init__(self, root: Path, api: ScriptedGemini, binary: Path) -> None:
        super().__init__(root, api, binary, "home")
        (self.home / ".gemini").mkdir()
        self.user_settings = self.home / ".gemini" / "settings.json"
        self.user_settings.write_text(json.dumps({
            "security": {"auth": {"selectedType": "gemini-api-key"}},
            "privacy": {"usageStatisticsEnabled": False},
            "telemetry": {"enabled": False},
            "general": {"enableAutoUpdate": False, "enableAutoUpdateNotification": False},
        }, indent=2) + "\n")

    def agent_env(self) -> dict[str, str]:
        return {"HOME": str(self.home), "GEMINI_API_KEY": "offline",
                "GOOGLE_GEMINI_BASE_URL": self.api.base_url,
                "GEMINI_CLI_TRUST_WORKSPACE": "true", "NO_COLOR": "1"}

    def hookgate_env(self) -> dict[str, str]:
        return {"HOME": str(self.home)}

    def command(self, prompt: str) -> list[str]:
        return [str(self.binary), "-p", prompt, "--yolo", "-m", "gemini-2.5-flash",
                "--output-format", "json"]
