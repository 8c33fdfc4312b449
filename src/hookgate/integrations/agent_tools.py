"""One policy for every coding agent: each agent's tool names mapped onto hookgate's.

hookgate names tools as Claude Code does (``Bash``, ``Read``, ``Write``, ``Edit``, …), so one
hooks file with ``matcher: ^Bash$`` and an ``if_expr`` on ``tool_input.command`` governs
Claude Code, Codex CLI and Gemini CLI alike. The agent's own name is kept in the payload as
``agent_tool_name`` (a matcher never sees it; an ``if_expr`` may).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

__all__ = ["AGENT_TOOL_NAMES", "CODEX_TOOL_NAMES", "GEMINI_TOOL_NAMES", "canonical_tool"]

#: Codex CLI's tool names → hookgate's (hooks already see its unified exec tool as "Bash").
CODEX_TOOL_NAMES: Final[Mapping[str, str]] = {
    "exec_command": "Bash",
    "shell": "Bash",
    "local_shell": "Bash",
}
#: Gemini CLI's tool names → hookgate's; the first Gemini name of each hookgate name is the
#: one a ``format: gemini`` hook script is shown for it.
GEMINI_TOOL_NAMES: Final[Mapping[str, str]] = {
    "run_shell_command": "Bash",
    "read_file": "Read",
    "read_many_files": "Read",
    "write_file": "Write",
    "replace": "Edit",
    "glob": "Glob",
    "search_file_content": "Grep",
    "grep": "Grep",
    "list_directory": "LS",
    "web_fetch": "WebFetch",
    "google_web_search": "WebSearch",
}
#: The agent's tool name → hookgate's. The shell tools all take ``{"command": str, …}``.
AGENT_TOOL_NAMES: Final[Mapping[str, str]] = {**CODEX_TOOL_NAMES, **GEMINI_TOOL_NAMES}


def canonical_tool(payload: dict[str, Any], names: Mapping[str, str] = AGENT_TOOL_NAMES
                   ) -> None:
    """Rename ``payload['tool_name']`` to hookgate's name in place (keeping the agent's) by
    the agent's table ``names``, and give a shell command as a list (Codex's ``["bash",
    "-lc", cmd]``) as one string."""
    name = payload.get("tool_name")
    if not isinstance(name, str) or name not in names:
        return
    payload["agent_tool_name"] = name
    payload["tool_name"] = names[name]
    tool_input = payload.get("tool_input")
    if payload["tool_name"] == "Bash" and isinstance(tool_input, dict):
        command = tool_input.get("command")
        if isinstance(command, list) and all(isinstance(part, str) for part in command):
            shell = command[-1] if len(command) == 3 and command[1] in ("-c", "-lc") else None
            payload["tool_input"] = {**tool_input, "command": shell or " ".join(command)}
