"""The host-code boundary against real gateways: who may define, test and run hooks that
run code on the gateway host (command, process, callable, command gates).

Each test runs the attack with an ordinary key and checks that nothing ran on the host (a
marker file the hook would have written stays absent)."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.handlers.process_support import SCRIPT, pid_alive
from tests.server.gateway_process import GatewayProcess
from tests.support.waiting import wait_until

CANARY_ENV = "HOOKGATE_TEST_CANARY"


def command_hook(command: str, cwd: str | None = None, **fields: Any) -> dict[str, Any]:
    config = {"command": command} if cwd is None else {"command": command, "cwd": cwd}
    return {"event": "pre_tool_use", "handler_type": "command", "scope": "tenant",
            "config": config, **fields}


def gate_hook(command: str) -> dict[str, Any]:
    gate = {"type": "command", "command": command, "block_on_failure": True}
    return {"event": "subagent_stop", "handler_type": "quality_gate", "scope": "tenant",
            "config": {"gates": [gate]}}


def process_hook(**fields: Any) -> dict[str, Any]:
    return {"event": "pre_tool_use", "handler_type": "process", "scope": "tenant",
            "config": {"command": [sys.executable, SCRIPT]}, **fields}


def callable_hook(target: str) -> dict[str, Any]:
    return {"event": "pre_tool_use", "handler_type": "callable", "scope": "tenant",
            "config": {"callable": target}}


def error_of(response: Any) -> dict[str, Any]:
    body = response.json()
    assert "error" in body, body
    return body["error"]  # type: ignore[no-any-return]


@pytest.fixture(scope="module")
def strict(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayProcess]:
    """A gateway with the defaults: host code needs master scope."""
    base = tmp_path_factory.mktemp("strict")
    served = GatewayProcess(
        base / "data",
        args=("--allow-callable", "tests.server.hookfns"),
        env={CANARY_ENV: str(base / "canary")},
    ).start()
    try:
        yield served
    finally:
        served.stop()


@pytest.fixture(scope="module")
def strict_keys(strict: GatewayProcess) -> dict[str, str]:
    return {role: strict.create_key("tenant-a", role) for role in ("operator", "admin")}


def test_operator_cannot_run_a_command_gate_in_a_dry_run(
    strict: GatewayProcess, strict_keys: dict[str, str], tmp_path: Path
) -> None:
    """Finding 1: an operator's hooks.test of a quality gate ran its shell command."""
    marker = tmp_path / "gate-ran"
    response = strict.rest("POST", "/api/v1/hooks/test", strict_keys["operator"], json={
        "config": gate_hook(f"touch {marker}; id; env >&2; exit 1"),
        "sampleEvent": {"output": "x"}})
    assert response.status_code == 403
    assert "admin" in error_of(response)["message"]
    assert not marker.exists()


@pytest.mark.parametrize(
    "hook",
    [
        command_hook("touch MARKER"),
        gate_hook("touch MARKER"),
        process_hook(),
        callable_hook("tests.server.hookfns:block"),
    ],
    ids=["command", "command-gate", "process", "callable"],
)
def test_tenant_admin_cannot_define_or_test_host_code(
    strict: GatewayProcess, strict_keys: dict[str, str], tmp_path: Path, hook: dict[str, Any]
) -> None:
    marker = tmp_path / "ran"
    raw = _with_marker(hook, marker)
    admin = strict_keys["admin"]
    created = strict.rest("POST", "/api/v1/hooks", admin, json=raw)
    assert created.status_code == 403, created.text
    assert "master scope" in error_of(created)["message"]
    tested = strict.rest("POST", "/api/v1/hooks/test", admin,
                         json={"config": raw, "sampleEvent": {"tool_name": "x", "output": "x"}})
    assert tested.status_code == 403, tested.text
    assert "--tenant-host-code" in error_of(tested)["message"]
    assert not marker.exists()
    listed = strict.rest("GET", "/api/v1/hooks", admin).json()["hooks"]
    assert all(h["handler_type"] != hook["handler_type"] for h in listed if h["source"] == "user")


