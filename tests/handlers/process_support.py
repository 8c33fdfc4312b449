"""Helpers for process-hook tests: the scripted hook and reading its message log."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

SCRIPT = str(Path(__file__).parent / "scripts" / "scripted_process_hook.py")


def process_hook(
    event: str = "pre_tool_use",
    *,
    env: dict[str, str] | None = None,
    log: Path | None = None,
    answers: dict[str, Any] | None = None,
    name: str = "proc",
    **fields: Any,
) -> dict[str, Any]:
    """A hook definition for the scripted process hook."""
    config_env = dict(env or {})
    if log is not None:
        config_env["HOOK_LOG"] = str(log)
    if answers is not None:
        config_env["HOOK_ANSWERS"] = json.dumps(answers)
    config = {"command": [sys.executable, SCRIPT], "env": config_env, **fields.pop("config", {})}
    return {"event": event, "handler_type": "process", "name": name, "config": config, **fields}


def _log_lines(log: Path) -> list[dict[str, Any]]:
    if not log.exists():
        return []
    return [json.loads(line) for line in log.read_text().splitlines() if line.strip()]


def read_log(log: Path) -> list[dict[str, Any]]:
    """The messages the scripted hook received, in order."""
    return [line for line in _log_lines(log) if "eof" not in line]


def saw_eof(log: Path) -> bool:
    """Whether the scripted hook read the end of its stdin (and so left on its own)."""
    return {"eof": True} in _log_lines(log)


def pid_alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0]
    except FileNotFoundError:
        return False
    return state != "Z"

