"""Attacks on approvals, run against a real ``hookgate serve`` process (SQLite; the
self-approval attack also on PostgreSQL).

The tenant's chain for ``exec``: "ask first" (priority 100) asks a person; "no rm" (priority
10) blocks any command containing ``rm``. The agent holds an operator key (in the Claude Code
gateway setup that key is in the agent's environment); people hold approver keys.
"""

from __future__ import annotations

import subprocess
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from tests.server.conftest import start_gateway
from tests.server.gateway_process import HOOKGATE, REPO, GatewayProcess, gateway_env
from tests.server.panel_support import (  # noqa: F401 - browser, page: fixtures
    TEST_SECRET_KEY,
    browser,
    page,
    sign_in,
)
from tests.server.test_replicas_redis import database  # noqa: F401 - fixture
from tests.support.waiting import wait_until

from hookgate.client import GatewayClient
from hookgate.client.errors import GatewayError

pytestmark = pytest.mark.timeout(180)

TENANT = "tenant-a"


@dataclass
class Served:
    gateway: GatewayProcess
    agent: str  # operator key: the agent's own
    agent_twin: str  # another operator key the same agent uses in the same session
    approver: str
    viewer: str
    other_tenant: str  # admin of tenant-b
    other_approver: str  # approver of tenant-b


def chain(gateway: GatewayProcess, tenant: str) -> None:
    """The tenant's exec chain: a person first, then a guard that blocks ``rm``."""
    for hook in (
        {
            "name": "ask first",
            "priority": 100,
            "config": {"callable": "tests.server.hookfns:ask"},
            "approval": {"timeout_ms": 120_000},
        },
        {
            "name": "no rm",
            "priority": 10,
            "if_expr": "tool_input.cmd.contains('rm')",
            "config": {"callable": "tests.server.hookfns:block"},
        },
    ):
        created = gateway.rest(
            "POST",
            "/api/v1/hooks",
            json={
                "event": "pre_tool_use",
                "handler_type": "callable",
                "scope": "tenant",
                "tenant_id": tenant,
                "matcher": "^exec$",
                **hook,
            },
        )
        assert created.status_code == 201, created.text


def keys_for(gateway: GatewayProcess) -> Served:
    return Served(
        gateway=gateway,
        agent=gateway.create_key(TENANT, "operator"),
        agent_twin=gateway.create_key(TENANT, "operator"),
        approver=gateway.create_key(TENANT, "approver"),
        viewer=gateway.create_key(TENANT, "viewer"),
        other_tenant=gateway.create_key("tenant-b", "admin"),
        other_approver=gateway.create_key("tenant-b", "approver"),
    )


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    gateway = start_gateway(tmp_path_factory.mktemp("attack-approvals"))
    try:
        chain(gateway, TENANT)
        yield keys_for(gateway)
    finally:
        gateway.stop()


def ask(
    gateway: GatewayProcess, key: str, cmd: str, session: str | None = None
) -> str:
    """Dispatch ``exec`` with ``key``; the chain asks a person: the approval id."""
    payload: dict[str, Any] = {"tool_name": "exec", "tool_input": {"cmd": cmd}}
    if session is not None:
        payload["session_id"] = session
    answer = gateway.rest(
        "POST",
        "/api/v1/dispatch",
        key,
        json={"event": "pre_tool_use", "input": payload, "approvalWaitS": 0},
    )
    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert body["decision"] == "block" and body["approval"]["status"] == "pending", body
    return str(body["approval"]["id"])


def decide(
    gateway: GatewayProcess, key: str, approval_id: str, verb: str = "approve", **body: Any
) -> Any:
    return gateway.rest("POST", f"/api/v1/approvals/{approval_id}/{verb}", key, json=body)


def outcome(gateway: GatewayProcess, key: str, approval_id: str) -> dict[str, Any]:
    answer = gateway.rest("GET", f"/api/v1/approvals/{approval_id}/outcome?timeoutS=0", key)
    assert answer.status_code == 200, answer.text
    return dict(answer.json())


