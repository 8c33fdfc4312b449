"""Fixtures for the tests that drive the real Claude Code CLI."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.support.anthropic_server import ScriptedAnthropic
from tests.support.claude_code_cli import ClaudeProject, require_claude


@pytest.fixture
def api() -> Iterator[ScriptedAnthropic]:
    with ScriptedAnthropic() as server:
        yield server


@pytest.fixture
def project(tmp_path: Path, api: ScriptedAnthropic) -> ClaudeProject:
    return ClaudeProject(tmp_path, api, require_claude())
