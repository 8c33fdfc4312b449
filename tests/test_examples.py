"""The examples in examples/ run and do what they say."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_example_hooks_file_is_valid() -> None:
    result = subprocess.run([sys.executable, "-m", "hookgate", "check", "examples/hooks.yaml"],
                            cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr


def test_example_agent_loop_blocks_and_rewrites() -> None:
    result = subprocess.run([sys.executable, "-m", "examples.agent_loop"], cwd=ROOT,
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert "exec: ran 'ls'" in lines
    assert any(line.startswith("exec: BLOCKED (dangerous shell command") for line in lines)
    assert "write_file: wrote workspace/etc/motd" in lines
    assert "House rules" in lines[0]
