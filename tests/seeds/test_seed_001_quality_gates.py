"""Seed 001 (GoClaw quality gates): its configs and check-output.sh, unchanged, through the
real CLI and a real gateway. A gate blocks wherever a caller waits for it; the outcome
carries what a non-Python caller needs for the retry loop."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from tests.server.gateway_process import GatewayProcess, run_cli
from tests.server.wsutil import fails, ok, open_ws
from tests.support.llm_server import ScriptedLLM, text

from hookgate import Engine
from hookgate.config import load_hooks
from hookgate.settings import Settings

SEED = Path(__file__).resolve().parents[1] / "fixtures" / "seeds" / "001_goclaw_quality_gates"
SHORT = "too short"
LONG = "A complete answer with every part the task asked for, explained step by step. " * 2
TOO_SHORT = "Output is too short (9 chars). Provide a more complete response."


def fire_cli(
    config: Path, payload: dict[str, Any], *, event: str = "delegation.completed",
    env: dict[str, str] | None = None,
) -> tuple[int, dict[str, Any]]:
    done = subprocess.run(
        [sys.executable, "-m", "hookgate", "fire", event, "--config", str(config),
         "--input", json.dumps(payload)],
        capture_output=True, text=True, timeout=60, env={**os.environ, **(env or {})},
    )
    assert done.returncode in (0, 2), done.stderr
    return done.returncode, json.loads(done.stdout)


def test_failing_gate_with_block_on_failure_blocks_the_result_with_its_feedback() -> None:
    """`hookgate fire delegation.completed --config seed-example.json`, too-short output:
    a block whose reason is check-output.sh's stderr, exit 2."""
    code, outcome = fire_cli(SEED / "hook-config.json", {"output": SHORT, "task": "t"})
    assert code == 2
    assert outcome["decision"] == "block"
    assert outcome["reason"] == TOO_SHORT
    assert outcome["trace"][0]["details"]["gates"][0]["passed"] is False
    assert "not enforced" not in json.dumps(outcome)


def test_passing_gate_lets_the_result_through() -> None:
    code, outcome = fire_cli(SEED / "hook-config.json", {"output": LONG, "task": "t"})
    assert (code, outcome["decision"], outcome["retry"]) == (0, "allow", None)


def test_max_retries_outcome_carries_feedback_attempt_and_retries_left() -> None:
    """The seed's max_retries: 2 allows three attempts; the caller counts `attempt` and the
    outcome says how many retries remain, so a shell script can run the loop."""
    lefts = []
    for attempt in (1, 2, 3):
        code, outcome = fire_cli(
            SEED / "hook-config.json", {"output": SHORT, "task": "t", "attempt": attempt}
        )
        assert code == 2
        retry = outcome["retry"]
        assert retry["feedback"] == TOO_SHORT and retry["attempt"] == attempt
        assert retry["max_retries"] == 2 and retry["gate_index"] == 0
        lefts.append(retry["retries_left"])
    assert lefts == [2, 1, 0]


def test_hook_event_is_delegation_completed_for_legacy_gates(tmp_path: Path) -> None:
    """Scripts that test HOOK_EVENT see GoClaw's name, whichever name the event was fired as."""
    gate = {"event": "delegation.completed", "type": "command", "block_on_failure": True,
            "command": 'echo "$HOOK_EVENT $HOOK_SOURCE_AGENT $HOOK_TASK" >&2; exit 1'}
    config = tmp_path / "gate.json"
    config.write_text(json.dumps(gate))
    payload = {"output": "x", "task": "Write a parser", "source_agent": "orchestrator"}
    for event in ("delegation.completed", "subagent_stop", "SubagentStop"):
        _, outcome = fire_cli(config, payload, event=event)
        assert outcome["reason"] == "delegation.completed orchestrator Write a parser", event


def test_timeout_seconds_is_honoured_past_the_ten_second_hook_limit(tmp_path: Path) -> None:
    """The seed's timeouts (60, 90, 120 s) are kept, not cut at 10 s, and the chain budget
    does not cut a gate short either."""
    definitions = {p.name: load_hooks(p)[0] for p in SEED.glob("*.json")}
    # each gate's own timeout_seconds, plus one second for the hook around them
    assert definitions["hook-config.json"].timeout_ms == 61_000
    assert definitions["code-review.json"].timeout_ms == 121_000
    assert definitions["two-hook-setup.json"].timeout_ms == 106_000
    assert definitions["length-check.json"].timeout_ms == 11_000

    async def run() -> Any:
        slow = {"event": "delegation.completed", "type": "command", "timeout_seconds": 60,
                "command": "sleep 0.4; exit 0"}
        config = tmp_path / "slow.json"
        config.write_text(json.dumps(slow))
        engine = Engine(settings=Settings(chain_budget_s=0.1))
        engine.load(config)
        try:
            return await engine.fire("delegation.completed", output=LONG)
        finally:
            await engine.aclose()

    import asyncio

    outcome = asyncio.run(run())
    assert outcome.decision == "allow", outcome.reason
    assert outcome.trace[0].decision == "allow"


