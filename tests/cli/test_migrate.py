"""`hookgate migrate quality-gates FILE`: legacy gates to native hooks, with every change told."""

from __future__ import annotations

import json
from pathlib import Path

import yaml
from click.testing import CliRunner

from hookgate.cli import main
from hookgate.config import load_hooks

GATES = {
    "hooks": [
        {
            "event": "delegation.completed",
            "type": "command",
            "command": "./check.sh",
            "block_on_failure": True,
            "max_retries": 1,
            "timeout_seconds": 60,
        },
        {
            "event": "delegation.completed",
            "type": "agent",
            "agent": "quality-reviewer",
            "block_on_failure": False,
            "timeout_seconds": 5,
        },
    ]
}


def migrate(tmp_path: Path, *args: str, document: object = GATES) -> tuple[int, str, str]:
    source = tmp_path / "gates.json"
    source.write_text(json.dumps(document))
    result = CliRunner().invoke(main, ["migrate", "quality-gates", str(source), *args])
    return result.exit_code, result.stdout, result.stderr


def test_converts_following_the_table_and_prints_each_change(tmp_path: Path) -> None:
    code, out, err = migrate(tmp_path)
    assert code == 0, err
    hooks = json.loads(out)["hooks"]
    command, agent = hooks
    assert command == {
        "event": "subagent_stop",
        "name": "quality-gate-1-command",
        "timeout_ms": 60000,  # timeout_seconds kept: subagent_stop allows long waits
        "on_error": "block",
        "on_timeout": "block",
        "handler_type": "command",
        "config": {"command": "./check.sh"},
    }
    assert agent["handler_type"] == "agent" and agent["config"] == {"agent": "quality-reviewer"}
    assert (agent["on_error"], agent["timeout_ms"]) == ("allow", 5000)
    changes = [line for line in err.splitlines() if line.startswith("changed: ")]
    assert any("delegation.completed -> subagent_stop" in line for line in changes)
    assert not any("timeout_seconds" in line for line in changes)
    assert any("max_retries 1 dropped" in line for line in changes)
    assert any("stdin is now the event JSON" in line for line in changes)
    assert any(
        "block_on_failure false -> on_error and on_timeout allow" in line for line in changes
    )


def test_output_file_loads_as_native_hooks(tmp_path: Path) -> None:
    target = tmp_path / "hooks.yaml"
    code, _, err = migrate(tmp_path, "--output", str(target))
    assert code == 0 and "wrote 2 hook(s)" in err
    assert list(yaml.safe_load(target.read_text())) == ["hooks"]
    definitions = load_hooks(target)
    assert [d.handler_type for d in definitions] == ["command", "agent"]
    assert {d.event for d in definitions} == {"subagent_stop"}


def test_agent_gates_to_prompt_hooks(tmp_path: Path) -> None:
    code, out, err = migrate(tmp_path, "--agent-to", "prompt")
    assert code == 0, err
    prompt = json.loads(out)["hooks"][1]
    assert prompt["handler_type"] == "prompt" and prompt["if_expr"] == "output != null"
    assert "quality-reviewer" in prompt["config"]["prompt_template"]
    assert "decide tool" in err


def test_agent_record_keeps_its_scope(tmp_path: Path) -> None:
    record = {"agent_key": "orchestrator", "other_config": {"quality_gates": GATES["hooks"][1:]}}
    code, out, _ = migrate(tmp_path, document=record)
    assert code == 0
    assert json.loads(out)["hooks"][0]["if_expr"] == 'source_agent == "orchestrator"'


def test_command_gates_cannot_migrate_to_standard(tmp_path: Path) -> None:
    code, out, err = migrate(tmp_path, "--edition", "standard")
    assert code == 1 and out == ""
    assert "error: gate 1 (command): command gates cannot run on the standard edition" in err


def test_not_a_gate_file(tmp_path: Path) -> None:
    code, _, err = migrate(tmp_path, document={"hooks": []})
    assert code == 1 and "no quality gates found" in err
