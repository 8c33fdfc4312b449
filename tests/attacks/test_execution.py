"""Attacks on hook execution, against a real gateway: what one tenant's hooks can take from
the hooks of the others."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest
from tests.server.conftest import ALLOW_TEST_HOOKS
from tests.server.gateway_process import GatewayProcess
from tests.server.wsutil import ok, open_ws


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayProcess]:
    served = GatewayProcess(
        tmp_path_factory.mktemp("gw-exec") / "data", args=ALLOW_TEST_HOOKS
    ).start()
    try:
        yield served
    finally:
        served.stop()


#: Each hook's circuit breaker opens after 5 timeouts, so the attacker defines many hooks that
#: let the chain go on at their timeout: 16 hooks fired 5 times leave 80 functions running,
#: more than the whole pool may hold stuck (64). Before the per-tenant bound, that left no
#: worker for anyone.
HOOKS = 16
DISPATCHES = 5


def test_one_tenants_stalling_hooks_leave_workers_for_the_other_tenants(
    gateway: GatewayProcess,
) -> None:
    """Attacker: tenant. A tenant admin defines a callable hook that never returns in time
    and fires it until every worker thread is stuck in it; another tenant's isolated hooks
    must still run (and answer what they answer, not a refusal)."""
    a_admin = gateway.create_key("tenant-a", "admin")
    b_admin = gateway.create_key("tenant-b", "admin")
    with open_ws(gateway.ws_url, a_admin) as ws:
        for number in range(HOOKS):
            ok(ws, "hooks.create", {
                "event": "pre_tool_use", "handler_type": "callable", "scope": "tenant",
                "name": f"stall-{number}", "matcher": "^stall$", "timeout_ms": 100,
                "on_timeout": "allow", "on_error": "allow",
                "config": {"callable": "tests.server.hookfns:stall"},
            })
    with open_ws(gateway.ws_url, b_admin) as ws:
        ok(ws, "hooks.create", {
            "event": "pre_tool_use", "handler_type": "callable", "scope": "tenant",
            "name": "checks", "matcher": "^ls$",
            "config": {"callable": "tests.server.hookfns:allow"},
        })
    answers: list[dict[str, Any]] = []

    def stall() -> None:
        with open_ws(gateway.ws_url, a_admin) as ws:
            answers.append(ok(ws, "hooks.dispatch", {"event": "pre_tool_use", "input": {
                "tool_name": "stall", "tool_input": {"seconds": 300}}}))

    callers = [threading.Thread(target=stall) for _ in range(DISPATCHES)]
    for caller in callers:
        caller.start()
    for caller in callers:
        caller.join(120)
    assert len(answers) == DISPATCHES
    with open_ws(gateway.ws_url, b_admin) as ws:
        outcome = ok(ws, "hooks.dispatch", {"event": "pre_tool_use", "input": {
            "tool_name": "ls"}})
    assert outcome["decision"] == "allow", outcome
    assert outcome["additional_context"] == ["checked by test hook"]
