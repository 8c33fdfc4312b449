"""Quality gates: command and agent evaluators, order, timeouts, and the retry loop API."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.support.llm_server import ScriptedLLM, text

from hookgate.handlers.base import Services
from hookgate.integrations.goclaw.gate_config import parse_gates
from hookgate.integrations.goclaw.gates import (
    Delegation,
    GateConfigError,
    QualityGates,
    run_with_retries,
)
from hookgate.settings import Settings

DELEGATION = Delegation(
    output="A short answer.",
    task="Explain the retry policy",
    source_agent="orchestrator",
    target_agent="writer",
    user_id="user-42",
)
MIN_LENGTH = (
    "content=$(cat); if [ ${#content} -lt 40 ]; then "
    'echo "Output is too short (${#content} chars)." >&2; exit 1; fi'
)


def gates(*raw: dict[str, Any], services: Services | None = None) -> QualityGates:
    return QualityGates.from_config(list(raw), services=services)


def command(cmd: str, **extra: Any) -> dict[str, Any]:
    return {"event": "delegation.completed", "type": "command", "command": cmd, **extra}


async def test_command_gate_passes_on_exit_zero_and_reads_stdin() -> None:
    report = await gates(command("grep -q 'short answer'")).evaluate(DELEGATION)
    assert report.passed and report.results[0].passed


async def test_command_gate_failure_feedback_is_stderr() -> None:
    report = await gates(command(MIN_LENGTH)).evaluate(DELEGATION)
    assert not report.passed
    assert report.failure is not None
    assert report.failure.feedback == "Output is too short (15 chars)."
    assert report.failure.details["exit_code"] == 1


async def test_command_gate_environment_is_hook_vars_and_allowlist_only(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("SECRET_TOKEN", "do-not-leak")
    monkeypatch.setenv("GATE_MODE", "strict")
    report = await gates(
        command("env | sort >&2; exit 1", allowed_env_vars=["GATE_MODE"])
    ).evaluate(DELEGATION)
    assert report.failure is not None
    env = dict(line.split("=", 1) for line in report.failure.feedback.splitlines())
    assert env["HOOK_EVENT"] == "delegation.completed"
    assert env["HOOK_SOURCE_AGENT"] == "orchestrator"
    assert env["HOOK_TARGET_AGENT"] == "writer"
    assert env["HOOK_TASK"] == "Explain the retry policy"
    assert env["HOOK_USER_ID"] == "user-42"
    assert env["GATE_MODE"] == "strict"
    assert "SECRET_TOKEN" not in env


async def test_silent_failure_still_gives_feedback() -> None:
    report = await gates(command("exit 3")).evaluate(DELEGATION)
    assert report.failure is not None
    assert report.failure.feedback == "the gate command exited with status 3"


async def test_first_blocking_failure_stops_the_rest(tmp_path: Path) -> None:
    marker = tmp_path / "second-ran"
    report = await gates(command("exit 1"), command(f"touch {marker}")).evaluate(DELEGATION)
    assert len(report.results) == 1 and not marker.exists()


async def test_non_blocking_failure_is_logged_and_the_next_gate_runs(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    marker = tmp_path / "second-ran"
    report = await gates(
        command("echo audit down >&2; exit 1", block_on_failure=False),
        command(f"touch {marker}"),
    ).evaluate(DELEGATION)
    assert report.passed and marker.exists()
    assert [r.passed for r in report.results] == [False, True]
    assert "hookgate.quality_gate.failed" in caplog.text and "audit down" in caplog.text


async def test_timeout_kills_the_whole_process_group(tmp_path: Path) -> None:
    pid_file = tmp_path / "child.pid"
    # It would outlive the test's own timeout: only the gate's timeout ends it.
    slow = command(f"sleep 600 & echo $! > {pid_file}; wait", timeout_seconds=0.3)
    report = await gates(slow).evaluate(DELEGATION)
    assert report.failure is not None and report.failure.error
    assert "timed out after 0.3 s" in report.failure.feedback
    child = int(await asyncio.to_thread(pid_file.read_text))
    assert await asyncio.to_thread(dead_within, child, 2.0)


def dead_within(pid: int, seconds: float) -> bool:
    """The process is gone, or killed and waiting for its parent to reap it."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
        except FileNotFoundError:
            return True
        if stat.rsplit(")", 1)[-1].split()[0] == "Z":
            return True
        time.sleep(0.02)
    return False


# -- the retry loop -------------------------------------------------------------------------


