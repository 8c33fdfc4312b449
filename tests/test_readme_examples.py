"""The README's command-line examples work exactly as written, from the repository root,
with the installed ``hookgate`` command (no PYTHONPATH, no module tricks)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _readme_cli_commands() -> list[tuple[str, int]]:
    """Each command of the README's hooks-as-code block, with the exit status its comment
    promises (``# exit N: …``; 0 when it says nothing)."""
    readme = (ROOT / "README.md").read_text()
    block = re.search(r"\*\*As hooks-as-code\*\*.*?```sh\n(.*?)```", readme, re.DOTALL)
    assert block, "the README lost its hooks-as-code example"
    commands: list[tuple[str, int]] = []
    for line in block.group(1).replace("\\\n", " ").splitlines():
        command, _, comment = line.partition("#")
        if not command.strip():
            continue
        promised = re.search(r"exit (\d+)", comment)
        commands.append((command.strip(), int(promised.group(1)) if promised else 0))
    return commands


def test_readme_cli_examples_run_as_written() -> None:
    commands = _readme_cli_commands()
    assert any(cmd.startswith("hookgate fire") for cmd, _ in commands)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    for command, expected in commands:
        done = subprocess.run(["sh", "-c", command], cwd=ROOT, env=env, capture_output=True,
                              text=True, timeout=120)
        assert done.returncode == expected, (command, done.stdout, done.stderr)
        assert "Traceback" not in done.stderr, (command, done.stderr)
