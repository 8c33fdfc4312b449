"""Callable hooks of the MCP proxy attacks (``tests.attacks.mcp_hookfns:…``), loaded by a
hooks file or allowed on a test gateway (``--allow-callable tests.attacks.mcp_hookfns``)."""

from __future__ import annotations

import re
from typing import Any

_TOKEN = re.compile(r"ghp_[A-Za-z0-9]{20,}")


def _output_text(event: Any) -> str:
    response = event["tool_response"] or {}
    return "".join(
        block.get("text", "") for block in response.get("content", []) if isinstance(block, dict)
    )


def flag_injection(event: Any) -> dict[str, Any] | None:
    """post_tool_use: an output that tries to instruct the model is blocked."""
    if "IGNORE ALL PREVIOUS" in _output_text(event):
        return {"decision": "block", "reason": "prompt injection in the tool output"}
    return None


def stop_on_injection(event: Any) -> dict[str, Any] | None:
    if "IGNORE ALL PREVIOUS" in _output_text(event):
        return {"abort": "turn", "reason": "injection: run stopped"}
    return None


def mask_tokens(event: Any) -> dict[str, Any] | None:
    """post_tool_use: GitHub tokens in an output are masked."""
    text = _output_text(event)
    if _TOKEN.search(text):
        return {"updated_input": _TOKEN.sub("[token masked by hookgate]", text)}
    return None


def no_deletes(event: Any) -> dict[str, Any] | None:
    """pre_tool_use: deleting is not allowed."""
    if "delete" in (event["tool_name"] or ""):
        return {"decision": "block", "reason": "deleting is not allowed"}
    return None


def read_only_tools(event: Any) -> dict[str, Any]:
    """list_tools: an allow-list of the tools the agent may see and call."""
    allowed = {"read_file", "fetch_page", "big_output", "ask_model", "ask_user",
               "leak_after_stopping"}
    return {"updated_input": [tool for tool in event["tools"] if tool["name"] in allowed]}


def hide_delete_file(event: Any) -> dict[str, Any]:
    """list_tools: a deny-list hiding the one tool named delete_file."""
    return {"updated_input": [tool for tool in event["tools"] if tool["name"] != "delete_file"]}


_FIRST_SESSION: list[str] = []


def first_session_only_deletes(event: Any) -> dict[str, Any]:
    """list_tools: delete_file is shown to the first client (session) only, the operator's."""
    session = event["session_id"]
    if not _FIRST_SESSION:
        _FIRST_SESSION.append(session)
    if session == _FIRST_SESSION[0]:
        return {"updated_input": event["tools"]}
    return {"updated_input": [tool for tool in event["tools"] if tool["name"] != "delete_file"]}
