"""Capture in ``before``, read in ``persist``: command-aware tool-result reduction.

``tool_result_persist`` sees the tool's result but not the command that produced it; the
``pre_tool_use`` hook sees the command. So the first hook stores the command in hook state
keyed on ``tool_use_id`` (present in both events), and the second reads it back to decide how
to rewrite the persisted result: environment dumps get their values masked, installer logs
are cut to their last lines. The entry is deleted once read; the TTL clears what a crashed
call leaves behind.

Run from the repository root: ``python -m examples.capture_in_before``.
"""

from __future__ import annotations

import asyncio
import re
from typing import Any

from hookgate import Engine, HookEvent

STATE = {"namespace": "command-capture", "ttl_s": 600}
ENV_DUMP = re.compile(r"^\s*(?:env|printenv|set|cat\s+\S*\.env\S*)\s*$")
INSTALLER = re.compile(r"^\s*(?:pip|npm|yarn|apt(?:-get)?|cargo)\s+(?:install|add|build)\b")
KEEP_LINES = 3


def capture_command(event: HookEvent) -> None:
    """pre_tool_use: remember which command this tool call runs."""
    command = (event.tool_input or {}).get("command")
    if event.tool_use_id and isinstance(command, str):
        event.state.session[f"cmd:{event.tool_use_id}"] = command


def _text(message: Any) -> str | None:
    if isinstance(message, str):
        return message
    if isinstance(message, list) and len(message) == 1 and isinstance(message[0], dict):
        text = message[0].get("text")
        return text if isinstance(text, str) else None
    return None


def _rewrap(message: Any, text: str) -> Any:
    return text if isinstance(message, str) else [{**message[0], "text": text}]


def reduce_persisted(event: HookEvent) -> dict[str, Any] | None:
    """tool_result_persist: rewrite the result according to the command captured before."""
    session = event.state.session
    command = session.pop(f"cmd:{event.tool_use_id}", None)
    text = _text(event.message)
    if command is None or text is None:
        return None
    if ENV_DUMP.match(command):
        masked = re.sub(r"(?m)^([A-Za-z_][A-Za-z0-9_]*)=.*$", r"\1=[masked]", text)
        return {"updated_input": _rewrap(event.message, masked),
                "reason": f"values of {command.strip()!r} masked"}
    lines = text.splitlines()
    if INSTALLER.match(command) and len(lines) > KEEP_LINES:
        cut = len(lines) - KEEP_LINES
        reduced = "\n".join([f"[{cut} lines of installer output reduced]", *lines[cut:]])
        return {"updated_input": _rewrap(event.message, reduced),
                "reason": f"installer output of {command.strip()!r} reduced"}
    return None


def build_engine() -> Engine:
    engine = Engine()
    engine.add({"event": "pre_tool_use", "handler_type": "callable", "name": "capture command",
                "config": {"callable": capture_command, "state": STATE}})
    engine.add({"event": "tool_result_persist", "handler_type": "callable",
                "name": "reduce by command",
                "config": {"callable": reduce_persisted, "state": STATE}})
    return engine


CALLS = [
    ("t1", "env", "HOME=/home/dev\nDB_PASSWORD=hunter2-but-longer\nPATH=/usr/bin"),
    ("t2", "pip install requests", "\n".join(f"Collecting package {n}" for n in range(8))),
    ("t3", "ls", "README.md\nsrc"),
]


async def main() -> None:
    engine = build_engine()
    try:
        # The agent announces every call first, then runs them, then persists the results:
        # the ids keep each result with its own command.
        for tool_use_id, command, _ in CALLS:
            await engine.fire("pre_tool_use", session_id="demo", tool_name="Bash",
                              tool_use_id=tool_use_id, tool_input={"command": command})
        for tool_use_id, command, output in reversed(CALLS):
            message = [{"type": "text", "text": output}]
            outcome = await engine.fire("tool_result_persist", session_id="demo",
                                        tool_name="Bash", tool_use_id=tool_use_id,
                                        message=message)
            persisted = outcome.updated_input or message
            print(f"--- {command}")
            print(persisted[0]["text"])
    finally:
        await engine.aclose()


if __name__ == "__main__":
    asyncio.run(main())
