"""Legacy GoClaw quality-gate configs load as they are, and `hookgate fire` runs them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from tests.support.llm_server import ScriptedLLM, text

from hookgate import Engine
from hookgate.config import ConfigError, load_hooks, parse_hooks

SEED_FILE = {
    "hooks": [
        {
            "event": "delegation.completed",
            "type": "command",
            "command": "./scripts/check-output.sh",
            "block_on_failure": True,
            "max_retries": 1,
            "timeout_seconds": 10,
        },
        {
            "event": "delegation.completed",
            "type": "agent",
            "agent": "quality-reviewer",
            "block_on_failure": True,
            "max_retries": 2,
            "timeout_seconds": 90,
        },
    ]
}
CHECK_OUTPUT = """#!/bin/sh
content=$(cat)
length=${#content}
if [ "$length" -lt 100 ]; then
  echo "Output is too short ($length chars). Provide a more complete response." >&2
  exit 1
fi
exit 0
"""


def write(tmp_path: Path, document: Any, name: str = "gates.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(document))
    return path


def test_seed_gate_file_loads_as_one_quality_gate_hook(tmp_path: Path) -> None:
    (definition,) = load_hooks(write(tmp_path, SEED_FILE))
    assert definition.event == "subagent_stop"
    assert definition.handler_type == "quality_gate"
    assert definition.timeout_ms == 101000  # the gates' own 10 s + 90 s (+1 s), not 10 s
    gates = definition.config["gates"]
    assert [g["type"] for g in gates] == ["command", "agent"]
    assert gates[0]["cwd"] == str(tmp_path) and gates[1]["max_retries"] == 2


def test_single_gate_object_and_agent_record_load(tmp_path: Path) -> None:
    (single,) = parse_hooks(SEED_FILE["hooks"][0], base_dir=tmp_path)
    assert single.handler_type == "quality_gate" and single.if_expr is None
    record = {
        "agent_key": "orchestrator",
        "other_config": {"quality_gates": [SEED_FILE["hooks"][1]]},
    }
    (agent,) = parse_hooks(record, base_dir=tmp_path)
    assert agent.name == "quality-gates-orchestrator"
    assert agent.if_expr == 'source_agent == "orchestrator"'


def test_native_files_are_not_mistaken_for_gates(tmp_path: Path) -> None:
    native = {
        "hooks": [
            {"event": "subagent_stop", "handler_type": "command", "config": {"command": "true"}}
        ]
    }
    (definition,) = parse_hooks(native, base_dir=tmp_path)
    assert definition.handler_type == "command"


def test_bad_gates_name_their_place(tmp_path: Path) -> None:
    broken = {"hooks": [{"event": "delegation.completed", "type": "shell", "command": "x"}]}
    with pytest.raises(ConfigError, match=r'hooks\[0\]\.type: use "command" or "agent"'):
        parse_hooks(broken, base_dir=tmp_path)


def test_command_gates_are_refused_on_standard(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="not available on the standard edition"):
        parse_hooks(SEED_FILE, edition="standard", base_dir=tmp_path)


async def test_agent_record_gates_apply_to_that_source_agent_only(tmp_path: Path) -> None:
    record = {
        "agent_key": "orchestrator",
        "other_config": {"quality_gates": [{"type": "command", "command": "exit 1"}]},
    }
    engine = Engine()
    engine.load(write(tmp_path, record))
    mine = await engine.fire("subagent_stop", output="x", source_agent="orchestrator", wait=True)
    other = await engine.fire("subagent_stop", output="x", source_agent="someone", wait=True)
    await engine.aclose()
    assert mine.trace[0].decision == "block"
    assert other.trace[0].skipped == "if_expr is false"


def run_fire(config: Path, payload: dict[str, Any], env: dict[str, str]) -> dict[str, Any]:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "hookgate",
            "fire",
            "delegation.completed",
            "--config",
            str(config),
            "--input",
            json.dumps(payload),
        ],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, **env},
    )
    outcome = json.loads(done.stdout)
    assert done.returncode == (0 if outcome["decision"] == "allow" else 2), done.stderr
    return outcome  # type: ignore[no-any-return]


def test_hookgate_fire_runs_the_seed_gates(tmp_path: Path) -> None:
    scripts = tmp_path / "scripts"
    scripts.mkdir()
    (scripts / "check-output.sh").write_text(CHECK_OUTPUT)
    (scripts / "check-output.sh").chmod(0o755)
    document = json.loads(json.dumps(SEED_FILE))
    document["hooks"][1].update(model="haiku", api_key_env="HOOKGATE_TEST_FIRE_KEY")
    config = write(tmp_path, document)
    with ScriptedLLM(api_key="fire-key") as llm:
        llm.script(text("REJECTED: cite the RFC"))
        env = {
            "HOOKGATE_SSRF_ALLOWLIST": "127.0.0.1/32",
            "ANTHROPIC_BASE_URL": llm.anthropic_url,
            "HOOKGATE_TEST_FIRE_KEY": "fire-key",
        }
        short = run_fire(config, {"output": "too short", "task": "t"}, env)
        long_output = "A long and complete answer. " * 5
        rejected = run_fire(
            config,
            {"output": long_output, "task": "Explain TLS", "source_agent": "orchestrator"},
            env,
        )
    # delegation.completed is waited for: the failing gate blocks, its feedback the reason
    assert short["decision"] == "block"
    assert short["reason"].startswith("Output is too short (9 chars).")
    details = short["trace"][0]["details"]
    assert short["trace"][0]["decision"] == "block"
    assert details["feedback"].startswith("Output is too short (9 chars).")
    assert len(details["gates"]) == 1  # the first blocking failure stopped the reviewer
    assert len(llm.requests) == 1
    review = rejected["trace"][0]["details"]
    assert review["feedback"] == "cite the RFC" and review["gate_index"] == 1
    assert "Original task: Explain TLS" in llm.requests[0].user