def status(gateway: GatewayProcess, approval_id: str) -> str:
    view = gateway.rest("GET", f"/api/v1/approvals/{approval_id}").json()["approval"]
    return str(view["status"])


# -- item 1: an agent approves its own approval --------------------------------------------------


def test_the_asking_key_cannot_approve_its_own_approval(served: Served) -> None:
    """tenant (the agent's operator key): dispatches, gets ``pending``, approves its own
    approval over REST and waits for ``allow``."""
    gateway = served.gateway
    approval_id = ask(gateway, served.agent, "deploy")
    refused = decide(gateway, served.agent, approval_id)
    assert refused.status_code == 403, refused.text
    assert "the key that asked" in refused.json()["error"]["message"]
    assert status(gateway, approval_id) == "pending"
    assert outcome(gateway, served.agent, approval_id)["decision"] == "block"
    # A person's key decides it.
    assert decide(gateway, served.approver, approval_id).status_code == 200
    assert outcome(gateway, served.agent, approval_id)["decision"] == "allow"


def test_the_asking_key_cannot_deny_or_approve_over_the_websocket(served: Served) -> None:
    """tenant (the agent's operator key): the same self-approval through the WebSocket
    ``approvals.approve`` method, while its own dispatch waits on the same connection's key."""
    gateway = served.gateway
    approval_id = ask(gateway, served.agent, "deploy over ws")
    with GatewayClient(gateway.url, served.agent, timeout=30) as client:
        with pytest.raises(GatewayError) as refused:
            client.approve(approval_id, comment="looks fine to me")
        assert refused.value.code == "UNAUTHORIZED"
        with pytest.raises(GatewayError):
            client.deny(approval_id)
    assert status(gateway, approval_id) == "pending"


def test_another_key_of_the_same_agent_session_cannot_approve(served: Served) -> None:
    """tenant (a second operator key in the agent's environment): the agent asks with one key
    and approves with another key it also used in the same agent session."""
    gateway = served.gateway
    session = f"sess-{time.monotonic_ns()}"
    ask(gateway, served.agent_twin, "status", session=session)  # the twin acted in the session
    approval_id = ask(gateway, served.agent, "deploy", session=session)
    refused = decide(gateway, served.agent_twin, approval_id)
    assert refused.status_code == 403, refused.text
    assert "same agent session" in refused.json()["error"]["message"]
    assert status(gateway, approval_id) == "pending"
    # The same key in another session is not this agent: it may decide.
    assert decide(gateway, served.agent_twin, ask(gateway, served.agent, "x")).status_code == 200


def test_the_cli_refuses_a_self_approval(served: Served) -> None:
    """tenant (the agent's operator key in ``HOOKGATE_API_KEY``): the agent runs
    ``hookgate approvals approve ID`` on its own approval."""
    gateway = served.gateway
    approval_id = ask(gateway, served.agent, "deploy from the cli")
    run = subprocess.run(
        [*HOOKGATE, "approvals", "approve", approval_id, "--gateway", gateway.url],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=REPO,
        env=gateway_env(HOOKGATE_API_KEY=served.agent),
    )
    assert run.returncode != 0, run.stdout
    assert "the key that asked" in run.stderr
    assert status(gateway, approval_id) == "pending"


def test_an_approver_key_cannot_dispatch(served: Served) -> None:
    """tenant (an approver key, handed to a person): uses it to dispatch events (to become an
    agent whose approvals it could then decide) or to dry-run hooks."""
    gateway = served.gateway
    dispatched = gateway.rest(
        "POST",
        "/api/v1/dispatch",
        served.approver,
        json={"event": "pre_tool_use", "input": {"tool_name": "exec", "tool_input": {}}},
    )
    assert dispatched.status_code == 403 and "operator role" in dispatched.text
    tested = gateway.rest(
        "POST",
        "/api/v1/hooks/test",
        served.approver,
        json={"config": {"event": "pre_tool_use", "handler_type": "callable",
                         "config": {"callable": "tests.server.hookfns:allow"}},
              "sampleEvent": {"tool_name": "exec"}},
    )
    assert tested.status_code == 403
    # It reads and decides approvals.
    approval_id = ask(gateway, served.agent, "read me")
    read = gateway.rest("GET", f"/api/v1/approvals/{approval_id}", served.approver)
    assert read.status_code == 200
    assert decide(gateway, served.approver, approval_id, "deny").status_code == 200


