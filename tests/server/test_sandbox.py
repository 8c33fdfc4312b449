"""The hook sandbox against real gateways: a tenant's hook program tries to read the
gateway's environment, its data directory and its key file (finding 3 of issue 10).

Each attack also runs on a gateway with ``--hook-sandbox off``, where it succeeds: that is
what the sandbox is for, and it shows the probe would see a leak."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.conftest import require_service
from tests.server.gateway_process import GatewayProcess

SECRET = "gw-env-s3cr3t-7f1d"
BWRAP = Path("/usr/bin/bwrap")

#: A command hook that reports what it can see of the gateway, one fact per line.
PROBE = r"""
echo "parent_env=$(tr '\0' ' ' < /proc/$PPID/environ 2>/dev/null)"
echo "any_env_secret=$(cat /proc/[0-9]*/environ 2>/dev/null | tr '\0' '\n' | grep -c SECRET_TOKEN)"
umount DATA 2>/dev/null  # a root hook with capabilities could uncover the directory
echo "data_dir=$(ls -A DATA 2>/dev/null | tr '\n' ' ')"
echo "key=$(head -c 12 DATA/secret.key 2>/dev/null)"
commands() { for f in /proc/[0-9]*/cmdline; do tr '\0' ' ' < "$f"; echo; done; }
echo "gateway_visible=$(commands 2>/dev/null | grep -c 'serve [-]-port')"
echo written > probe-wrote && echo "cwd_write=ok"
echo x > /etc/hookgate-probe 2>/dev/null && echo "etc_write=ok"
exit 0
"""

#: The same probe as a process hook: it answers before_tool with what it saw.
PROCESS_PROBE = r"""
import json, os, sys
def facts():
    try:
        env = open(f"/proc/{os.getppid()}/environ", "rb").read().decode(errors="replace")
    except OSError:
        env = ""
    data = sys.argv[1]
    listing = sorted(os.listdir(data)) if os.path.isdir(data) else []
    try:
        key = open(os.path.join(data, "secret.key")).read(12)
    except OSError:
        key = ""
    commands = []
    for pid in (p for p in os.listdir("/proc") if p.isdigit()):
        try:
            commands.append(open(f"/proc/{pid}/cmdline", "rb").read().replace(b"\0", b" "))
        except OSError:
            pass
    visible = sum(b"serve --port" in c for c in commands)
    return {"parent_env": env, "data_dir": listing, "key": key, "gateway_visible": visible}
for line in sys.stdin:
    message = json.loads(line)
    if "id" not in message:
        continue
    if message["method"] == "hook.hello":
        result = {"ok": True}
    else:
        result = {"action": "deny_tool", "reason": json.dumps(facts())}
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": result}) + "\n")
    sys.stdout.flush()
"""


def facts(stdout: str) -> dict[str, str]:
    return dict(line.split("=", 1) for line in stdout.splitlines() if "=" in line)


@pytest.fixture(scope="module", params=["auto", "off"])
def served(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
           ) -> Iterator[tuple[str, GatewayProcess, str]]:
    require_service("bubblewrap", BWRAP.exists(), "scripts/ensure-bubblewrap installs it")
    mode = request.param
    base = tmp_path_factory.mktemp(f"sandbox-{mode}")
    gateway = GatewayProcess(
        base / "data",
        args=("--tenant-host-code", "--hook-sandbox", mode),
        env={"HOOKGATE_TEST_SECRET_TOKEN": SECRET},
    ).start()
    try:
        yield mode, gateway, gateway.create_key("tenant-a", "admin")
    finally:
        gateway.stop()


def test_sandbox_hides_the_gateway_from_a_tenant_command_hook(
    served: tuple[str, GatewayProcess, str], tmp_path: Path
) -> None:
    mode, gateway, admin = served
    work = tmp_path / "work"
    work.mkdir()
    hook: dict[str, Any] = {
        "event": "pre_tool_use", "handler_type": "command", "scope": "tenant",
        "config": {"command": PROBE.replace("DATA", str(gateway.data_dir)), "cwd": str(work)}}
    response = gateway.rest("POST", "/api/v1/hooks/test", admin,
                            json={"config": hook, "sampleEvent": {"tool_name": "x"}})
    assert response.status_code == 200, response.text
    result = response.json()["result"]
    assert result["error"] is None, result
    seen = facts(result["stdout"])
    assert seen["cwd_write"] == "ok"  # the hook's own directory stays writable
    assert (work / "probe-wrote").exists()
    if mode == "off":  # the attack works without the sandbox
        assert SECRET in seen["parent_env"]
        assert "secret.key" in seen["data_dir"] and seen["key"]
        assert int(seen["gateway_visible"]) >= 1
        return
    assert SECRET not in result["stdout"] and "SECRET_TOKEN" not in seen["parent_env"]
    assert seen["any_env_secret"] == "0"
    assert seen["data_dir"].strip() == "" and seen["key"] == ""
    assert seen["gateway_visible"] == "0"  # its own PID namespace
    assert "etc_write" not in seen


def test_sandbox_hides_the_gateway_from_a_process_hook(
    served: tuple[str, GatewayProcess, str], tmp_path: Path
) -> None:
    mode, gateway, admin = served
    script = tmp_path / "probe.py"
    script.write_text(PROCESS_PROBE)
    hook = {"event": "pre_tool_use", "handler_type": "process", "scope": "tenant",
            "config": {"command": [sys.executable, str(script), str(gateway.data_dir)],
                       "dir": str(tmp_path)}}
    response = gateway.rest("POST", "/api/v1/hooks/test", admin,
                            json={"config": hook, "sampleEvent": {"tool_name": "x"}})
    assert response.status_code == 200, response.text
    result = response.json()["result"]
    assert result["hookDecision"] == "block", result
    seen = json.loads(result["reason"])
    if mode == "off":
        assert SECRET in seen["parent_env"] and "secret.key" in seen["data_dir"]
        assert seen["gateway_visible"] >= 1
        return
    assert SECRET not in seen["parent_env"]
    assert seen["data_dir"] == [] and seen["key"] == ""
    assert seen["gateway_visible"] == 0


def test_sandbox_mode_bwrap_refuses_to_start_without_bubblewrap(tmp_path: Path) -> None:
    """--hook-sandbox bwrap never falls back to running hooks unsandboxed."""
    gateway = GatewayProcess(tmp_path / "data", args=("--hook-sandbox", "bwrap"),
                             env={"PATH": "/nonexistent"})
    with pytest.raises(RuntimeError, match="bubblewrap is not installed"):
        gateway.start(timeout=20)


def test_sandbox_auto_warns_at_start_without_bubblewrap(tmp_path: Path) -> None:
    gateway = GatewayProcess(tmp_path / "data", env={"PATH": "/nonexistent"}).start()
    try:
        assert "hookgate.sandbox.unavailable" in gateway.log()
        assert '"hook_sandbox":"off"' in gateway.log()
    finally:
        gateway.stop()
