"""Replay with rule hooks and shadow hooks, against a real gateway's records.

The gateway enforced a rule (two exec calls per session in a 30-day window); four calls came
in one session: two allowed, two blocked. A candidate that allows three changes exactly the third
(the rule's counter runs over the replayed traffic, on the recorded clock); a candidate
shadow hook is reported as what it would have done and changes nothing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tests.replay.replay_support import dispatch, replay_cli, wait_committed
from tests.server.gateway_process import GatewayProcess

pytestmark = pytest.mark.timeout(180)

LIVE_RULE = {
    "event": "pre_tool_use", "handler_type": "rule", "scope": "tenant", "tenant_id": "acme",
    "name": "exec-budget", "matcher": "^exec$",
    "config": {"limit": {"count": 2, "per": "session", "window_s": 2_592_000}},
}
CANDIDATE = """
hooks:
  - name: exec-budget
    event: pre_tool_use
    handler_type: rule
    matcher: "^exec$"
    config: {limit: {count: 3, per: session, window_s: 2592000}}
  - name: no-rm-watch
    event: pre_tool_use
    handler_type: callable
    mode: shadow
    matcher: "^exec$"
    config: {callable: "candidate_guards:no_rm", isolate: none}
"""
GUARDS = '''
def no_rm(event):
    if str(event.get("tool_input", {}).get("cmd", "")).startswith("rm"):
        return {"decision": "block", "reason": "rm is not allowed"}
    return None
'''


def test_rules_count_the_replayed_traffic_and_shadow_hooks_only_report(tmp_path: Path) -> None:
    gateway = GatewayProcess(tmp_path / "data", args=("--audit-mode", "sync")).start()
    try:
        created = gateway.rest("POST", "/api/v1/hooks", json=LIVE_RULE)
        assert created.status_code == 201, created.text
        key = gateway.create_key("acme", "operator")
        expected = ("allow", "allow", "block", "block")
        commands = ("ls", "rm -rf build", "make", "git status")
        ids = [
            dispatch(gateway, key, "exec", cmd, want)
            for cmd, want in zip(commands, expected, strict=True)
        ]
        wait_committed(gateway, gateway.master_key or "", ids)
    finally:
        gateway.stop()
    (tmp_path / "candidate_guards.py").write_text(GUARDS)
    candidate = tmp_path / "candidate.yaml"
    candidate.write_text(CANDIDATE)
    result = replay_cli("--config", str(candidate), "--data-dir", str(gateway.data_dir),
                        "--format", "json")
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["replayed"] == 4 and report["changed"] == 1, report
    (change,) = report["changes"]
    assert change["dispatch_id"] == ids[2] and (change["before"], change["after"]) == (
        "block", "allow")
    # The shadow hook saw every call: it would have blocked the rm, and decided nothing.
    assert report["shadow"] == {"no-rm-watch": {"abstain": 3, "would_block": 1}}
    # The same candidate without the shadow hook and with the live rule: no change at all.
    same = tmp_path / "same.yaml"
    same.write_text(CANDIDATE.split("  - name: no-rm-watch")[0].replace("count: 3", "count: 2"))
    again = json.loads(replay_cli("--config", str(same), "--data-dir", str(gateway.data_dir),
                                  "--format", "json").stdout)
    assert again["replayed"] == 4 and again["changed"] == 0 and again["shadow"] == {}