async def test_retry_loop_hands_back_feedback_until_it_passes() -> None:
    loop = gates(command(MIN_LENGTH, max_retries=2)).retry_loop(DELEGATION)
    first = await loop.check("too short")
    assert first.should_retry and first.retries_left == 1
    assert first.retry_prompt == "Output is too short (9 chars)."
    second = await loop.check("still short")
    assert second.should_retry and second.retries_left == 0
    third = await loop.check("A complete answer that covers the retry policy in full.")
    assert third.passed and third.attempt == 3 and third.feedback is None
    with pytest.raises(RuntimeError, match="finished"):
        await loop.check("again")


async def test_retry_loop_gives_up_when_retries_run_out() -> None:
    loop = gates(command(MIN_LENGTH, max_retries=1)).retry_loop(DELEGATION)
    assert (await loop.check("a")).should_retry
    final = await loop.check("b")
    assert final.status == "failed" and not final.passed
    assert final.feedback == "Output is too short (1 chars)."
    assert final.retry_prompt is None


async def test_zero_retries_fails_at_once() -> None:
    decision = await gates(command("exit 1")).retry_loop(DELEGATION).check("x")
    assert decision.status == "failed"


async def test_a_broken_gate_is_not_retried() -> None:
    loop = gates(command("true", max_retries=3, cwd="/nonexistent/dir")).retry_loop(DELEGATION)
    decision = await loop.check("x")
    assert decision.status == "failed" and "could not run" in (decision.feedback or "")


async def test_run_with_retries_calls_back_with_the_feedback() -> None:
    prompts: list[str] = []

    async def redo(feedback: str) -> str:
        prompts.append(feedback)
        return "A much longer answer that explains the whole retry policy."

    decision, output = await run_with_retries(
        gates(command(MIN_LENGTH, max_retries=1)), DELEGATION, redo
    )
    assert decision.passed and output.startswith("A much longer")
    assert prompts == ["Output is too short (15 chars)."]


@pytest.fixture
def llm(monkeypatch: pytest.MonkeyPatch) -> Iterator[ScriptedLLM]:
    monkeypatch.setenv("HOOKGATE_TEST_GATE_KEY", "gate-key")
    with ScriptedLLM(api_key="gate-key") as server:
        yield server


async def test_agent_gate_rejection_becomes_the_retry_prompt(llm: ScriptedLLM) -> None:
    llm.script(text("REJECTED: cover the backoff delay"), text("APPROVED"))
    settings = Settings(ssrf_allowlist=("127.0.0.1/32",))
    services = Services(settings)
    agent_gate = {
        "event": "delegation.completed",
        "type": "agent",
        "agent": "quality-reviewer",
        "max_retries": 2,
        "model": "haiku",
        "base_url": llm.anthropic_url,
        "api_key_env": "HOOKGATE_TEST_GATE_KEY",
    }
    loop = gates(agent_gate, services=services).retry_loop(DELEGATION)
    first = await loop.check("v1")
    assert first.should_retry and first.retry_prompt == "cover the backoff delay"
    assert "<<<OUTPUT" in llm.requests[0].user and "v1" in llm.requests[0].user
    second = await loop.check("v2 with backoff")
    assert second.passed
    assert services.http_client is not None
    await services.http_client.aclose()


async def test_agent_gate_garbage_fails_without_retry(llm: ScriptedLLM) -> None:
    llm.script(text("Hmm, mostly fine?"))
    services = Services(Settings(ssrf_allowlist=("127.0.0.1/32",)))
    agent_gate = {
        "type": "agent",
        "agent": "r",
        "max_retries": 2,
        "model": "haiku",
        "base_url": llm.anthropic_url,
        "api_key_env": "HOOKGATE_TEST_GATE_KEY",
    }
    decision = await gates(agent_gate, services=services).retry_loop(DELEGATION).check("x")
    assert decision.status == "failed" and "APPROVED" in (decision.feedback or "")
    assert services.http_client is not None
    await services.http_client.aclose()


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ([], "non-empty list"),
        ([{"type": "comand", "command": "x"}], 'use "command" or "agent" exactly'),
        ([{"type": "command"}], "needs the command"),
        ([{"type": "agent"}], "reviewer agent's key"),
        ([{"type": "command", "command": "x", "max_retries": -1}], "0 to 10"),
        ([{"type": "command", "command": "x", "timeout_seconds": 0}], "positive number"),
        ([{"type": "command", "command": "x", "block_on_failure": "yes"}], "true or false"),
        ([{"type": "command", "command": "x", "event": "pre_tool_use"}], "delegation.completed"),
        ([{"type": "command", "command": "x", "retries": 1}], "retries: unknown field"),
    ],
)
def test_gate_validation_names_entry_and_field(raw: list[Any], message: str) -> None:
    with pytest.raises(GateConfigError, match=message):
        parse_gates(raw)
