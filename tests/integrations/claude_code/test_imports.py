"""``hookgate claude-code`` starts once per Claude Code hook event, so it imports only what
its path needs: no click CLI, no gateway, no HTTP client, no other command's modules, no
hooks-file format plugins for a plain hookgate file. The list is exact for hookgate's own
modules, so a new import on this path is a decision, not an accident."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import yaml

CC = "hookgate.integrations.claude_code"
#: hookgate modules the local path (command and callable hooks) may import.
EXPECTED_HOOKGATE = {
    "hookgate", "hookgate.launcher", "hookgate.integrations", CC, f"{CC}.contract",
    f"{CC}.main", "hookgate.settings", "hookgate.events",
    "hookgate.outcome", "hookgate.handlers", "hookgate.handlers.base",
    "hookgate.handlers.subprocess", "hookgate.handlers.subprocess.runner",
    "hookgate.handlers.subprocess.output",
    "hookgate.handlers.command", "hookgate.handlers.callable", "hookgate.engine",
    "hookgate.drivers", "hookgate.background",
    "hookgate.audit", "hookgate.chain", "hookgate.definition", "hookgate.matching",
    "hookgate.hook_event", "hookgate.log", "hookgate.registry", "hookgate.safeguards",
    "hookgate.config", "hookgate.config.formats", "hookgate.payload_limits",
    "hookgate.state", "hookgate.state.model", "hookgate.state.stores", "hookgate.state.binding",
    "hookgate.host_code", "hookgate.handlers.subprocess.sandbox",
    "hookgate.hook_threads", "hookgate.hook_alarm", "hookgate.plain_calls", "hookgate.errors",
}
#: Packages that would mean a heavy import crept in.
FORBIDDEN = ("click", "aiohttp", "yarl", "multidict", "starlette", "uvicorn", "websockets",
             "pydantic", "prometheus_client", "opentelemetry", "cryptography", "aiosqlite",
             "asyncpg", "httpx", "redis", "tempfile", "shutil")


def imported_modules(tmp_path: Path, hooks_name: str) -> set[str]:
    (tmp_path / "guards.py").write_text("def allow_all(event):\n    return None\n")
    hooks = [  # both run: the callable abstains, then the command blocks
        {"name": "py", "event": "pre_tool_use", "handler_type": "callable",
         "config": {"callable": "guards:allow_all"}},
        {"name": "no-rm", "event": "pre_tool_use", "handler_type": "command",
         "matcher": "^Bash$", "config": {"command": "grep -q 'rm -rf' && exit 2; exit 0"}},
    ]
    path = tmp_path / hooks_name
    text = json.dumps({"hooks": hooks}) if hooks_name.endswith(".json") else yaml.safe_dump(
        {"hooks": hooks})
    path.write_text(text)
    event = {"session_id": "s", "cwd": str(tmp_path), "hook_event_name": "PreToolUse",
             "tool_name": "Bash", "tool_input": {"command": "rm -rf /"}}
    listing = tmp_path / "modules.json"
    # What the ``hookgate`` console script does, plus a note of sys.modules at exit
    # (``-X importtime`` misses modules loaded through importlib.import_module).
    script = (
        "import atexit, json, sys\n"
        f"note = lambda: open({str(listing)!r}, 'w').write(json.dumps(sorted(sys.modules)))\n"
        "atexit.register(note)\n"
        f"sys.argv = ['hookgate', 'claude-code', '--config', {str(path)!r}]\n"
        "from hookgate.launcher import main\n"
        "main()\n"
    )
    result = subprocess.run([sys.executable, "-c", script], input=json.dumps(event),
                            capture_output=True, text=True, timeout=60, check=False)
    assert result.returncode == 0, result.stderr[-2000:]
    assert json.loads(result.stdout)["hookSpecificOutput"]["permissionDecision"] == "deny"
    return set(json.loads(listing.read_text()))


def test_local_path_imports(tmp_path: Path) -> None:
    modules = imported_modules(tmp_path, "hookgate.yaml")
    assert {m for m in modules if m.split(".")[0] == "hookgate"} == EXPECTED_HOOKGATE
    assert not {m for m in modules if m.split(".")[0] in FORBIDDEN}
    assert "yaml" in modules  # the file is YAML


def test_a_json_hooks_file_needs_no_yaml(tmp_path: Path) -> None:
    modules = imported_modules(tmp_path, "hookgate.json")
    assert "yaml" not in modules
    assert not {m for m in modules if m.split(".")[0] in FORBIDDEN}


def test_gateway_path_needs_no_engine_and_no_asyncio(tmp_path: Path) -> None:
    # --gateway: the gateway answers in Claude Code's JSON, so only an HTTP request is made
    # (here to a closed port: it fails closed, through the same modules as an answer).
    from tests.server.gateway_process import free_port

    listing = tmp_path / "modules.json"
    script = (
        "import atexit, json, sys\n"
        f"note = lambda: open({str(listing)!r}, 'w').write(json.dumps(sorted(sys.modules)))\n"
        "atexit.register(note)\n"
        f"sys.argv = ['hookgate', 'claude-code', '--gateway', "
        f"'http://127.0.0.1:{free_port()}']\n"
        "from hookgate.launcher import main\n"
        "main()\n"
    )
    event = {"session_id": "s", "hook_event_name": "PreToolUse", "tool_name": "Bash",
             "tool_input": {"command": "ls"}}
    result = subprocess.run([sys.executable, "-c", script], input=json.dumps(event),
                            capture_output=True, text=True, timeout=60, check=False,
                            env={**os.environ, "HOOKGATE_API_KEY": "hg-x"})
    assert result.returncode == 2 and "cannot connect" in result.stderr
    modules = set(json.loads(listing.read_text()))
    assert {m for m in modules if m.split(".")[0] == "hookgate"} == {
        "hookgate", "hookgate.launcher", "hookgate.integrations", CC, f"{CC}.main",
        f"{CC}.gateway_transport"}
    assert "asyncio" not in modules and "yaml" not in modules
    assert not {m for m in modules if m.split(".")[0] in FORBIDDEN}
