"""The real Codex CLI (pinned, from npm into a cache folder by ``scripts/ensure-codex``),
driven offline: a ``CODEX_HOME`` of the test's own whose only model provider is a scripted
Responses API on loopback (:mod:`tests.support.responses_server`)."""

from __future__ import annotations

import os
from pathlib import Path

from tests.support.agent_project import AgentProject, pinned_cli
from tests.support.responses_server import ScriptedResponses

__all__ = ["CODEX_VERSION", "CodexProject", "require_codex"]

CODEX_VERSION = os.environ.get("HOOKGATE_CODEX_VERSION", "0.171.0")


def require_codex() -> Path:
    return pinned_cli("the Codex CLI", "codex", CODEX_VERSION, "codex", "@openai/codex")


class CodexProject(AgentProject):
    """A project folder and a CODEX_HOME for one Codex session."""

    def __init__(self, root: Path, api: ScriptedResponses, binary: Path) -> None:
        super().__init__(root, api, binary, "codex-home")
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

    def agent_env(self) -> dict[str, str]:
        return {"HOME": str(self.home.parent), "CODEX_HOME": str(self.home),
                "FAKE_API_KEY": "offline"}

    def hookgate_env(self) -> dict[str, str]:
        return {"CODEX_HOME": str(self.home)}

    def command(self, prompt: str) -> list[str]:
        return [str(self.binary), "exec", "--skip-git-repo-check",
                "--dangerously-bypass-approvals-and-sandbox", prompt]
