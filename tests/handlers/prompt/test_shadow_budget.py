"""A shadow prompt hook spends the tenant's token budget like any, down to the floor it
leaves for the hooks that decide (real engine, scripted model server on loopback)."""

from __future__ import annotations

from tests.handlers.prompt.test_handler import fire, prompt_hook
from tests.support.llm_server import ScriptedLLM, decide

from hookgate import Engine
from hookgate.llm.budget import MemoryBudgetStore
from hookgate.llm.metered import SHADOW_FLOOR
from hookgate.shadow import SHADOW_SKIPPED

TOTAL = 10_000


async def test_a_shadow_prompt_hook_leaves_the_floor_to_enforce_hooks(
    engine: Engine, llm: ScriptedLLM, budget: MemoryBudgetStore
) -> None:
    llm.default = decide("block", "would refuse", usage=(10, 5))
    await budget.set_total("tenant-a", TOTAL)
    engine.add(prompt_hook(llm, name="judge-shadow", mode="shadow"))
    engine.add(prompt_hook(llm, name="judge", config={"prompt_template": "Allow everything."}))
    first = await fire(engine)
    shadow = {e.name: e for e in first.shadow}["judge-shadow"]
    assert shadow.decision == "would_block" and len(llm.requests) == 2
    # Down to just above the floor: one more shadow call would go below it.
    status = await budget.check("tenant-a")
    floor = int(TOTAL * SHADOW_FLOOR)
    await budget.deduct("tenant-a", status.remaining - floor - 10)
    second = await fire(engine, "cat notes", turn_id="t2")  # not a cached decision
    assert second.decision == "block"  # the enforce hook still ran, and decided
    assert [e.name for e in second.trace if e.mode == "enforce" and e.decision == "block"] == [
        "judge"
    ]
    skipped = {e.name: e for e in second.shadow}["judge-shadow"]
    assert skipped.decision == "error", (skipped.error, skipped.details)
    assert SHADOW_SKIPPED in skipped.details
    assert "keep the last 20%" in str(skipped.error)
    assert len(llm.requests) == 3  # the shadow hook's model was not called