def test_gate_that_times_out_fails_at_once_with_no_retries_left(tmp_path: Path) -> None:
    gate = {"event": "delegation.completed", "type": "command", "command": "exec sleep 30",
            "block_on_failure": True, "max_retries": 2, "timeout_seconds": 0.3}
    config = tmp_path / "gate.json"
    config.write_text(json.dumps(gate))
    code, outcome = fire_cli(config, {"output": LONG})
    assert code == 2 and "timed out after 0.3 s" in outcome["reason"]
    assert outcome["retry"]["retries_left"] == 0


def reviewer_env(llm: ScriptedLLM) -> dict[str, str]:
    # The seed's agent gates name no model: hookgate's defaults reach the scripted server.
    return {"HOOKGATE_SSRF_ALLOWLIST": "127.0.0.1/32", "ANTHROPIC_BASE_URL": llm.anthropic_url,
            "ANTHROPIC_API_KEY": "seed-key"}


def test_agent_gate_rejected_feedback_becomes_the_retry_prompt() -> None:
    """The code-review example: REJECTED: <feedback> blocks with the feedback as reason and
    retry prompt; APPROVED passes."""
    with ScriptedLLM(api_key="seed-key") as llm:
        llm.script(text("REJECTED: handle the empty input case"), text("APPROVED - solid"))
        env = reviewer_env(llm)
        payload = {"output": "func Parse() {}", "task": "Write a Go function to parse JSON",
                   "source_agent": "orchestrator", "target_agent": "backend-dev"}
        code, rejected = fire_cli(SEED / "code-review.json", payload, env=env)
        code_ok, approved = fire_cli(SEED / "code-review.json", payload | {"attempt": 2}, env=env)
    assert code == 2 and rejected["reason"] == "handle the empty input case"
    assert rejected["retry"]["retries_left"] == 2 and rejected["retry"]["max_retries"] == 2
    assert (code_ok, approved["decision"]) == (0, "allow")
    prompt = llm.requests[0].user
    assert "Original task: Write a Go function to parse JSON" in prompt
    assert "Source agent: orchestrator" in prompt and "Target agent: backend-dev" in prompt


def test_two_hook_setup_format_check_stops_before_the_reviewer() -> None:
    """The first blocking failure stops evaluation: the reviewer is never asked."""
    with ScriptedLLM(api_key="seed-key") as llm:
        llm.script(text("APPROVED"))
        env = reviewer_env(llm)
        code, outcome = fire_cli(SEED / "two-hook-setup.json", {"output": LONG}, env=env)
        assert code == 2
        assert outcome["reason"] == "Missing required section: start a line with 'Summary:'."
        assert outcome["retry"]["retries_left"] == 0  # max_retries: 0
        assert llm.requests == []
        code, outcome = fire_cli(
            SEED / "two-hook-setup.json", {"output": "Summary: done\n" + LONG}, env=env
        )
    assert (code, outcome["decision"]) == (0, "allow")
    assert len(llm.requests) == 1


def test_non_blocking_audit_logger_never_blocks(tmp_path: Path) -> None:
    """block_on_failure: false logs and continues, whether the logger works or fails. The
    seed's curl goes to https://audit.internal; a stand-in curl on PATH records the call."""
    shim = tmp_path / "bin"
    shim.mkdir()
    record = tmp_path / "posted"
    (shim / "curl").write_text(f'#!/bin/sh\necho "$@" > {record}.args\ncat > {record}\n'
                               'exit "${CURL_EXIT:-0}"\n')
    (shim / "curl").chmod(0o755)
    env = {"PATH": f"{shim}:{os.environ['PATH']}"}
    code, outcome = fire_cli(SEED / "audit-logger.json", {"output": "logged output"}, env=env)
    assert (code, outcome["decision"]) == (0, "allow")
    assert record.read_text() == "logged output"
    assert record.with_suffix(".args").read_text().split() == [
        "-s", "-X", "POST", "https://audit.internal/log", "-d", "@-"]
    (shim / "curl").write_text("#!/bin/sh\ncat >/dev/null\necho 'could not resolve' >&2\nexit 6\n")
    code, outcome = fire_cli(SEED / "audit-logger.json", {"output": "x"}, env=env)
    assert (code, outcome["decision"]) == (0, "allow")
    gate = outcome["trace"][0]["details"]["gates"][0]
    assert gate["passed"] is False and gate["blocking"] is False


