"""A real gateway that has recorded traffic, for the replay tests.

The gateway (SQLite or PostgreSQL) runs a callable hook and an http hook against a loopback
webhook server; :func:`record_traffic` sends it a fixed set of dispatches and waits until
their records are committed. Candidates are written as hooks files beside a module of their
own (``callable: "replay_guards:…"``).
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.server.gateway_process import HOOKGATE, REPO, GatewayProcess, gateway_env
from tests.support.waiting import wait_until
from tests.support.webhook_server import Reply, Seen, WebhookServer

#: The key of the PostgreSQL gateways (with SQLite the data directory's key file is used).
SECRET_KEY = "k1:" + "QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVo0NTY3ODk="

#: The live policy: one callable hook (rm blocked), one webhook (curl blocked).
GUARDS = '''
def no_rm(event):
    cmd = str(event.get("tool_input", {}).get("cmd", ""))
    if cmd.startswith("rm"):
        return {"decision": "block", "reason": "rm is not allowed"}
    return None


def no_rm_or_push(event):
    cmd = str(event.get("tool_input", {}).get("cmd", ""))
    if cmd.startswith("rm") or cmd.startswith("git push"):
        return {"decision": "block", "reason": "rm and git push are not allowed"}
    return None


def allow_all(event):
    return None
'''

#: The commands sent to the live gateway, and what the live policy answered.
TRAFFIC = (
    ("exec", "ls -la", "allow"),
    ("exec", "rm -rf /", "block"),
    ("exec", "curl https://example.com", "block"),
    ("exec", "git push origin main", "allow"),
    ("read_file", "notes.txt", "allow"),
)


def webhook_reply(seen: Seen) -> Reply:
    body = seen.json
    cmd = str(body.get("tool_input", {}).get("cmd", ""))
    if cmd.startswith("curl"):
        return Reply(200, {"decision": "block", "reason": "no network from the agent"})
    return Reply(200, {"decision": "allow"})


@dataclass
class Recorded:
    gateway: GatewayProcess
    webhook: WebhookServer
    operator: str
    tenant: str
    dispatch_ids: list[str] = field(default_factory=list)


def live_hooks(webhook_url: str, tenant: str) -> list[dict[str, Any]]:
    return [
        {
            "event": "pre_tool_use", "handler_type": "callable", "scope": "tenant",
            "tenant_id": tenant, "name": "no-rm", "matcher": "^exec$", "priority": 10,
            "config": {"callable": "tests.replay.replay_guards:no_rm"},
        },
        {
            "event": "pre_tool_use", "handler_type": "http", "scope": "tenant",
            "tenant_id": tenant, "name": "network-check", "matcher": "^exec$",
            "config": {"url": webhook_url},
        },
    ]


@contextmanager
def recording_gateway(
    base: Path, *, database_url: str | None = None, tenant: str = "acme"
) -> Iterator[Recorded]:
    """A gateway with the live policy, and the traffic recorded (records committed)."""
    guards = REPO / "tests" / "replay" / "replay_guards.py"
    assert guards.exists()
    webhook = WebhookServer()
    webhook.respond = webhook_reply
    with webhook:
        gateway = GatewayProcess(
            base / "data",
            args=(
                "--allow-callable", "tests.replay.replay_guards", "--tenant-host-code",
                "--audit-mode", "sync",
            ),
            env={"HOOKGATE_SSRF_ALLOWLIST": "127.0.0.1", **(
                {"HOOKGATE_SECRET_KEY": SECRET_KEY} if database_url else {}
            )},
        )
        gateway.database_url = database_url
        gateway.start()
        try:
            for hook in live_hooks(webhook.url("/check"), tenant):
                created = gateway.rest("POST", "/api/v1/hooks", json=hook)
                assert created.status_code == 201, created.text
            operator = gateway.create_key(tenant, "operator")
            recorded = Recorded(gateway, webhook, operator, tenant)
            for tool, text, expected in TRAFFIC:
                recorded.dispatch_ids.append(dispatch(gateway, operator, tool, text, expected))
            wait_committed(gateway, gateway.master_key or "", recorded.dispatch_ids)
            yield recorded
        finally:
            gateway.stop()


def dispatch(gateway: GatewayProcess, key: str, tool: str, text: str, expected: str) -> str:
    field_name = "cmd" if tool == "exec" else "path"
    answer = gateway.rest(
        "POST", "/api/v1/dispatch", key,
        json={"event": "pre_tool_use", "input": {
            "tool_name": tool, "tool_input": {field_name: text}, "session_id": "s-1",
        }},
    )
    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert body["decision"] == expected, body
    return str(body["dispatch_id"])


def wait_committed(gateway: GatewayProcess, key: str, ids: list[str]) -> None:
    def committed() -> bool:
        return all(
            gateway.rest("GET", f"/api/v1/dispatches/{i}", key).status_code == 200 for i in ids
        )

    wait_until(committed, "the dispatch records committed")


def write_candidate(folder: Path, hooks_yaml: str) -> Path:
    """A candidate hooks file, with the guard functions beside it (``replay_guards``)."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "candidate_guards.py").write_text(GUARDS)
    path = folder / "candidate.yaml"
    path.write_text(hooks_yaml)
    return path


def replay_cli(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*HOOKGATE, "replay", *args],
        capture_output=True, text=True, timeout=120, cwd=REPO, env=gateway_env(**env),
    )
