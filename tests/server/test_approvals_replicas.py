"""Two real gateway replicas on one PostgreSQL database: an agent waits on one, a person
decides through the other, and the decision arrives (by LISTEN/NOTIFY; the waiters' 0.5 s
check of the row covers a missed notification, see tests/replicas/test_propagation.py)."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import pytest
from tests.server.gateway_process import GatewayProcess
from tests.server.panel_support import TEST_SECRET_KEY
from tests.server.test_replicas_redis import database  # noqa: F401 - fixture

from hookgate.client import GatewayClient

pytestmark = [pytest.mark.postgres, pytest.mark.timeout(120)]

ARGS = ("--allow-callable", "tests.server.hookfns")
#: Far beyond the test: a waiter that missed the NOTIFY would sit here until the deadline.
APPROVAL_TIMEOUT_MS = 600_000


def test_a_decision_on_one_replica_reaches_an_agent_waiting_on_the_other(
    tmp_path: Path,
    database: str,  # noqa: F811 - the fixture
) -> None:
    env = {"HOOKGATE_SECRET_KEY": TEST_SECRET_KEY}  # both replicas open the sealed input
    waiting_on = GatewayProcess(tmp_path / "a", args=ARGS, env=env, database_url=database)
    deciding = GatewayProcess(tmp_path / "b", args=ARGS, env=env, database_url=database)
    waiting_on.start()
    try:
        deciding.start()
        master = waiting_on.master_key
        assert master is not None
        created = waiting_on.rest(
            "POST",
            "/api/v1/hooks",
            json={
                "event": "pre_tool_use",
                "handler_type": "callable",
                "scope": "global",
                "name": "exec guard",
                "config": {"callable": "tests.server.hookfns:ask"},
                "approval": {"timeout_ms": APPROVAL_TIMEOUT_MS},
            },
        )
        assert created.status_code == 201, created.text

        outcome: dict[str, Any] = {}
        received_at: list[float] = []

        def agent() -> None:
            with GatewayClient(waiting_on.url, master, timeout=100) as client:
                outcome.update(
                    client.dispatch(
                        "pre_tool_use", {"tool_name": "exec", "tool_input": {"cmd": "deploy"}}
                    )
                )
                received_at.append(time.monotonic())

        thread = threading.Thread(target=agent, daemon=True)
        thread.start()
        # The other replica sees the approval (it is in the shared database) …
        # A person's key: the master key asked (dispatched), so it may not decide.
        person_key = deciding.create_key("default", "admin", master=True)
        with GatewayClient(deciding.url, person_key, timeout=60) as person:
            revision = None
            while True:
                listed = person.list_approvals()
                if listed["approvals"]:
                    break
                revision = person.call(
                    "approvals.watch", {"revision": revision, "timeoutS": 10}
                )["revision"]
            [approval] = listed["approvals"]
            assert approval["tool_input"] == {"cmd": "deploy"}
            assert thread.is_alive()
            decided_at = time.monotonic()
            person.approve(approval["id"], comment="from replica b")
        thread.join(timeout=60)
        assert outcome["decision"] == "allow", outcome
        assert outcome["approval"]["comment"] == "from replica b"
        # Well within the approval's own 10-minute deadline and the 30 s expiry sweep: the
        # waiter woke on the NOTIFY.
        assert received_at[0] - decided_at < 10
        assert '"key":"hookgate.approval.decided"' not in waiting_on.log()
        assert '"key":"hookgate.approval.decided"' in deciding.log()
    finally:
        deciding.stop()
        waiting_on.stop()