def test_tenant_admin_cannot_change_a_master_command_hook(
    strict: GatewayProcess, strict_keys: dict[str, str], tmp_path: Path
) -> None:
    """A master key's command hook for tenant A: tenant A's admin may not rewrite it (its
    command would then run with the master's approval), nor turn an http hook into one."""
    marker = tmp_path / "rewritten"
    created = strict.rest("POST", "/api/v1/hooks", json=command_hook(
        "exit 0", tenant_id="tenant-a", name="master-made"))
    assert created.status_code == 201, created.text
    hook_id = created.json()["hookId"]
    admin = strict_keys["admin"]
    patched = strict.rest("PATCH", f"/api/v1/hooks/{hook_id}", admin,
                          json={"config": {"command": f"touch {marker}"}})
    assert patched.status_code == 403, patched.text
    outcome = strict.rest("POST", "/api/v1/dispatch", admin,
                          json={"event": "pre_tool_use", "input": {"tool_name": "x"}}).json()
    assert outcome["decision"] == "allow"  # the master's version ran
    assert not marker.exists()
    webhook = strict.rest("POST", "/api/v1/hooks", admin, json={
        "event": "post_tool_use", "handler_type": "http", "scope": "tenant",
        "name": "to-be-command", "config": {"url": "https://example.com/hook"}})
    assert webhook.status_code == 201, webhook.text
    turned = strict.rest("PATCH", f"/api/v1/hooks/{webhook.json()['hookId']}", admin, json={
        "handler_type": "command", "config": {"command": f"touch {marker}"}})
    assert turned.status_code == 403, turned.text


def test_master_defines_and_runs_host_code(strict: GatewayProcess, tmp_path: Path) -> None:
    marker = tmp_path / "master-ran"
    created = strict.rest("POST", "/api/v1/hooks", json=command_hook(
        f"touch {marker}", tenant_id="tenant-m", name="master-run", matcher="^master$",
        cwd=str(tmp_path)))
    assert created.status_code == 201, created.text
    outcome = strict.rest("POST", "/api/v1/dispatch", json={
        "event": "pre_tool_use", "input": {"tool_name": "master", "tenant_id": "tenant-m"}})
    assert outcome.json()["decision"] == "allow", outcome.text
    assert marker.exists()


def test_callable_allowlist_is_checked_before_any_import(
    strict: GatewayProcess, tmp_path: Path
) -> None:
    """Finding 8: validation imported the named module before the allowlist check."""
    canary = Path(strict.env[CANARY_ENV])
    for target in ("tests.server.import_canary:x", "hookgate.__main__:main", "this:x"):
        for path, body in (
            ("/api/v1/hooks/test", {"config": callable_hook(target),
                                    "sampleEvent": {"tool_name": "x"}}),
            ("/api/v1/hooks", callable_hook(target)),
        ):
            response = strict.rest("POST", path, json=body)  # even a master key
            assert response.status_code == 400, response.text
            assert "not in an allowed module" in error_of(response)["message"]
    assert not canary.exists()
    assert "Zen of Python" not in strict.log()


def test_process_dry_run_leaves_no_process(strict: GatewayProcess) -> None:
    """Finding 9: every hooks.test of a process hook left its process running."""
    response = strict.rest("POST", "/api/v1/hooks/test", json={
        "config": process_hook(), "sampleEvent": {"tool_name": "x", "tool_input": {}}})
    assert response.status_code == 200, response.text
    result = response.json()["result"]
    assert result["decision"] == "allow", result
    pid = result["details"]["pid"]
    assert isinstance(pid, int)
    wait_until(lambda: not pid_alive(pid), "the hook process exits")