def test_a_self_approval_is_refused_on_postgresql(
    tmp_path: Path,
    database: str,  # noqa: F811 - the fixture
) -> None:
    """tenant (the agent's operator key), gateway on PostgreSQL: approves its own approval."""
    gateway = GatewayProcess(
        tmp_path / "data",
        args=("--allow-callable", "tests.server.hookfns", "--tenant-host-code"),
        database_url=database,
    ).start()
    try:
        chain(gateway, TENANT)
        agent = gateway.create_key(TENANT, "operator")
        approver = gateway.create_key(TENANT, "approver")
        session = "pg-session"
        approval_id = ask(gateway, agent, "deploy", session=session)
        assert decide(gateway, agent, approval_id).status_code == 403
        second = ask(gateway, agent, "deploy again", session=session)
        assert decide(gateway, agent, second, "deny").status_code == 403
        assert decide(gateway, approver, approval_id).status_code == 200
        assert outcome(gateway, agent, approval_id)["decision"] == "allow"
    finally:
        gateway.stop()


# -- roles and tenants (held before the issue: regression guards) -------------------------------


def test_a_viewer_cannot_decide(served: Served) -> None:
    """viewer: approves or denies a pending approval of its own tenant."""
    gateway = served.gateway
    approval_id = ask(gateway, served.agent, "viewer target")
    for verb in ("approve", "deny"):
        refused = decide(gateway, served.viewer, approval_id, verb)
        assert refused.status_code == 403, refused.text
    assert status(gateway, approval_id) == "pending"


def test_another_tenants_keys_cannot_read_or_decide(served: Served) -> None:
    """tenant (tenant-b's admin and approver keys): read, list, wait on, approve or deny an
    approval of tenant-a."""
    gateway = served.gateway
    approval_id = ask(gateway, served.agent, "tenant a secret plan")
    for key in (served.other_tenant, served.other_approver):
        assert gateway.rest("GET", f"/api/v1/approvals/{approval_id}", key).status_code == 404
        listed = gateway.rest("GET", "/api/v1/approvals?status=all", key).json()
        assert approval_id not in {row["id"] for row in listed["approvals"]}
        assert "tenant a secret plan" not in str(listed)
        for verb in ("approve", "deny"):
            assert decide(gateway, key, approval_id, verb).status_code == 404
    waited = gateway.rest(
        "GET", f"/api/v1/approvals/{approval_id}/outcome?timeoutS=0", served.other_tenant
    )
    assert waited.status_code == 404
    assert status(gateway, approval_id) == "pending"


def test_an_approval_cannot_be_decided_twice(served: Served) -> None:
    """tenant (a second person, or the agent racing a person): approves an approval that a
    person already denied, to turn the block into an allow."""
    gateway = served.gateway
    approval_id = ask(gateway, served.agent, "decide me once")
    assert decide(gateway, served.approver, approval_id, "deny").status_code == 200
    again = gateway.rest(
        "POST", f"/api/v1/approvals/{approval_id}/approve", json={"comment": "master overrides"}
    )
    assert again.status_code == 409 and "already denied" in again.text
    assert outcome(gateway, served.agent, approval_id)["decision"] == "block"


def test_an_expired_approval_cannot_be_approved(tmp_path: Path) -> None:
    """tenant (an approver key): approves an approval after its deadline, when the agent has
    been told it expired (blocked)."""
    gateway = start_gateway(tmp_path)
    try:
        created = gateway.rest(
            "POST",
            "/api/v1/hooks",
            json={
                "event": "pre_tool_use", "handler_type": "callable", "scope": "tenant",
                "tenant_id": TENANT, "name": "ask briefly",
                "config": {"callable": "tests.server.hookfns:ask"},
                "approval": {"timeout_ms": 1000},
            },
        )
        assert created.status_code == 201, created.text
        agent = gateway.create_key(TENANT, "operator")
        approver = gateway.create_key(TENANT, "approver")
        approval_id = ask(gateway, agent, "late")
        wait_until(lambda: status(gateway, approval_id) == "expired", "expiry", seconds=60)
        late = decide(gateway, approver, approval_id)
        assert late.status_code == 409 and "expired" in late.text
        assert outcome(gateway, agent, approval_id)["decision"] == "block"
    finally:
        gateway.stop()


