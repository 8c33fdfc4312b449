"""Attacks on the monthly token budget of prompt hooks, on a real ``hookgate serve``."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from pathlib import Path

import httpx
from tests.server.gateway_process import GatewayProcess
from tests.support.llm_server import ScriptedLLM, decide

from hookgate.store import Caller, open_store

BUDGET = 1200
USAGE = (200, 50)  # 250 tokens billed per model call
AGENTS = 12
TOOL = {"event": "pre_tool_use", "input": {"tool_name": "exec", "tool_input": {"cmd": "ls"}}}


async def _set_budget(data_dir: Path, tenant: str, total: int) -> None:
    store = await open_store(data_dir=str(data_dir))
    try:
        await store.set_budget_total(Caller.master_scope(), tenant, total)
    finally:
        await store.close()


async def _dispatch_all(gateway: GatewayProcess, key: str, count: int) -> list[httpx.Response]:
    async with httpx.AsyncClient(base_url=gateway.url, timeout=60) as client:
        return await asyncio.gather(
            *(
                client.post(
                    "/api/v1/dispatch",
                    json={**TOOL, "input": {**TOOL["input"], "turn_id": f"t{n}"}},
                    headers=gateway.headers(key),
                )
                for n in range(count)
            )
        )


def test_concurrent_agents_cannot_overrun_the_monthly_budget(tmp_path: Path) -> None:
    """tenant: twelve agents of one tenant fire prompt-hook events at once, so that every
    call passes the budget check before any is charged, and the tenant spends far more
    tokens than its monthly budget (seen: a 1,200-token budget overrun by 960)."""
    slow = replace(decide("allow", "fine", usage=USAGE), delay_s=0.5)
    with ScriptedLLM(default=slow) as llm:
        spec = f"name=work,format=openai,base_url={llm.openai_url},api_key_env=WORK_KEY"
        gateway = GatewayProcess(
            tmp_path / "data",
            args=("--llm-provider", spec),
            env={"HOOKGATE_SSRF_ALLOWLIST": "127.0.0.0/8", "WORK_KEY": "k"},
        ).start()
        try:
            admin = gateway.create_key("tenant-a", "admin")
            asyncio.run(_set_budget(tmp_path / "data", "tenant-a", BUDGET))
            hook = {
                "event": "pre_tool_use", "handler_type": "prompt", "scope": "tenant",
                "name": "judge", "matcher": "^exec$",
                "config": {"prompt_template": "Block destructive commands.",
                           "provider": "work", "model": "gpt-4o-mini", "max_tokens": 64},
            }
            assert gateway.rest("POST", "/api/v1/hooks", admin, json=hook).status_code == 201
            answers = asyncio.run(_dispatch_all(gateway, admin, AGENTS))
        finally:
            gateway.stop()
        spent = len(llm.requests) * sum(USAGE)
    outcomes = [answer.json() for answer in answers]
    assert all(answer.status_code == 200 for answer in answers), outcomes
    allowed = [o for o in outcomes if o["decision"] == "allow"]
    assert len(allowed) == len(llm.requests) < AGENTS
    # A call's cap here: 64 output tokens plus the prompt counted at one token per 2 bytes.
    one_call_cap = 64 + 700
    assert spent <= BUDGET + one_call_cap
    refused = [o for o in outcomes if o["decision"] != "allow"]
    assert refused and all(o["decision"] == "block" for o in refused)  # fails closed
    assert all("budget" in (o.get("reason") or "") for o in refused)
