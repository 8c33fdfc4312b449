"""Attacks on shadow mode, against a real ``hookgate serve`` process on loopback: a viewer
key that promotes, tool input that says ``mode: enforce``, a shadow hook that rewrites,
raises, hangs or answers megabytes, and a secret in a shadow hook's reason.

Each test fails where the attack works: the hook decides, its breaker or someone else's
opens, an enforce hook or another tenant is refused, the answer is unbounded, the secret is
readable.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from tests.server.conftest import ALLOW_TEST_HOOKS
from tests.server.gateway_process import GatewayProcess
from tests.server.wsutil import fails, open_ws
from tests.support.waiting import wait_until

pytestmark = pytest.mark.timeout(240)

SECRET = "REASON-SECRET-42"


@dataclass
class Served:
    gateway: GatewayProcess
    a_viewer: str
    a_operator: str
    a_admin: str
    b_operator: str
    b_admin: str


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    gateway = GatewayProcess(
        tmp_path_factory.mktemp("attack-shadow") / "data",
        args=ALLOW_TEST_HOOKS,
    ).start()
    try:
        yield Served(
            gateway=gateway,
            a_viewer=gateway.create_key("tenant-a", "viewer"),
            a_operator=gateway.create_key("tenant-a", "operator"),
            a_admin=gateway.create_key("tenant-a", "admin"),
            b_operator=gateway.create_key("tenant-b", "operator"),
            b_admin=gateway.create_key("tenant-b", "admin"),
        )
    finally:
        gateway.stop()


def create(served: Served, tool: str, fn: str, *, key: str | None = None, **fields: Any) -> str:
    body = {"event": "pre_tool_use", "handler_type": "callable", "scope": "tenant",
            "matcher": f"^{tool}$", "config": {"callable": f"tests.server.hookfns:{fn}"},
            **fields}
    answer = served.gateway.rest("POST", "/api/v1/hooks", key or served.a_admin, json=body)
    assert answer.status_code == 201, answer.text
    hook_id: str = answer.json()["hookId"]
    return hook_id


def dispatch(served: Served, tool: str, tool_input: Any = None, *, key: str | None = None,
             **extra: Any) -> dict[str, Any]:
    body = {"event": "pre_tool_use",
            "input": {"tool_name": tool, "tool_input": tool_input or {"cmd": "ls"}, **extra}}
    answer = served.gateway.rest("POST", "/api/v1/dispatch", key or served.a_operator, json=body)
    assert answer.status_code == 200, answer.text
    outcome: dict[str, Any] = answer.json()
    return outcome


def hook(served: Served, hook_id: str) -> dict[str, Any]:
    answer = served.gateway.rest("GET", f"/api/v1/hooks/{hook_id}", served.a_admin)
    assert answer.status_code == 200, answer.text
    found: dict[str, Any] = answer.json()["hook"]
    return found


def rows(served: Served, hook_id: str, count: int, key: str | None = None) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []

    def enough() -> bool:
        nonlocal found
        answer = served.gateway.rest("GET", f"/api/v1/executions?hookId={hook_id}",
                                     key or served.a_admin)
        found = answer.json()["executions"]
        return len(found) >= count

    wait_until(enough, f"{count} rows of hook {hook_id}")
    return found


def test_a_viewer_key_cannot_promote_or_change_the_mode(served: Served) -> None:
    """viewer: promotes a shadow hook (WebSocket and REST), or patches its mode."""
    hook_id = create(served, "viewer_target", "block", mode="shadow")
    gateway = served.gateway
    with open_ws(gateway.ws_url, served.a_viewer) as ws:
        fails(ws, "hooks.promote", {"hookId": hook_id}, "UNAUTHORIZED")
        fails(ws, "hooks.update", {"hookId": hook_id, "updates": {"mode": "enforce"}},
              "UNAUTHORIZED")
    assert gateway.rest("POST", f"/api/v1/hooks/{hook_id}/promote", served.a_viewer
                        ).status_code == 403
    assert gateway.rest("PATCH", f"/api/v1/hooks/{hook_id}", served.a_viewer,
                        json={"mode": "enforce"}).status_code == 403
    # An operator may promote, never change anything else (nor demote).
    with open_ws(gateway.ws_url, served.a_operator) as ws:
        fails(ws, "hooks.update", {"hookId": hook_id, "updates": {"mode": "enforce"}},
              "UNAUTHORIZED")
    assert hook(served, hook_id)["mode"] == "shadow"
    assert dispatch(served, "viewer_target")["decision"] == "allow"


def test_another_tenant_cannot_promote_a_shadow_hook(served: Served) -> None:
    """tenant: tenant B's operator and admin promote tenant A's shadow hook by its id."""
    hook_id = create(served, "other_tenant", "block", mode="shadow")
    for key in (served.b_operator, served.b_admin):
        answer = served.gateway.rest("POST", f"/api/v1/hooks/{hook_id}/promote", key)
        assert answer.status_code == 404, answer.text
    assert hook(served, hook_id)["mode"] == "shadow"


@pytest.mark.parametrize(
    "tool_input",
    [
        {"cmd": "please block", "mode": "enforce"},
        {"cmd": "please block\nmode: enforce"},
        {"cmd": '{"mode": "enforce", "hookId": "*"} please block'},
    ],
)
def test_tool_input_saying_mode_enforce_changes_nothing(
    served: Served, tool_input: dict[str, Any]
) -> None:
    """tool: the tool input carries ``mode: enforce`` (as a field, as YAML, as JSON) next to
    what makes the shadow hook block; top-level dispatch fields try it too."""
    hook_id = create(served, f"inband_{abs(hash(str(tool_input)))}", "obey_input",
                     mode="shadow")
    tool = hook(served, hook_id)["matcher"].strip("^$")
    outcome = dispatch(served, tool, tool_input, mode="enforce", hook_mode="enforce")
    assert outcome["decision"] == "allow" and outcome["reason"] is None
    (entry,) = [t for t in outcome["trace"] if t["hook_id"] == hook_id]
    assert (entry["mode"], entry["decision"]) == ("shadow", "would_block")
    assert hook(served, hook_id)["mode"] == "shadow"


def test_a_shadow_rewrite_reaches_neither_the_agent_nor_later_hooks(served: Served) -> None:
    """tool: the input makes a shadow hook rewrite the call to ``rm -rf /`` and inject
    ``mode: enforce`` as context; an enforce hook blocks only the original input."""
    create(served, "rewrite_target", "obey_input", mode="shadow", priority=100)
    create(served, "rewrite_target", "block_rm_only", priority=1)
    outcome = dispatch(served, "rewrite_target", {"cmd": "please rewrite"})
    assert outcome["decision"] == "allow", outcome["reason"]
    assert outcome["updated_input"] is None and outcome["additional_context"] == []
    (entry,) = [t for t in outcome["trace"] if t["mode"] == "shadow"]
    assert entry["decision"] == "would_allow" and entry["details"]["would_rewrite"] is True


def test_failing_shadow_hooks_block_nothing_and_trip_no_breaker(served: Served) -> None:
    """tenant: shadow hooks that raise, time out and hang (a plain function holding its
    worker) run on every call; the enforce hook of the same tool, the hooks' own breakers,
    and tenant B are untouched."""
    failing = [
        create(served, "flaky", "fail", mode="shadow"),
        create(served, "flaky", "slow_forever", mode="shadow", timeout_ms=50),
        create(served, "flaky", "stall", mode="shadow", timeout_ms=50),
    ]
    guard = create(served, "flaky", "allow", name="flaky-guard")
    create(served, "flaky", "allow", key=served.b_admin, name="b-guard")
    started = time.monotonic()
    # Past the breaker's 5 faults, and past the 8 stuck workers a tenant may have: the stalls
    # hold theirs for 3 s, so they would fill tenant A's cap if they shared the pool.
    for _ in range(10):
        outcome = dispatch(served, "flaky", {"cmd": "ls", "seconds": 3})
        assert outcome["decision"] == "allow", outcome["reason"]
        decided = {t["hook_id"]: t["decision"] for t in outcome["trace"]}
        assert decided[guard] == "allow"
        assert {decided[h] for h in failing} == {"would_block"}
        b_outcome = dispatch(served, "flaky", key=served.b_operator)
        assert b_outcome["decision"] == "allow", b_outcome["reason"]
        assert [t["decision"] for t in b_outcome["trace"]] == ["allow"]
    # Each call waited for the shadow hooks' own 50 ms timeouts, not for the stalls.
    assert time.monotonic() - started < 30
    for hook_id in [*failing, guard]:
        assert hook(served, hook_id)["breaker"]["state"] == "closed"
    metrics = served.gateway.rest("GET", "/metrics")  # the master key
    assert metrics.status_code == 200
    stuck = [line for line in metrics.text.splitlines()
             if line.startswith("hookgate_hook_threads_stuck ")]
    assert stuck and all(float(line.rsplit(" ", 1)[1]) == 0 for line in stuck), stuck

    def shadow_workers_free() -> bool:
        text = served.gateway.rest("GET", "/metrics").text
        lines = [line for line in text.splitlines()
                 if line.startswith("hookgate_shadow_hook_threads_stuck ")]
        return bool(lines) and all(float(line.rsplit(" ", 1)[1]) == 0 for line in lines)

    # The stalls release their shadow workers after 3 s; the tests after this one share the
    # tenant, whose shadow hooks would otherwise be refused (TooManyStuck) until then.
    wait_until(shadow_workers_free, "the stalled shadow workers are released", 30)


def test_a_shadow_hooks_huge_answer_is_bounded(served: Served) -> None:
    """tenant: a shadow hook answers a megabyte of reason, context and rewritten input."""
    hook_id = create(served, "huge", "huge", mode="shadow")
    answer = served.gateway.rest(
        "POST", "/api/v1/dispatch", served.a_operator,
        json={"event": "pre_tool_use", "input": {"tool_name": "huge", "tool_input": {}}},
    )
    assert answer.status_code == 200
    assert len(answer.content) < 16_384, len(answer.content)
    outcome = answer.json()
    assert outcome["decision"] == "allow" and outcome["updated_input"] is None
    (entry,) = [t for t in outcome["trace"] if t["hook_id"] == hook_id]
    assert entry["decision"] == "would_block"
    assert entry["details"]["would_add_context"] == 1
    (row,) = rows(served, hook_id, 1)
    assert len(row["reason"]) <= 256 and row["decision"] == "would_block"


def test_a_secret_in_a_shadow_reason_is_redacted(served: Served) -> None:
    """tool: a shadow hook's reason quotes a secret from the call; audit readers see it
    redacted, in the execution row and in the dispatch record (an admin alone reads the
    sealed full text, as for any reason)."""
    hook_id = create(served, "leak", "leaky", mode="shadow")
    outcome = dispatch(served, "leak")
    (row,) = rows(served, hook_id, 1, served.a_viewer)
    assert SECRET not in str(row) and "[REDACTED]" in row["reason"]
    (full,) = rows(served, hook_id, 1, served.a_admin)
    assert SECRET in str(full["error_detail"])
    record = served.gateway.rest(
        "GET", f"/api/v1/dispatches/{outcome['dispatch_id']}", served.a_viewer
    ).json()["dispatch"]
    assert SECRET not in str(record)
    (step,) = record["hooks"]
    assert step["mode"] == "shadow" and "[REDACTED]" in step["reason"]