# -- item 3: unbounded pending approvals, and raw text in the CLI's tables ------------------------


def asking_gateway(tmp_path: Path, *args: str) -> Iterator[GatewayProcess]:
    """A gateway on which every call of both tenants asks a person."""
    gateway = start_gateway(tmp_path, *args)
    try:
        for tenant in (TENANT, "tenant-b"):
            created = gateway.rest("POST", "/api/v1/hooks", json={
                "event": "pre_tool_use", "handler_type": "callable", "scope": "tenant",
                "tenant_id": tenant, "name": "ask always",
                "config": {"callable": "tests.server.hookfns:ask"},
                "approval": {"timeout_ms": 600_000, "on_timeout": "allow"},
            })
            assert created.status_code == 201, created.text
        yield gateway
    finally:
        gateway.stop()


@pytest.fixture
def capped(tmp_path: Path) -> Iterator[GatewayProcess]:
    """Tenants may have 3 pending approvals at once."""
    yield from asking_gateway(tmp_path, "--max-pending-approvals", "3")


@pytest.fixture
def asking(tmp_path: Path) -> Iterator[GatewayProcess]:
    yield from asking_gateway(tmp_path)


def dispatch_any(gateway: GatewayProcess, key: str, **payload: Any) -> dict[str, Any]:
    answer = gateway.rest("POST", "/api/v1/dispatch", key, json={
        "event": "pre_tool_use",
        "input": {"tool_name": "exec", "tool_input": {"cmd": "x"}, **payload},
        "approvalWaitS": 0,
    })
    assert answer.status_code == 200, answer.text
    return dict(answer.json())


def test_pending_approvals_are_capped_per_tenant(capped: GatewayProcess) -> None:
    """tenant (the agent's operator key): floods the tenant with pending approvals (decoys
    that push the real one out of the panel's first page, and fill the store)."""
    agent = capped.create_key(TENANT, "operator")
    for _ in range(3):
        assert dispatch_any(capped, agent)["approval"]["status"] == "pending"
    refused = dispatch_any(capped, agent)
    assert refused["decision"] == "block", refused  # never allow, never wait
    assert "3 pending approvals" in refused["reason"]
    assert "--max-pending-approvals 3" in refused["reason"]
    listed = capped.rest("GET", "/api/v1/approvals?limit=1", agent).json()
    assert listed["pendingCount"] == 3 and listed["pendingLimit"] == 3
    shown = cli_list(capped, agent, "approvals", "list")
    assert shown.stdout.rstrip().endswith("3 pending (at most 3 per tenant)"), shown
    # The cap is per tenant: another tenant still asks.
    other = capped.create_key("tenant-b", "operator")
    assert dispatch_any(capped, other)["approval"]["status"] == "pending"
    # A decision frees a place.
    approver = capped.create_key(TENANT, "approver")
    oldest = capped.rest("GET", "/api/v1/approvals", agent).json()["approvals"][-1]["id"]
    assert decide(capped, approver, oldest, "deny").status_code == 200
    assert dispatch_any(capped, agent)["approval"]["status"] == "pending"


def test_the_pending_count_is_not_hidden_by_the_page_size(capped: GatewayProcess) -> None:
    """tenant (the agent): asks many times so that a page of the list no longer shows the
    real approval, hoping the panel's count follows the page."""
    agent = capped.create_key(TENANT, "operator")
    for _ in range(3):
        dispatch_any(capped, agent)
    first_page = capped.rest("GET", "/api/v1/approvals?limit=1", agent).json()
    assert len(first_page["approvals"]) == 1
    assert first_page["pendingCount"] == 3  # the whole count, which the panel's title shows


