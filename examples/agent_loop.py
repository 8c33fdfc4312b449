"""A toy agent loop guarded by hookgate: every tool call goes through ``pre_tool_use``.

Run from the repository root: ``python -m examples.agent_loop``.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import hookgate

TOOLS = {
    "exec": lambda args: f"ran {args['cmd']!r}",
    "write_file": lambda args: f"wrote {args['path']}",
}
PLAN: list[tuple[str, dict[str, Any]]] = [
    ("exec", {"cmd": "ls"}),
    ("exec", {"cmd": "rm -rf / --no-preserve-root"}),
    ("write_file", {"path": "/etc/motd", "content": "hi"}),
]


async def main() -> None:
    engine = hookgate.Engine()
    engine.load(Path(__file__).with_name("hooks.yaml"))
    start = await engine.fire("session_start", session_id="demo", wait=True)
    print("context:", start.additional_context)
    for tool, args in PLAN:
        outcome = await engine.fire("pre_tool_use", session_id="demo", tool_name=tool,
                                    tool_input=args)
        if outcome.blocked:
            print(f"{tool}: BLOCKED ({outcome.reason})")
            continue
        args = outcome.updated_input if outcome.updated_input is not None else args
        result = TOOLS[tool](args)
        print(f"{tool}: {result}")
        await engine.fire("post_tool_use", session_id="demo", tool_name=tool, tool_input=args,
                          tool_response=result)
    await engine.aclose()


if __name__ == "__main__":
    asyncio.run(main())
