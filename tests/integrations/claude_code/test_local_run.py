"""The blocking driver of ``hookgate claude-code`` against the engine: the same definitions and
event give the same outcome (real commands, real functions, real timeouts)."""

from __future__ import annotations

import re
import sys
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from hookgate.definition import HookDefinition
from hookgate.definition_model import validate_definition
from hookgate.engine import Engine
from hookgate.events import get_event
from hookgate.integrations.claude_code.local_run import run_blocking
from hookgate.outcome import Outcome
from hookgate.settings import Settings

MODULE = '''
import time

def block_rm(event):
    if "rm" in str(event.tool_input):
        return {"decision": "block", "reason": "callable says no rm"}
    return None

def rewrite(event):
    return {"updated_input": {"command": "ls -l"}}

def context(event):
    return {"additional_context": "from a function"}

def crash(event):
    raise RuntimeError("boom")

def slow(event):
    time.sleep(3)
    return {"decision": "block", "reason": "too late"}

async def asynchronous(event):
    return None
'''


@pytest.fixture(scope="module", autouse=True)
def hook_module(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    folder = tmp_path_factory.mktemp("hooks")
    (folder / "cc_local_hooks.py").write_text(MODULE)
    sys.path.insert(0, str(folder))
    yield
    sys.path.remove(str(folder))
    sys.modules.pop("cc_local_hooks", None)


def command(name: str, script: str, **extra: Any) -> dict[str, Any]:
    return {"name": name, "event": "pre_tool_use", "handler_type": "command",
            "config": {"command": script}, **extra}


def function(name: str, target: str, **extra: Any) -> dict[str, Any]:
    return {"name": name, "event": "pre_tool_use", "handler_type": "callable",
            "config": {"callable": f"cc_local_hooks:{target}"}, **extra}


def definitions(raw: list[dict[str, Any]]) -> list[HookDefinition]:
    return [validate_definition({"order": n, **item}, default_scope="global")
            for n, item in enumerate(raw, 1)]


def summary(outcome: Outcome) -> dict[str, Any]:
    # Times differ from run to run, and the engine measures the input in bytes where the
    # blocking driver (no orjson) counts characters: the same bound, a different unit.
    reason = re.sub(r"\d+ ms \(", "N ms (", outcome.reason or "")
    reason = reason.replace(" characters", " bytes")
    return {
        "decision": outcome.decision, "reason": reason,
        "updated_input": outcome.updated_input, "context": outcome.additional_context,
        "continue": outcome.continue_, "abort": outcome.abort, "result": outcome.result,
        "trace": [(entry.name, entry.decision) for entry in outcome.trace],
    }


async def both(raw: list[dict[str, Any]], event: str, payload: Mapping[str, Any],
               settings: Settings | None = None) -> tuple[dict[str, Any], dict[str, Any]]:
    settings = settings or Settings()
    defs = definitions(raw)
    spec = get_event(event)
    blocking = run_blocking(spec, payload, defs, settings)
    assert blocking is not None, "the blocking driver refused to run these hooks"
    engine = Engine(settings=settings)
    for definition in defs:
        engine.registry.put(definition)
    try:
        fired = await engine.fire(spec.name, payload, wait=True)
    finally:
        await engine.aclose()
    return summary(blocking), summary(fired)


BASH_RM = {"session_id": "s", "tool_name": "Bash", "tool_input": {"command": "rm -rf /"}}
BASH_LS = {"session_id": "s", "tool_name": "Bash", "tool_input": {"command": "ls"}}

CASES: dict[str, tuple[list[dict[str, Any]], str, Mapping[str, Any]]] = {
    "command blocks": ([command("no-rm", "grep -q rm && { echo no >&2; exit 2; }; exit 0")],
                       "pre_tool_use", BASH_RM),
    "command allows": ([command("no-rm", "grep -q rm && exit 2; exit 0")], "pre_tool_use",
                       BASH_LS),
    "rewrite then the next hook sees it": (
        [command("fix", """echo '{"updated_input": {"command": "rm -rf /tmp/x"}}'""",
                 priority=10),
         function("no-rm", "block_rm")], "pre_tool_use", BASH_LS),
    "claude_code format with context": (
        [{**command("ctx", """echo '{"hookSpecificOutput": {"hookEventName": "PreToolUse",
         "additionalContext": "careful"}}'"""), "config": {
            "command": """echo '{"hookSpecificOutput": {"hookEventName": "PreToolUse", """
                       """"additionalContext": "careful"}}'""", "format": "claude_code"}},
         function("ctx2", "context")], "pre_tool_use", BASH_LS),
    "error blocks by default": ([command("fails", "echo broken >&2; exit 1")], "pre_tool_use",
                                BASH_LS),
    "error allowed by on_error": ([command("fails", "exit 1", on_error="allow"),
                                   command("next", "exit 2")], "pre_tool_use", BASH_LS),
    "function raises": ([function("crash", "crash")], "pre_tool_use", BASH_LS),
    "malformed answer": ([command("bad", "echo '{\"decision\": '")], "pre_tool_use", BASH_LS),
    "matcher and disabled hooks skip": (
        [command("other-tool", "exit 2", matcher="^Write$"),
         command("off", "exit 2", enabled=False),
         command("ok", "exit 0")], "pre_tool_use", BASH_LS),
    "if_expr filters": ([command("rm-only", "exit 2", if_expr='tool_input.command == "ls"')],
                        "pre_tool_use", BASH_LS),
    "too deep": ([command("any", "exit 0")], "pre_tool_use", {**BASH_LS, "depth": 9}),
    "prompt blocked": ([{"name": "secret", "event": "user_prompt_submit",
                         "handler_type": "command",
                         "config": {"command": "grep -q secret && exit 2; exit 0"}}],
                       "user_prompt_submit", {"session_id": "s", "prompt": "a secret"}),
    "post_tool_use waited for": ([{"name": "check", "event": "post_tool_use",
                                   "handler_type": "command",
                                   "config": {"command": "echo 'bad output' >&2; exit 2"}}],
                                 "post_tool_use",
                                 {**BASH_LS, "tool_response": "x"}),
    "session_start context from every hook": (
        [{"name": f"ctx{n}", "event": "session_start", "handler_type": "command",
          "config": {"command": f"echo '{{\"additional_context\": \"c{n}\"}}'"}}
         for n in range(3)], "session_start", {"session_id": "s", "source": "startup"}),
    "input over the limits": ([command("any", "exit 0")], "pre_tool_use",
                              {**BASH_LS, "tool_input": {"command": "x" * (9 * 1024 * 1024)}}),
}


@pytest.mark.parametrize("case", list(CASES))
async def test_same_outcome_as_the_engine(case: str) -> None:
    raw, event, payload = CASES[case]
    blocking, fired = await both(raw, event, payload)
    assert blocking == fired


async def test_timeouts_hold_and_follow_on_timeout() -> None:
    raw = [command("slow", "sleep 5; exit 2", timeout_ms=300),
           function("slow-fn", "slow", timeout_ms=300, on_timeout="allow"),
           command("after", "exit 0")]
    started = time.monotonic()
    blocking, fired = await both(raw, "pre_tool_use", BASH_LS)
    assert blocking == fired and blocking["decision"] == "block"
    raw[0]["on_timeout"] = "allow"
    blocking, fired = await both(raw, "pre_tool_use", BASH_LS)
    assert blocking == fired and blocking["trace"] == [
        ("slow", "timeout"), ("slow-fn", "timeout"), ("after", "allow")]
    assert time.monotonic() - started < 4.5  # no hook ran to its end: each was cut off


async def test_host_code_refused_at_run_time_blocks() -> None:
    blocking, fired = await both([command("cmd", "exit 0")], "pre_tool_use", BASH_LS,
                                 Settings(edition="standard"))
    assert blocking == fired and blocking["decision"] == "block"


def test_hooks_that_need_the_engine_are_left_to_it(tmp_path: Path) -> None:
    spec = get_event("pre_tool_use")
    for raw in ([function("async", "asynchronous")],
                [{"name": "web", "event": "pre_tool_use", "handler_type": "http",
                  "config": {"url": "http://127.0.0.1:9/"}}],
                [command("stateful", "exit 0") | {"config": {
                    "command": "exit 0", "state": True}}]):
        assert run_blocking(spec, BASH_LS, definitions(raw), Settings()) is None