def cli_list(gateway: GatewayProcess, key: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*HOOKGATE, *args],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=REPO,
        env=gateway_env(HOOKGATE_API_KEY=key, HOOKGATE_GATEWAY_URL=gateway.url),
    )


ESCAPES = "\x1b[1A\x1b[2K\r\x9b2J\u202e\x07"


def assert_no_control_characters(output: str) -> None:
    for char in output:
        assert char == "\n" or (char >= " " and not 0x7F <= ord(char) <= 0x9F), repr(char)
        assert char not in "\u202e\u2066\u2067\u2068\u2069", repr(char)


def test_the_cli_approvals_list_escapes_control_characters(asking: GatewayProcess) -> None:
    """tool (whoever shapes the agent id and tool name, e.g. prompt injection) and the agent:
    puts ANSI escapes, a carriage return and a direction override in the agent id and the
    tool name, so that ``hookgate approvals list`` on a person's terminal erases or rewrites
    lines ("approved by admin")."""
    agent = asking.create_key(TENANT, "operator")
    viewer = asking.create_key(TENANT, "viewer")
    dispatch_any(
        asking, agent, agent_id=f"bot{ESCAPES}approved by admin",
        tool_name=f"exec{ESCAPES}", session_id=f"s{ESCAPES}",
    )
    listed = cli_list(asking, viewer, "approvals", "list")
    assert listed.returncode == 0, listed.stderr
    assert "approved by admin" in listed.stdout
    assert "\\x1b[1A" in listed.stdout and "\\r" in listed.stdout and "\\u202e" in listed.stdout
    assert_no_control_characters(listed.stdout)


def test_the_cli_keys_list_escapes_control_characters(asking: GatewayProcess) -> None:
    """tenant (admin): names a key with terminal escapes, so that the operator's
    ``hookgate keys list`` hides or rewrites rows."""
    admin = asking.create_key(TENANT, "admin")
    made = asking.rest("POST", "/api/v1/keys", admin,
                       json={"role": "viewer", "name": f"ci{ESCAPES}master"})
    assert made.status_code == 201, made.text
    listed = subprocess.run(
        [*HOOKGATE, "keys", "list", "--data-dir", str(asking.data_dir)],
        capture_output=True, text=True, timeout=60, cwd=REPO, env=gateway_env(),
    )
    assert listed.returncode == 0, listed.stderr
    assert "\\x1b[2K" in listed.stdout
    assert_no_control_characters(listed.stdout)


# -- item 2: an edited approval skips the rest of the chain ---------------------------------------


def waiting_agent(
    gateway: GatewayProcess, key: str, cmd: str
) -> tuple[threading.Thread, dict[str, Any]]:
    """The agent, waiting on its WebSocket dispatch until a person decides."""
    outcome: dict[str, Any] = {}

    def run() -> None:
        with GatewayClient(gateway.url, key, timeout=120) as client:
            outcome.update(client.dispatch(
                "pre_tool_use", {"tool_name": "exec", "tool_input": {"cmd": cmd}}
            ))

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread, outcome


def pending_for(gateway: GatewayProcess, key: str, cmd: str) -> str:
    def found() -> str | None:
        rows = gateway.rest("GET", "/api/v1/approvals", key).json()["approvals"]
        return next((r["id"] for r in rows if r["tool_input"] == {"cmd": cmd}), None)

    wait_until(found, f"the approval for {cmd!r}", seconds=30, poll_s=0.05)
    approval_id = found()
    assert approval_id is not None
    return approval_id


def test_an_edited_input_goes_through_the_rest_of_the_chain(served: Served) -> None:
    """tenant (an approver, or whoever holds a deciding key: the agent's confederate): the
    chain asks about ``ls``; the approval is approved with ``updatedInput`` ``rm -rf /``,
    which the later "no rm" hook blocks, while the agent waits on its dispatch."""
    gateway = served.gateway
    thread, outcome = waiting_agent(gateway, served.agent, "ls -la")
    approval_id = pending_for(gateway, served.approver, "ls -la")
    edited = decide(gateway, served.approver, approval_id, updatedInput={"cmd": "rm -rf /"})
    assert edited.status_code == 200, edited.text
    thread.join(timeout=60)
    assert outcome["decision"] == "block", outcome
    assert "blocked by test hook" in outcome["reason"]
    assert outcome["approval"]["id"] == approval_id


