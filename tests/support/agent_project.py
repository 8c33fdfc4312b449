"""What the tests of the real coding-agent CLIs share (Codex CLI, Gemini CLI): the pinned CLI
found in the cache folder its ``scripts/ensure-*`` installs it in, a throw-away project and
home per test, the environment that keeps the CLI offline and sends every hook event through
the test session's warm process, running ``hookgate`` and the CLI, and a gateway whose one
hook blocks deploys.

An agent's module (:mod:`tests.support.codex_cli`, :mod:`tests.support.gemini_cli`) says only
what differs: where its home and settings are, its environment, its command line.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.conftest import require_service

__all__ = [
    "HOOKGATE",
    "AgentProject",
    "AgentRun",
    "deploy_blocking_gateway",
    "hookgate",
    "hookgate_alone",
    "pinned_cli",
]

#: The ``hookgate`` of the virtual environment the tests run in.
HOOKGATE = (
    str(Path(os.environ["VIRTUAL_ENV"]) / "bin" / "hookgate")
    if os.environ.get("VIRTUAL_ENV")
    else "hookgate"
)
#: What the agents' hooks must see of the test's own environment: a worktree's PYTHONPATH
#: (its hooks run that code) and the test session's warm-process folder.
_PASSED_ON = ("PYTHONPATH", "VIRTUAL_ENV", "HOOKGATE_CLAUDE_CODE_WARM_DIR")


def pinned_cli(label: str, folder: str, version: str, binary: str, package: str) -> Path:
    """The CLI ``scripts/ensure-<folder>`` installed into the cache (skips locally without
    it, fails under CI=true)."""
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    path = cache / "hookgate" / folder / version / "node_modules" / ".bin" / binary
    require_service(
        label, path.exists(), f"{package}@{version} (scripts/ensure-{folder} installs it)"
    )
    return path


@dataclass(slots=True)
class AgentRun:
    returncode: int
    stdout: str
    stderr: str


def hookgate(
    *args: str, cwd: Path, stdin: str | None = None, **env: str
) -> subprocess.CompletedProcess[str]:
    """``hookgate ARGS`` in ``cwd`` with ``stdin``, as its own process (not checked)."""
    return subprocess.run(
        [HOOKGATE, *args],
        input=stdin,
        capture_output=True,
        text=True,
        cwd=cwd,
        env={**os.environ, **env},
        timeout=60,
        check=False,
    )


def hookgate_alone(
    *args: str, cwd: Path, stdin: str | None = None, check: bool = False
) -> subprocess.CompletedProcess[str]:
    """``hookgate ARGS`` answering in its own process (no warm process), its definition
    cache in ``cwd``; with ``check``, it must exit 0."""
    done = hookgate(
        *args, cwd=cwd, stdin=stdin, HOOKGATE_CLAUDE_CODE_WARM="off", XDG_CACHE_HOME=str(cwd)
    )
    if check:
        assert done.returncode == 0, done.stderr
    return done


class AgentProject:
    """A project folder and a home for one session of an agent's CLI."""

    def __init__(self, root: Path, api: Any, binary: Path, home: str) -> None:
        self.dir = root / "project"
        self.home = root / home
        self.api = api
        self.binary = binary
        self.dir.mkdir(parents=True)
        self.home.mkdir(parents=True)

    def agent_env(self) -> dict[str, str]:
        """The agent's own variables (its home, its model API on loopback)."""
        raise NotImplementedError

    def hookgate_env(self) -> dict[str, str]:
        """What ``hookgate`` commands of the test (install, uninstall) see of the home."""
        raise NotImplementedError

    def command(self, prompt: str) -> list[str]:
        """The CLI's command line for one prompt, run without a person."""
        raise NotImplementedError

    def env(self, **extra: str) -> dict[str, str]:
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "NO_PROXY": "127.0.0.1,localhost",
            **self.agent_env(),
        }
        env.update({name: os.environ[name] for name in _PASSED_ON if name in os.environ})
        # Every event through the warm process of the test session (one that it does not
        # take fails), as for Claude Code.
        env["HOOKGATE_CLAUDE_CODE_WARM"] = "require"
        env.update(extra)
        return env

    def hookgate(self, *args: str) -> subprocess.CompletedProcess[str]:
        result = hookgate(*args, cwd=self.dir, **self.hookgate_env())
        assert result.returncode == 0, result.stderr
        return result

    def run(self, prompt: str, *, timeout: float = 120, **env: str) -> AgentRun:
        done = subprocess.run(
            self.command(prompt),
            cwd=self.dir,
            env=self.env(**env),
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
            stdin=subprocess.DEVNULL,
        )
        return AgentRun(done.returncode, done.stdout, done.stderr)

    def exists(self, name: str) -> bool:
        return (self.dir / name).exists()

    def write_hooks(self, *hooks: dict[str, Any]) -> Path:
        """``hookgate.yaml`` in the project, holding ``hooks``."""
        import yaml

        path = self.dir / "hookgate.yaml"
        path.write_text(yaml.safe_dump({"hooks": list(hooks)}, sort_keys=False))
        return path


@contextmanager
def deploy_blocking_gateway(folder: Path) -> Iterator[tuple[Any, str]]:
    """A gateway (and its API key) whose one hook, for tenant ``fleet``, blocks a ``Bash``
    command holding ``deploy --prod``: the hook a Claude Code test would use."""
    from tests.server.conftest import gateway_with_hooks

    with gateway_with_hooks(
        folder,
        "fleet",
        {
            "event": "pre_tool_use",
            "handler_type": "callable",
            "scope": "tenant",
            "tenant_id": "fleet",
            "name": "no deploys",
            "matcher": "^Bash$",
            "if_expr": 'tool_input.command.contains("deploy --prod")',
            "config": {"callable": "tests.server.hookfns:block"},
        },
    ) as served_and_key:
        yield served_and_key
