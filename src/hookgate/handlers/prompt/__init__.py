"""Model-backed hooks: the `prompt` handler (`handler`), the `agent` handler that extends it
with tools (`agent`), monthly token budgets (`budget`), the decision cache and per-turn
counters (`state`) and their Redis twins shared by replicas (`redis_state`). Model providers
live in :mod:`hookgate.llm`."""