def test_an_edited_input_is_checked_when_the_agent_waits_again(served: Served) -> None:
    """tenant: the same edit while the agent's REST dispatch answered ``pending`` and it waits
    again with ``approvals.wait`` (the outcome is rebuilt from the stored approval)."""
    gateway = served.gateway
    approval_id = ask(gateway, served.agent, "cat notes")
    edited = decide(gateway, served.approver, approval_id, updatedInput={"cmd": "rm -rf ~"})
    assert edited.status_code == 200, edited.text
    waited = outcome(gateway, served.agent, approval_id)
    assert waited["decision"] == "block", waited
    assert "blocked by test hook" in waited["reason"]


def test_the_rerun_after_the_agent_waits_again_leaves_the_audit_chain_intact(
    served: Served,
) -> None:
    """tenant: an edited input rerun after the dispatch answered ``pending`` writes hook rows
    under a dispatch record already chained; the chain check must neither break on them (a
    false alarm an auditor would have to explain away) nor count them as checked."""
    gateway = served.gateway
    answer = gateway.rest("POST", "/api/v1/dispatch", served.agent, json={
        "event": "pre_tool_use", "input": {"tool_name": "exec", "tool_input": {"cmd": "cat audit"}},
        "approvalWaitS": 0})
    assert answer.status_code == 200, answer.text
    approval_id, dispatch_id = answer.json()["approval"]["id"], answer.json()["dispatch_id"]
    # The dispatch's record is written (and chained) before the decision: the rerun's rows
    # then come after it. (Written in one batch with them, the record would list them: they
    # would be checked, and this test would wait for unlisted rows in vain.)
    wait_until(lambda: gateway.rest("GET", f"/api/v1/dispatches/{dispatch_id}").status_code
               == 200, "the dispatch's record is written", seconds=30, poll_s=0.1)
    assert decide(
        gateway, served.approver, approval_id, updatedInput={"cmd": "rm -rf /var"}
    ).status_code == 200
    assert outcome(gateway, served.agent, approval_id)["decision"] == "block"
    found: dict[str, Any] = {}

    def rerun_recorded() -> bool:
        answer = gateway.rest("GET", "/api/v1/audit/verify", params={"tenantId": TENANT})
        assert answer.status_code == 200, answer.text
        (verdict,) = answer.json()["tenants"]
        found.update(verdict)
        return bool(verdict["unlisted_hook_rows"])

    wait_until(rerun_recorded, "the rerun's hook rows", seconds=30, poll_s=0.1)
    assert found["intact"] is True, found["problem"]


def test_a_harmless_edit_still_runs_as_edited(served: Served) -> None:
    """tenant: the control case of the two attacks above: an edit the later hooks accept
    runs, as edited (the fix must not turn every edit into a block)."""
    gateway = served.gateway
    thread, result = waiting_agent(gateway, served.agent, "make deploy")
    approval_id = pending_for(gateway, served.approver, "make deploy")
    decide(gateway, served.approver, approval_id, updatedInput={"cmd": "make deploy --dry-run"})
    thread.join(timeout=60)
    assert result["decision"] == "allow", result
    assert result["updated_input"] == {"cmd": "make deploy --dry-run"}
    waited = outcome(gateway, served.agent, approval_id)
    assert waited["decision"] == "allow" and waited["updated_input"] == {
        "cmd": "make deploy --dry-run"}


# -- PostgreSQL: the same rules with replicas sharing one database --------------------------------


