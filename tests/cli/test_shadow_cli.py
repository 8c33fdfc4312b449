"""``hookgate check`` and ``hookgate fire`` with a shadow hook, run as real subprocesses."""

from __future__ import annotations

import json
from pathlib import Path

from tests.cli.test_core_commands import hookgate

HOOKS = """
hooks:
  - name: no-rm
    event: pre_tool_use
    handler_type: callable
    matcher: "^exec$"
    mode: shadow
    config: {callable: "tests.fixtures.sample_hooks:block_rm"}
"""
RM = json.dumps({"tool_name": "exec", "tool_input": {"cmd": "rm -rf /"}})


def test_check_names_the_shadow_hooks(tmp_path: Path) -> None:
    path = tmp_path / "hooks.yaml"
    path.write_text(HOOKS)
    result = hookgate("check", str(path))
    assert result.returncode == 0, result.stderr
    assert "no-rm (pre_tool_use) runs in shadow mode" in result.stdout
    assert "1 hook(s) OK, 1 in shadow mode" in result.stdout


def test_fire_shows_would_block_and_allows(tmp_path: Path) -> None:
    path = tmp_path / "hooks.yaml"
    path.write_text(HOOKS)
    result = hookgate("fire", "pre_tool_use", "-c", str(path), "-i", RM)
    assert result.returncode == 0, result.stderr
    outcome = json.loads(result.stdout)
    assert outcome["decision"] == "allow"
    (entry,) = outcome["trace"]
    assert (entry["mode"], entry["decision"]) == ("shadow", "would_block")
    assert "shadow: no-rm would_block: " in result.stderr
    # Promoted, the same hook blocks: exit 2.
    path.write_text(HOOKS.replace("mode: shadow", "mode: enforce"))
    result = hookgate("fire", "pre_tool_use", "-c", str(path), "-i", RM)
    assert result.returncode == 2 and json.loads(result.stdout)["decision"] == "block"


def test_check_refuses_an_unknown_mode(tmp_path: Path) -> None:
    path = tmp_path / "hooks.yaml"
    path.write_text(HOOKS.replace("mode: shadow", "mode: observe"))
    result = hookgate("check", str(path))
    assert result.returncode == 1
    assert "mode: must be 'enforce' or 'shadow', got 'observe'" in result.stderr
