"""``hookgate claude-code`` starts once per Claude Code hook event, so it imports only what
its path needs: no click CLI, no gateway, no HTTP client, no other command's modules, no
hooks-file format plugins for a plain hookgate file. The list is exact for hookgate's own
modules, so a new import on this path is a decision, not an accident.

The per-event process is a relay to the warm process (``RELAY``: nothing but ``_socket`` and
``__future__`` beyond a bare interpreter); the other lists are the event run in its own
process (``HOOKGATE_CLAUDE_CODE_WARM=off``, or where no warm process can take it), which is
also what the warm process's worker runs."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

import yaml

CC = "hookgate.integrations.claude_code"
#: The per-event relay: hands the event to the warm process.
RELAY = {"hookgate", "hookgate.launcher", "hookgate.integrations", CC, f"{CC}.startup",
         f"{CC}.relay", f"{CC}.warm_place", f"{CC}.warm_wire", "hookgate.errors"}
#: Always there: the entry point and its package (the relay, which runs the event itself),
#: with the warm process's in-place rule (:mod:`.in_place`, imports nothing of hookgate).
ENTRY = RELAY | {f"{CC}.main", f"{CC}.in_place"}
#: An event the cached hooks file has no hook for: answered from the cache entry alone.
NOTHING_TO_RUN = ENTRY | {f"{CC}.definition_cache", "hookgate.errors"}
#: A cached file with command and callable hooks: the chain on the blocking driver.
CACHED = NOTHING_TO_RUN | {
    f"{CC}.local_run", f"{CC}.contract", "hookgate.chain", "hookgate.events",
    "hookgate.outcome", "hookgate.matching", "hookgate.hook_event", "hookgate.host_code",
    "hookgate.payload_limits", "hookgate.registry", "hookgate.matcher_index",
    "hookgate.compiled_hook", "hookgate.outcall_types",
    "hookgate.definition",
    "hookgate.settings",
    "hookgate.handlers", "hookgate.handlers.base", "hookgate.handlers.callable",
    "hookgate.handlers.command", "hookgate.handlers.subprocess",
    "hookgate.handlers.subprocess.runner", "hookgate.sandbox",
    "hookgate.handlers.subprocess.output",
}
#: The first run of a file (or one after it changed) validates it as ``hookgate check`` does,
#: with the definition schema and the config models of its hooks' types (pydantic models)
#: and the handler types' rules.
VALIDATED = CACHED | {"hookgate.config", "hookgate.config.formats", "hookgate.definition_model",
                      "hookgate.handlers.checks", "hookgate.state", "hookgate.state.model",
                      "hookgate.handlers.config_model", "hookgate.handlers.command_config",
                      "hookgate.handlers.callable_config"}
#: Packages that would mean a heavy import crept in.
FORBIDDEN = ("click", "aiohttp", "yarl", "multidict", "starlette", "uvicorn", "websockets",
             "pydantic", "prometheus_client", "opentelemetry", "cryptography", "aiosqlite",
             "asyncpg", "httpx", "redis", "tempfile", "shutil", "asyncio", "logging")
#: What validating a file may add: the schema's pydantic, with the tempfile and shutil its
#: plugin lookup (importlib.metadata) loads; never on a cached run.
FORBIDDEN_WHEN_VALIDATING = tuple(
    name for name in FORBIDDEN if name not in ("pydantic", "tempfile", "shutil")
)
#: Not on a cached run either: the parser, the validation's pathlib, the audit's JSON encoder.
NOT_WHEN_CACHED = ("yaml", "pathlib", "orjson", "uuid")


def hookgate_modules(modules: set[str]) -> set[str]:
    return {m for m in modules if m.split(".")[0] == "hookgate"}


def forbidden(modules: set[str], names: tuple[str, ...] = FORBIDDEN) -> set[str]:
    return {m for m in modules if m.split(".")[0] in names}


def run_listing(tmp_path: Path, hooks: Path, event: dict[str, object], warm: str = "off"
                ) -> tuple[set[str], str]:
    """Run ``hookgate claude-code --config HOOKS`` as the console script does; the modules
    loaded by the end (``-X importtime`` misses importlib.import_module) and stdout."""
    listing = tmp_path / "modules.json"
    script = (
        "import atexit, sys\n"
        f"def note():\n    open({str(listing)!r}, 'w').write(repr(sorted(sys.modules)))\n"
        "atexit.register(note)\n"
        f"sys.argv = ['hookgate', 'claude-code', '--config', {str(hooks)!r}]\n"
        "from hookgate.launcher import main\n"
        "main()\n"
    )
    result = subprocess.run([sys.executable, "-c", script], input=json.dumps(event),
                            capture_output=True, text=True, timeout=60, check=False,
                            env={**os.environ, "HOOKGATE_CLAUDE_CODE_WARM": warm})
    assert result.returncode == 0, result.stderr[-2000:]
    return set(ast.literal_eval(listing.read_text())), result.stdout


def hooks_file(tmp_path: Path, name: str) -> Path:
    (tmp_path / "guards.py").write_text("def allow_all(event):\n    return None\n")
    hooks = [  # both run: the callable abstains, then the command blocks
        {"name": "py", "event": "pre_tool_use", "handler_type": "callable",
         "config": {"callable": "guards:allow_all"}},
        {"name": "no-rm", "event": "pre_tool_use", "handler_type": "command",
         "matcher": "^Bash$", "config": {"command": "grep -q 'rm -rf' && exit 2; exit 0"}},
    ]
    path = tmp_path / name
    text = json.dumps({"hooks": hooks}) if name.endswith(".json") else yaml.safe_dump(
        {"hooks": hooks})
    path.write_text(text)
    return path


def rm_rf(tmp_path: Path) -> dict[str, object]:
    return {"session_id": "s", "cwd": str(tmp_path), "hook_event_name": "PreToolUse",
            "tool_name": "Bash", "tool_input": {"command": "rm -rf /"}}


def denied(stdout: str) -> bool:
    return bool(json.loads(stdout)["hookSpecificOutput"]["permissionDecision"] == "deny")


def test_local_path_imports(tmp_path: Path) -> None:
    hooks = hooks_file(tmp_path, "hookgate.yaml")
    modules, stdout = run_listing(tmp_path, hooks, rm_rf(tmp_path))
    assert denied(stdout)
    assert hookgate_modules(modules) == VALIDATED
    assert not forbidden(modules, FORBIDDEN_WHEN_VALIDATING)
    assert "yaml" in modules  # the file is YAML, read for the first time
    modules, stdout = run_listing(tmp_path, hooks, rm_rf(tmp_path))
    assert denied(stdout)
    assert hookgate_modules(modules) == CACHED
    assert not forbidden(modules) and not forbidden(modules, NOT_WHEN_CACHED)


def test_the_relay_imports_next_to_nothing(tmp_path: Path, warm_folder: Path) -> None:
    # The event itself runs in the warm process (required here: not taken would fail it).
    hooks = hooks_file(tmp_path, "hookgate.yaml")
    bare = subprocess.run([sys.executable, "-c", "import sys; print(repr(sorted(sys.modules)))"],
                          capture_output=True, text=True, timeout=60, check=True)
    before = set(ast.literal_eval(bare.stdout)) | {"atexit"}  # atexit: the listing's
    # The first event starts the warm process (and locks its lock file), the second finds it.
    for starting in ({"fcntl"}, set()):
        modules, stdout = run_listing(tmp_path, hooks, rm_rf(tmp_path), warm="require")
        assert denied(stdout)
        assert hookgate_modules(modules) == RELAY
        assert modules - before == RELAY | {"_socket", "__future__"} | starting


def test_a_json_hooks_file_needs_no_yaml(tmp_path: Path) -> None:
    modules, stdout = run_listing(tmp_path, hooks_file(tmp_path, "hookgate.json"),
                                  rm_rf(tmp_path))
    assert denied(stdout)
    assert "yaml" not in modules
    assert not forbidden(modules, FORBIDDEN_WHEN_VALIDATING)


def test_an_event_without_hooks_loads_no_engine(tmp_path: Path) -> None:
    hooks = tmp_path / "hookgate.json"
    hooks.write_text(json.dumps({"hooks": [
        {"name": "no-rm", "event": "pre_tool_use", "handler_type": "command",
         "config": {"command": "grep -q 'rm -rf' && exit 2; exit 0"}}]}))
    run_listing(tmp_path, hooks, rm_rf(tmp_path))  # validates and fills the cache
    stop = {"session_id": "s", "cwd": str(tmp_path), "hook_event_name": "Stop"}
    modules, stdout = run_listing(tmp_path, hooks, stop)
    assert stdout == ""
    assert hookgate_modules(modules) == NOTHING_TO_RUN
    assert not forbidden(modules) and not forbidden(modules, NOT_WHEN_CACHED)


def test_a_tool_no_matcher_names_loads_no_engine(tmp_path: Path) -> None:
    hooks = tmp_path / "hookgate.json"
    hooks.write_text(json.dumps({"hooks": [
        {"name": "no-rm", "event": "pre_tool_use", "handler_type": "command",
         "matcher": "^(?:Bash|Write)$", "config": {"command": "exit 2"}}]}))
    run_listing(tmp_path, hooks, rm_rf(tmp_path))  # validates and fills the cache
    modules, stdout = run_listing(tmp_path, hooks, {**rm_rf(tmp_path), "tool_name": "Read"})
    assert stdout == ""
    assert hookgate_modules(modules) == NOTHING_TO_RUN


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
    assert {m for m in modules if m.split(".")[0] == "hookgate"} == ENTRY | {
        f"{CC}.gateway_transport"} - {f"{CC}.warm_place"}
    assert "asyncio" not in modules and "yaml" not in modules
    assert not {m for m in modules if m.split(".")[0] in FORBIDDEN}
