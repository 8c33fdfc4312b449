"""The agent (reviewer) handler against the scripted model server."""

from __future__ import annotations

from typing import Any

import pytest
from tests.handlers.conftest import KEY_ENV, LOOPBACK
from tests.support.llm_server import ScriptedLLM, text

from hookgate import Engine, Settings
from hookgate.handlers.base import Services
from hookgate.handlers.prompt.agent import AgentHandler, ReviewRequest, in_review, parse_review
from hookgate.llm.budget import MemoryBudgetStore
from hookgate.outcome import MalformedAnswer, Outcome

DELEGATION = {
    "output": "func Parse(b []byte) error { return nil }",
    "task": "Write a Go function to parse JSON",
    "source_agent": "orchestrator",
    "target_agent": "backend-dev",
    "user_id": "u-7",
    "tenant_id": "tenant-a",
}


def reviewer(llm: ScriptedLLM, provider: str = "anthropic", **config: Any) -> dict[str, Any]:
    return {
        "event": "subagent_stop",
        "handler_type": "agent",
        "name": "code-review",
        "config": {
            "agent": "code-reviewer",
            "model": "sonnet" if provider == "anthropic" else "gpt-4o-mini",
            "base_url": llm.anthropic_url if provider == "anthropic" else llm.openai_url,
            "api_key_env": KEY_ENV,
            **config,
        },
    }


async def fire(engine: Engine, **payload: Any) -> Outcome:
    return await engine.fire("delegation.completed", {**DELEGATION, **payload}, wait=True)


@pytest.mark.parametrize("provider", ["anthropic", "openai"])
async def test_approved_allows_and_the_prompt_is_the_structured_gate_prompt(
    engine: Engine, llm: ScriptedLLM, budget: MemoryBudgetStore, provider: str
) -> None:
    llm.script(text("APPROVED - clean and idiomatic", usage=(250, 6)))
    engine.add(reviewer(llm, provider))
    outcome = await fire(engine)
    entry = outcome.trace[0]
    assert entry.decision == "allow"
    assert entry.details["reason"] == "clean and idiomatic"
    assert entry.details["review"] == "approved" and entry.details["prompt_tokens"] == 256
    sent = llm.requests[0]
    assert sent.forced_tool is None and "tools" not in sent.json
    prompt = sent.user
    assert prompt.startswith("[Quality Gate Evaluation]")
    assert "Original task: Write a Go function to parse JSON" in prompt
    assert "Source agent: orchestrator" in prompt and "Target agent: backend-dev" in prompt
    assert DELEGATION["output"] in prompt.split("<<<OUTPUT ")[1]
    assert "REJECTED: <specific feedback>" in prompt
    assert (await budget.check("tenant-a")).remaining == 1_000_000 - 256


async def test_rejected_blocks_with_the_feedback(engine: Engine, llm: ScriptedLLM) -> None:
    llm.script(text("REJECTED: handle malformed input and add tests"))
    engine.add(reviewer(llm))
    outcome = await fire(engine)
    entry = outcome.trace[0]
    assert entry.decision == "block"
    assert entry.details["feedback"] == "handle malformed input and add tests"
    # the caller waits (delegation.completed): the reviewer's rejection blocks the result
    assert outcome.decision == "block"
    assert outcome.reason == "handle malformed input and add tests"


async def test_rejected_blocks_a_dry_run_on_a_blocking_check(
    engine: Engine, llm: ScriptedLLM
) -> None:
    llm.script(text("REJECTED: no error handling"))
    outcome = await engine.test(reviewer(llm), DELEGATION)
    assert outcome.trace[0].decision == "block"
    assert outcome.trace[0].details["reason"] == "no error handling"


GARBAGE = [
    "Looks good to me!",
    "approved",
    "REJECTED",
    "REJECTED:   ",
    "**APPROVED**",
    "APPROVEDX",
    "",
    "I think REJECTED: x",
]


@pytest.mark.parametrize("answer", GARBAGE)
async def test_anything_else_is_malformed(engine: Engine, llm: ScriptedLLM, answer: str) -> None:
    llm.script(text(answer))
    engine.add(reviewer(llm))
    outcome = await fire(engine)
    entry = outcome.trace[0]
    assert entry.decision == "error"
    assert "malformed answer" in (entry.error or "")
    assert "APPROVED" in (entry.error or "")


def test_parse_review() -> None:
    assert parse_review("APPROVED").approved
    assert parse_review("  APPROVED\nNice work.\n").feedback == "Nice work."
    rejected = parse_review("REJECTED: add tests\n- for nil input")
    assert not rejected.approved and rejected.feedback == "add tests\n- for nil input"
    with pytest.raises(MalformedAnswer):
        parse_review("REJECTED - no colon")


async def test_missing_output_is_an_error(engine: Engine, llm: ScriptedLLM) -> None:
    engine.add(reviewer(llm))
    outcome = await engine.fire("subagent_stop", {"task": "x"}, wait=True)
    assert "'output' field" in (outcome.trace[0].error or "")
    assert llm.requests == []


async def test_reviewer_agents_supply_defaults(llm: ScriptedLLM) -> None:
    agents = {
        "code-reviewer": {
            "prompt": "You are a strict Go reviewer.",
            "model": "gpt-4o-mini",
            "base_url": llm.openai_url,
            "api_key_env": KEY_ENV,
        }
    }
    engine = Engine(settings=LOOPBACK, services=Services(LOOPBACK, reviewer_agents=agents))
    engine.add(
        {"event": "subagent_stop", "handler_type": "agent", "config": {"agent": "code-reviewer"}}
    )
    llm.script(text("APPROVED"))
    await fire(engine)
    await engine.aclose()
    assert llm.requests[0].protocol == "openai"
    assert llm.requests[0].system == "You are a strict Go reviewer."


async def test_reviews_never_recurse() -> None:
    """A reviewer whose own run fires subagent_stop does not trigger another review."""
    calls: list[ReviewRequest] = []
    inner: list[Outcome] = []

    async def runner(request: ReviewRequest) -> str:
        calls.append(request)
        assert in_review()
        inner.append(await engine.fire("subagent_stop", {**DELEGATION, "output": "sub"}, wait=True))
        return "APPROVED"

    engine = Engine(services=Services(Settings(), reviewer_runner=runner))
    engine.add(
        {"event": "subagent_stop", "handler_type": "agent", "config": {"agent": "self-reviewer"}}
    )
    outcome = await fire(engine)
    await engine.aclose()
    assert outcome.trace[0].decision == "allow"
    assert len(calls) == 1
    assert inner[0].trace[0].details["skipped"] == "inside a reviewer run (no recursion)"
    assert not in_review()


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ({"agent": 3}, "agent must be a string"),
        ({"model": "haiku", "provider": "openai"}, "served by anthropic"),
        ({"tools": []}, "unknown agent config key"),
    ],
)
def test_config_validation(config: dict[str, Any], message: str) -> None:
    assert any(message in p for p in AgentHandler.validate_config(config))
