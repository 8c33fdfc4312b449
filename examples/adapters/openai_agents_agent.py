"""An OpenAI Agents SDK agent guarded by hookgate:
``python -m examples.adapters.openai_agents_agent``."""

from __future__ import annotations

import asyncio

from agents import Agent, RunConfig, Runner, function_tool
from agents.testing import ScriptedModel
from agents.testing.model import assistant_message, function_call

from examples.adapters import DANGEROUS, engine, shell
from hookgate.adapters.openai_agents import HookgateRunHooks, guard_tools


async def main() -> None:
    hooks_engine = engine()
    # The SDK's offline model; drop `model=` to use OpenAI's.
    model = ScriptedModel(
        [
            [function_call("exec", {"cmd": DANGEROUS}, call_id="c1")],
            [function_call("exec", {"cmd": "ls"}, call_id="c2")],
            [assistant_message("done")],
        ]
    )
    agent = Agent(
        name="example",
        model=model,
        tools=guard_tools([function_tool(shell, name_override="exec")], hooks_engine),
    )
    hooks = HookgateRunHooks(hooks_engine)
    # The model input filter lets before_llm hooks rewrite the instructions too.
    config = RunConfig(call_model_input_filter=hooks.model_input_filter)
    result = await Runner.run(agent, "tidy up", hooks=hooks, run_config=config)
    for call in model.calls[1:]:
        outputs = [
            i for i in call.input if isinstance(i, dict) and i.get("type") == "function_call_output"
        ]
        print(f"model read: {outputs[-1]['output']}")
    print(f"answer: {result.final_output}")


if __name__ == "__main__":
    asyncio.run(main())
