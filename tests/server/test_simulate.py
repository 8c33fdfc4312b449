"""hooks.simulate: the whole chain's dry run, on a real gateway; roles and tenants hold."""

from __future__ import annotations

from typing import Any

from tests.server.conftest import Keys
from tests.server.gateway_process import GatewayProcess
from tests.server.wsutil import ok, open_ws, request

SAMPLE = {"tool_name": "Bash", "tool_input": {"command": "ls"}}


def _hook(ws: Any, name: str, fn: str, priority: int, **extra: Any) -> str:
    return str(ok(ws, "hooks.create", {
        "event": "pre_tool_use", "handler_type": "callable", "scope": "tenant", "name": name,
        "tenant_id": "tenant-a",
        "priority": priority, "config": {"callable": f"tests.server.hookfns:{fn}"}, **extra,
    })["hookId"])


def test_simulate_runs_every_hook_in_order(gateway: GatewayProcess, keys: Keys) -> None:
    with open_ws(gateway.ws_url, keys.a_admin) as ws:
        allow = _hook(ws, "sim-allow", "allow", 20)
        off = _hook(ws, "sim-off", "block", 15, enabled=False)
        other_tool = _hook(ws, "sim-write", "block", 12, matcher="Write")
        block = _hook(ws, "sim-block", "block", 10)
        before = ok(ws, "hooks.history", {"limit": 500})["executions"]
    with open_ws(gateway.ws_url, keys.a_operator) as ws:
        # An operator may simulate, but not run callable hooks (admins only): listed, not run.
        partial = ok(ws, "hooks.simulate", {"event": "pre_tool_use", "sampleEvent": SAMPLE})
        assert partial["complete"] is False
        mine = [h for h in partial["hooks"] if h["name"] == "sim-block"]
        assert mine and "admin role" in mine[0]["skipped"] and mine[0]["decision"] is None
    with open_ws(gateway.ws_url, keys.a_admin) as ws:
        result = ok(ws, "hooks.simulate", {"event": "pre_tool_use", "sampleEvent": SAMPLE})
        assert result["complete"] is True
        ours = [h for h in result["hooks"] if h["hookId"] in {allow, off, other_tool, block}]
        # A disabled hook is not part of the chain an event runs.
        assert [h["hookId"] for h in ours] == [allow, other_tool, block]
        by_id = {h["hookId"]: h for h in ours}
        assert by_id[allow]["decision"] == "allow"
        assert by_id[other_tool]["matched"] is False and by_id[other_tool]["matcher"] == "Write"
        assert by_id[block]["decision"] == "block"
        assert result["decision"] == "block"
        assert result["reason"] == "blocked by test hook on pre_tool_use"
        # A dry run of the disabled hook alone runs it.
        tested = ok(ws, "hooks.test", {"hookId": off, "sampleEvent": SAMPLE})["result"]
        assert tested["matched"] is True and tested["hookDecision"] == "block"
    with open_ws(gateway.ws_url, keys.a_admin) as ws:
        # No audit rows from simulations (a real dispatch is the barrier: rows commit in order).
        ok(ws, "hooks.dispatch", {"event": "post_tool_use", "input": {}, "wait": True})
        after = ok(ws, "hooks.history", {"limit": 500})["executions"]
        assert {r["id"] for r in after} - {r["id"] for r in before} <= {
            r["id"] for r in after if r["event"] == "post_tool_use"
        }
        for hook_id in (allow, off, other_tool, block):
            ok(ws, "hooks.delete", {"hookId": hook_id})


def test_simulate_respects_roles_and_tenants(gateway: GatewayProcess, keys: Keys) -> None:
    with open_ws(gateway.ws_url, keys.a_admin) as ws:
        hook_id = _hook(ws, "sim-private", "block", 1)
    try:
        with open_ws(gateway.ws_url, keys.a_viewer) as ws:
            refused = request(ws, "hooks.simulate", {"event": "pre_tool_use"})
            assert refused["error"]["code"] == "UNAUTHORIZED"
        with open_ws(gateway.ws_url, keys.b_admin) as ws:
            theirs = ok(ws, "hooks.simulate", {"event": "pre_tool_use", "sampleEvent": {
                **SAMPLE, "tenant_id": "tenant-a",  # the sample cannot pick the tenant
            }})
            assert hook_id not in {h["hookId"] for h in theirs["hooks"]}
            named = request(ws, "hooks.simulate", {
                "event": "pre_tool_use", "tenantId": "tenant-a",
            })
            assert named["error"]["code"] == "UNAUTHORIZED"
        with open_ws(gateway.ws_url, keys.master) as ws:
            master = ok(ws, "hooks.simulate", {
                "event": "pre_tool_use", "tenantId": "tenant-a", "sampleEvent": SAMPLE,
            })
            assert hook_id in {h["hookId"] for h in master["hooks"]}
    finally:
        with open_ws(gateway.ws_url, keys.a_admin) as ws:
            ok(ws, "hooks.delete", {"hookId": hook_id})


def test_chain_lists_each_events_hooks_in_order(gateway: GatewayProcess, keys: Keys) -> None:
    with open_ws(gateway.ws_url, keys.a_admin) as ws:
        late = _hook(ws, "chain-late", "allow", 1, matcher="Bash", if_expr="true")
        early = _hook(ws, "chain-early", "allow", 50)
    with open_ws(gateway.ws_url, keys.master) as ws:
        fleet = _hook(ws, "chain-global", "allow", 5, scope="global")
    try:
        with open_ws(gateway.ws_url, keys.a_viewer) as ws:
            chains = ok(ws, "hooks.chain", {})
            assert chains["tenantId"] == "tenant-a"
            pre = next(e for e in chains["events"] if e["event"] == "pre_tool_use")
            ids = [h["hookId"] for h in pre["hooks"]]
            assert ids.index(early) < ids.index(late)
            entry = next(h for h in pre["hooks"] if h["hookId"] == late)
            assert entry["matcher"] == "Bash" and entry["ifExpr"] == "true"
            assert fleet in ids  # globals are part of every tenant's chain
        with open_ws(gateway.ws_url, keys.b_admin) as ws:
            theirs = ok(ws, "hooks.chain", {})
            seen = {h["hookId"] for e in theirs["events"] for h in e["hooks"]}
            assert early not in seen and late not in seen
            assert request(ws, "hooks.chain", {"tenantId": "tenant-a"})["error"]["code"] == (
                "UNAUTHORIZED"
            )
    finally:
        with open_ws(gateway.ws_url, keys.master) as ws:
            for hook_id in (late, early, fleet):
                ok(ws, "hooks.delete", {"hookId": hook_id})