def test_tenant_host_code_flag(tmp_path: Path) -> None:
    """--tenant-host-code lets tenant admins define host code (operators still may not test
    it); restarted without the flag, their hook no longer runs: the dispatch blocks with the
    reason and nothing runs."""
    marker = tmp_path / "tenant-ran"
    served = GatewayProcess(tmp_path / "data", args=("--tenant-host-code",)).start()
    try:
        admin = served.create_key("tenant-a", "admin")
        operator = served.create_key("tenant-a", "operator")
        created = served.rest("POST", "/api/v1/hooks", admin,
                              json=command_hook(f"touch {marker}", name="tenant-made",
                                                cwd=str(tmp_path)))
        assert created.status_code == 201, created.text
        tested = served.rest("POST", "/api/v1/hooks/test", operator, json={
            "hookId": created.json()["hookId"], "sampleEvent": {"tool_name": "x"}})
        assert tested.status_code == 403 and "admin" in error_of(tested)["message"]
        outcome = served.rest("POST", "/api/v1/dispatch", admin, json={
            "event": "pre_tool_use", "input": {"tool_name": "x"}}).json()
        assert outcome["decision"] == "allow" and marker.exists()
        marker.unlink()
    finally:
        served.stop()
    again = GatewayProcess(tmp_path / "data").start()
    try:
        outcome = again.rest("POST", "/api/v1/dispatch", admin, json={
            "event": "pre_tool_use", "input": {"tool_name": "x"}}).json()
        assert outcome["decision"] == "block", outcome
        assert "needs master scope" in outcome["reason"]
        assert not marker.exists()
    finally:
        again.stop()


def test_standard_edition_refuses_every_host_code_hook(tmp_path: Path) -> None:
    """Finding 4: the standard edition ran process hooks (create, test and dispatch)."""
    marker = tmp_path / "ran"
    served = GatewayProcess(tmp_path / "data", args=("--edition", "standard")).start()
    try:
        info = served.rest("GET", "/api/v1/info").json()
        assert not {"command", "process", "callable"} & set(info["handlerTypes"])
        assert info["hostCode"]["allowed"] is False
        assert "standard edition" in info["hostCode"]["reason"]
        for hook in (command_hook("touch MARKER"), gate_hook("touch MARKER"), process_hook()):
            raw = _with_marker(hook, marker)
            for path, body in (("/api/v1/hooks", raw), ("/api/v1/hooks/test", {
                    "config": raw, "sampleEvent": {"tool_name": "x", "output": "x"}})):
                response = served.rest("POST", path, json=body)  # a master key
                assert response.status_code == 400, response.text
                assert "standard edition" in error_of(response)["message"]
        assert not marker.exists()
    finally:
        served.stop()


def test_standard_edition_refuses_stored_process_hooks_at_dispatch(tmp_path: Path) -> None:
    log = tmp_path / "process.log"
    lite = GatewayProcess(tmp_path / "data").start()
    try:
        hook = process_hook(name="stored-process")
        hook["config"]["env"] = {"HOOK_LOG": str(log)}
        assert lite.rest("POST", "/api/v1/hooks", json=hook).status_code == 201
    finally:
        lite.stop()
    standard = GatewayProcess(tmp_path / "data", args=("--edition", "standard")).start()
    standard.master_key = lite.master_key
    try:
        outcome = standard.rest("POST", "/api/v1/dispatch", json={
            "event": "pre_tool_use", "input": {"tool_name": "x"}}).json()
        assert outcome["decision"] == "block", outcome
        assert "standard edition" in outcome["reason"]
        assert not log.exists()  # the process never started
    finally:
        standard.stop()


def _with_marker(hook: dict[str, Any], marker: Path) -> dict[str, Any]:
    return json.loads(json.dumps(hook).replace("MARKER", str(marker)))  # type: ignore[no-any-return]


def test_callable_allowlist_holds_at_dispatch(tmp_path: Path) -> None:
    """A callable hook stored while its module was allowed does not import it once the
    gateway runs with a list that no longer names it: the dispatch blocks with the reason."""
    canary = tmp_path / "canary"
    env = {CANARY_ENV: str(canary)}
    first = GatewayProcess(tmp_path / "data", env=env,
                           args=("--allow-callable", "tests.server.import_canary")).start()
    try:
        created = first.rest("POST", "/api/v1/hooks",
                             json=callable_hook("tests.server.import_canary:check"))
        assert created.status_code == 201, created.text
    finally:
        first.stop()
    canary.unlink()  # validation imported it while it was allowed
    second = GatewayProcess(tmp_path / "data", env=env,
                            args=("--allow-callable", "tests.server.hookfns"))
    second.start()
    second.master_key = first.master_key
    try:
        outcome = second.rest("POST", "/api/v1/dispatch", json={
            "event": "pre_tool_use", "input": {"tool_name": "x"}}).json()
        assert outcome["decision"] == "block", outcome
        assert "not in an allowed module" in outcome["reason"]
        assert not canary.exists()
    finally:
        second.stop()