def test_the_cap_holds_across_replicas_on_postgresql(
    tmp_path: Path,
    database: str,  # noqa: F811 - the fixture
) -> None:
    """tenant (the agent's operator key), two replicas on one PostgreSQL database: fires many
    asking dispatches at both replicas at once so that each replica counts the pending
    approvals before the other's are written, and the tenant ends up over the cap."""
    args = ("--allow-callable", "tests.server.hookfns", "--tenant-host-code",
            "--max-pending-approvals", "3")
    first = GatewayProcess(tmp_path / "a", args=args, database_url=database).start()
    second = GatewayProcess(tmp_path / "b", args=args, database_url=database)
    try:
        second.start()
        created = first.rest("POST", "/api/v1/hooks", json={
            "event": "pre_tool_use", "handler_type": "callable", "scope": "tenant",
            "tenant_id": TENANT, "name": "ask always",
            "config": {"callable": "tests.server.hookfns:ask"},
            "approval": {"timeout_ms": 600_000, "on_timeout": "allow"},
        })
        assert created.status_code == 201, created.text
        agent = first.create_key(TENANT, "operator")
        answers: list[dict[str, Any]] = []

        def fire(gateway: GatewayProcess) -> None:
            answers.append(dispatch_any(gateway, agent))

        threads = [threading.Thread(target=fire, args=(gw,)) for gw in (first, second) * 6]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=90)
        assert len(answers) == 12
        pending = [a for a in answers if (a.get("approval") or {}).get("status") == "pending"]
        assert len(pending) == 3, answers
        assert all(a["decision"] == "block" for a in answers)
        listed = second.rest("GET", "/api/v1/approvals?limit=1", agent).json()
        assert listed["pendingCount"] == 3
    finally:
        second.stop()
        first.stop()


def test_an_edited_input_is_checked_on_another_replica_on_postgresql(
    tmp_path: Path,
    database: str,  # noqa: F811 - the fixture
) -> None:
    """tenant (a deciding key), two replicas on PostgreSQL: the approval was asked on one
    replica, is approved with an input the later hook blocks on the other, and the agent
    waits again (``approvals.wait``) on the second replica, which never saw the event."""
    args = ("--allow-callable", "tests.server.hookfns", "--tenant-host-code")
    env = {"HOOKGATE_SECRET_KEY": TEST_SECRET_KEY}  # both replicas open the sealed event
    first = GatewayProcess(tmp_path / "a", args=args, env=env, database_url=database).start()
    second = GatewayProcess(tmp_path / "b", args=args, env=env, database_url=database)
    try:
        second.start()
        chain(first, TENANT)
        agent = first.create_key(TENANT, "operator")
        approver = first.create_key(TENANT, "approver")
        approval_id = ask(first, agent, "cat notes")
        edited = decide(second, approver, approval_id, updatedInput={"cmd": "rm -rf /srv"})
        assert edited.status_code == 200, edited.text
        waited = outcome(second, agent, approval_id)
        assert waited["decision"] == "block", waited
        assert "blocked by test hook" in waited["reason"]
        assert decide(second, agent, ask(second, agent, "mine"), "approve").status_code == 403
    finally:
        second.stop()
        first.stop()


# -- the web panel (last: the browser's event loop stays up until the module ends, and the
# PostgreSQL fixtures above need none running) ------------------------------------------------


@pytest.mark.browser
def test_the_panel_refuses_a_self_approval_and_shows_the_count(
    served: Served,
    page: Any,  # noqa: F811 - the fixture
) -> None:
    """tenant (the agent's operator key, pasted into the web panel): opens its own approval
    in the Approvals view and presses Approve."""
    from playwright.sync_api import expect

    gateway = served.gateway
    approval_id = ask(gateway, served.agent, "panel self approval")
    sign_in(page, gateway.url, served.agent)
    page.get_by_role("link", name="Approvals").click()
    card = page.locator(f"article.approval-card[data-approval-id='{approval_id}']")
    expect(card).to_be_visible()
    card.get_by_role("button", name="Approve").click()
    expect(card.get_by_role("alert")).to_contain_text("the key that asked")
    assert status(gateway, approval_id) == "pending"
    pending = gateway.rest("GET", "/api/v1/approvals?limit=1", served.agent).json()
    title = page.locator("#pending-title")
    expect(title).to_contain_text(f"({pending['pendingCount']} of at most 100 per tenant)")