@pytest.fixture(scope="module")
def gate_gateway(tmp_path_factory: pytest.TempPathFactory) -> Any:
    data_dir = tmp_path_factory.mktemp("seed001") / "data"
    run_cli("hooks", "import", str(SEED / "hook-config.json"), data_dir=data_dir)
    served = GatewayProcess(data_dir).start()
    try:
        yield served
    finally:
        served.stop()


def test_gateway_dispatch_of_a_failing_gate_answers_the_same_block(
    gate_gateway: GatewayProcess,
) -> None:
    """hooks.dispatch answers what `hookgate fire` answers: delegation.completed is waited
    for; subagent_stop blocks when the caller sets wait, and is queued otherwise."""
    assert gate_gateway.master_key is not None
    with open_ws(gate_gateway.ws_url, gate_gateway.master_key) as ws:
        blocked = ok(ws, "hooks.dispatch", {"event": "delegation.completed",
                                            "input": {"output": SHORT, "attempt": 2}})
        waited = ok(ws, "hooks.dispatch", {"event": "subagent_stop", "wait": True,
                                           "input": {"output": SHORT}})
        queued = ok(ws, "hooks.dispatch", {"event": "subagent_stop",
                                           "input": {"output": SHORT}})
        passed = ok(ws, "hooks.dispatch", {"event": "delegation.completed",
                                           "input": {"output": LONG}})
    assert blocked["decision"] == "block" and blocked["reason"] == TOO_SHORT
    assert blocked["retry"] == {"gate": blocked["retry"]["gate"], "gate_index": 0,
                                "feedback": TOO_SHORT, "attempt": 2, "max_retries": 2,
                                "retries_left": 1}
    assert waited["decision"] == "block" and waited["reason"] == TOO_SHORT
    assert queued["decision"] == "allow" and queued["trace"] == []
    assert passed["decision"] == "allow"


def test_dry_running_a_command_gate_on_the_gateway_is_host_code(
    gate_gateway: GatewayProcess,
) -> None:
    """A quality_gate hook's command gates run `sh -c` on the gateway host: tenant keys may
    not dry-run one; the master key may (and the gate's feedback comes back)."""
    definition = {"event": "subagent_stop", "handler_type": "quality_gate", "scope": "tenant",
                  "config": {"gates": [{"type": "command",
                                        "command": "echo gate ran on the host >&2; exit 1"}]}}
    sample = {"output": "x"}
    for role in ("operator", "admin"):
        key = gate_gateway.create_key("tenant-a", role)
        with open_ws(gate_gateway.ws_url, key) as ws:
            fails(ws, "hooks.test", {"config": definition, "sampleEvent": sample},
                  "UNAUTHORIZED")
    assert gate_gateway.master_key is not None
    with open_ws(gate_gateway.ws_url, gate_gateway.master_key) as ws:
        result = ok(ws, "hooks.test", {"config": definition, "sampleEvent": sample})["result"]
    assert result["decision"] == "block" and result["reason"] == "gate ran on the host"


async def test_library_outcome_carries_the_retry_loop_and_subagent_stop_queues() -> None:
    """In Python: fire('delegation.completed') waits and blocks with outcome.retry; the same
    event fired as subagent_stop without wait is queued (nobody waits, nothing to stop)."""
    engine = Engine()
    engine.load(SEED / "hook-config.json")
    try:
        blocked = await engine.fire("delegation.completed", output=SHORT, attempt=3)
        queued = await engine.fire("subagent_stop", output=SHORT)
        waited = await engine.fire("subagent_stop", output=SHORT, wait=True)
    finally:
        await engine.aclose()
    assert blocked.blocked and blocked.reason == TOO_SHORT
    assert blocked.retry is not None and blocked.retry["retries_left"] == 0
    assert queued.allowed and queued.trace == []
    assert waited.blocked and waited.retry is not None and waited.retry["attempt"] == 1
