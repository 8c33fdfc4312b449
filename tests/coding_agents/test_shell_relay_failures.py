"""The shell relay's failures with the real CLIs: Claude Code, Codex and Gemini run the hook
command ``install`` wrote (``relay.bash``), and whatever stands where the warm process should
be (nobody, an impostor without the server token, a warm process that answers garbage or
never answers) the model's command does not run.

Before the hand-over (nobody listening, an impostor) the Python relay answers, so the hooks
file's own deny is what the model hears; after it (garbage, silence) hookgate's failure.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from tests.support.anthropic_server import ScriptedAnthropic, use_tool
from tests.support.anthropic_server import say as claude_say
from tests.support.claude_code_cli import ClaudeProject, require_claude
from tests.support.codex_cli import CodexProject, require_codex
from tests.support.gemini_cli import GeminiProject, require_gemini
from tests.support.gemini_server import ScriptedGemini
from tests.support.gemini_server import run_shell as gemini_shell
from tests.support.gemini_server import say as gemini_say
from tests.support.responses_server import ScriptedResponses
from tests.support.responses_server import run_shell as codex_shell
from tests.support.responses_server import say as codex_say
from tests.support.shell_relay import FakeWarm, endpoint_file, free_port, greet_then, impostor
from tests.support.waiting import wait_until
from tests.support.warm_bridge import stop_all

from hookgate.integrations.claude_code import shell_relay

pytestmark = pytest.mark.skipif(not shell_relay.available(),
                                reason="the shell relay needs Linux and /bin/bash")

NO_TOUCH = {"event": "pre_tool_use", "handler_type": "command", "name": "no touching",
            "matcher": "^Bash$", "if_expr": 'tool_input.command.contains("touch")',
            "config": {"command": """echo '{"decision": "block", "reason": "no touching"}'"""}}
#: The agents' hook timeout install writes (seconds): the relay waits 5 s less.
TIMEOUT_S = 7


class Agent:
    """One agent's real CLI, installed with hookgate's hook for its tool event, and what the
    model was told about its command."""

    def __init__(self, name: str, root: Path, hooks: Path) -> None:
        self.name = name
        self._servers: list[Any] = []
        if name == "claude-code":
            claude_api = self._serve(ScriptedAnthropic())
            self.claude = ClaudeProject(root, claude_api, require_claude())
            self.claude.install("--config", str(hooks), "--event", "PreToolUse",
                                "--timeout", str(TIMEOUT_S))
            claude_api.script(use_tool("Bash", {"command": "touch MARKER",
                                                "description": "x"}), claude_say("ok"))
        elif name == "codex":
            codex_api = self._serve(ScriptedResponses())
            self.codex = CodexProject(root, codex_api, require_codex())
            self.codex.hookgate("codex", "install", "--config", str(hooks), "--event",
                                "PreToolUse", "--timeout", str(TIMEOUT_S))
            codex_api.script(codex_shell("touch MARKER"), codex_say("ok"))
        else:
            gemini_api = self._serve(ScriptedGemini())
            self.gemini = GeminiProject(root, gemini_api, require_gemini())
            self.gemini.hookgate("gemini", "install", "--config", str(hooks), "--settings",
                                 str(self.gemini.user_settings), "--event", "BeforeTool",
                                 "--timeout", str(TIMEOUT_S))
            gemini_api.script(gemini_shell("touch MARKER"), gemini_say("ok"))

    def _serve(self, server: Any) -> Any:
        self._servers.append(server)
        return server.__enter__()

    def close(self) -> None:
        for server in self._servers:
            server.__exit__(None, None, None)

    def run(self) -> tuple[bool, str]:
        """Run the agent; whether MARKER exists, and what the model was told."""
        if self.name == "claude-code":
            run = self.claude.run("go")
            assert run.returncode == 0, run.stderr
            told = json.dumps(self.claude.api.agent_calls[1].tool_results())
            return self.claude.exists("MARKER"), told
        if self.name == "codex":
            codex_run = self.codex.run("go")
            assert codex_run.returncode == 0, codex_run.stderr
            return self.codex.exists("MARKER"), json.dumps(
                self.codex.api.calls[1].tool_outputs())
        gemini_run = self.gemini.run("go")
        assert gemini_run.returncode == 0, gemini_run.stderr
        return self.gemini.exists("MARKER"), json.dumps(self.gemini.api.calls[1].tool_results())


@pytest.fixture
def folder(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A warm folder of this test alone: install writes it into the command, the agents'
    environments carry it."""
    path = Path(tempfile.mkdtemp(prefix="hgr-", dir="/tmp"))
    monkeypatch.setenv("HOOKGATE_CLAUDE_CODE_WARM_DIR", str(path))
    yield path
    stop_all(path)
    shutil.rmtree(path, ignore_errors=True)


def _hooks(where: Path) -> Path:
    path = where / "hookgate.yaml"
    path.write_text(yaml.safe_dump({"hooks": [NO_TOUCH]}))
    return path


def _no_warm_process(folder: Path) -> None:
    """``install`` started the warm process: stop it, so that the fake stands in its place."""
    wait_until(lambda: endpoint_file(folder).exists(), "install's warm process listens", 60)
    stop_all(folder)
    wait_until(lambda: not endpoint_file(folder).exists(), "the warm process is gone", 30)


def _listener_gone(fake_folder: Path) -> FakeWarm | None:
    endpoint_file(fake_folder).write_text(f"{free_port()} {'a' * 32} {'b' * 32}\n")
    endpoint_file(fake_folder).chmod(0o600)
    return None


CASES: dict[str, tuple[Callable[[Path], FakeWarm | None], str]] = {
    "listener gone": (_listener_gone, "no touching"),
    "impostor": (lambda folder: FakeWarm(folder, impostor), "no touching"),
    "garbage": (lambda folder: FakeWarm(folder, greet_then(b"Z\0")),
                "the warm hookgate process failed"),
    "no answer": (lambda folder: FakeWarm(folder, greet_then(None)), "no answer within 2s"),
}


@pytest.mark.parametrize("agent", ["claude-code", "codex", "gemini"])
@pytest.mark.parametrize("case", list(CASES))
def test_the_command_does_not_run_whatever_stands_in_for_the_warm_process(
    agent: str, case: str, folder: Path, tmp_path: Path
) -> None:
    cli = Agent(agent, tmp_path, _hooks(tmp_path))
    try:
        _no_warm_process(folder)
        make, told = CASES[case]
        fake = make(folder)
        if fake is None:
            ran, heard = cli.run()
        else:
            fake.write_endpoint()
            with fake.running():
                ran, heard = cli.run()
            if case == "impostor":
                assert fake.received == b""  # it learned nothing
    finally:
        cli.close()
    assert not ran
    assert told in heard
