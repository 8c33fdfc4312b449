"""Prompt hook: a decision-cache hit against a miss (a call to a loopback model server).

The scripted model server (tests/support/llm_server.py) runs on its own thread and answers
at once, so the miss is close to hookgate's own cost of a model call: building the request,
the guarded HTTP round trip, parsing ``decide``, the budget check and deduction. Measured at
the handler, and once more through ``engine.fire`` for the hit.
"""

from __future__ import annotations

import asyncio
import itertools
import os
from typing import Any

from tests.support.llm_server import ScriptedLLM, decide

from bench.harness import Row, interleaved_medians_us
from hookgate import Engine, Settings
from hookgate.definition_model import validate_definition
from hookgate.events import get_event
from hookgate.handlers.base import Invocation, Services
from hookgate.handlers.prompt.handler import PromptHandler
from hookgate.llm.budget import MemoryBudgetStore

KEY_ENV = "HOOKGATE_BENCH_LLM_KEY"


async def _measure(llm: ScriptedLLM, quick: bool) -> dict[str, float]:
    settings = Settings(ssrf_allowlist=("127.0.0.1/32",))
    services = Services(settings, budget_store=MemoryBudgetStore(default_total=10**15))
    hook: dict[str, Any] = {
        "event": "pre_tool_use",
        "handler_type": "prompt",
        "matcher": "^exec$",
        "config": {
            "prompt_template": "Block destructive shell commands.",
            "model": "gpt-4o-mini",
            "base_url": llm.openai_url,
            "api_key_env": KEY_ENV,
            "max_invocations_per_turn": 10**9,
        },
    }
    definition = validate_definition(hook, default_scope="global")
    handler = PromptHandler(services)
    spec = get_event("pre_tool_use")
    cached = {"tool_name": "exec", "tool_input": {"cmd": "ls"}, "session_id": "bench"}
    fresh = itertools.count()
    engine = Engine(settings=settings, services=services)
    engine.add(definition)

    async def miss() -> None:
        n = next(fresh)
        payload = {**cached, "tool_input": {"cmd": f"ls {n}"}, "turn_id": str(n)}
        result = await handler.run(Invocation(definition, spec, payload, 5.0, services))
        assert result.details["prompt_cache"] == "miss"

    async def hit() -> None:
        result = await handler.run(Invocation(definition, spec, cached, 5.0, services))
        assert result.details["prompt_cache"] == "hit"

    async def engine_hit() -> None:
        outcome = await engine.fire("pre_tool_use", cached)
        assert outcome.trace[0].details["prompt_cache"] == "hit"

    await handler.run(Invocation(definition, spec, cached, 5.0, services))  # fill the cache
    result = await interleaved_medians_us(
        {"miss": miss, "hit": hit, "engine_hit": engine_hit}, samples=200 if quick else 2000
    )
    await handler.aclose()
    await engine.aclose()
    return result


def run(quick: bool = False) -> list[Row]:
    os.environ.setdefault(KEY_ENV, "bench-key")
    with ScriptedLLM(default=decide("allow", "read only")) as llm:
        result = asyncio.run(_measure(llm, quick))
    miss, hit, engine_hit = result["miss"], result["hit"], result["engine_hit"]
    baseline = "the same hook on a cache miss"
    return [
        Row("prompt", "prompt handler, cache miss (loopback model)", miss, "µs"),
        Row(
            "prompt",
            "prompt handler, decision-cache hit",
            hit,
            "µs",
            baseline,
            miss,
            "<= 0.1x",
            hit / miss <= 0.1,
        ),
        Row("prompt", "engine.fire, one prompt hook, cache hit", engine_hit, "µs", baseline, miss),
    ]
