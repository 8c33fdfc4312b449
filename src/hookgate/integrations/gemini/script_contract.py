"""Gemini CLI's hook-script contract for command hooks (``format: gemini``), so a Gemini CLI
hook script runs unchanged under hookgate (``hookgate import gemini`` writes such hooks).

The script gets what Gemini CLI would give it: the event under Gemini's name with Gemini's
field and tool names (``run_shell_command``, not ``Bash``), and ``GEMINI_PROJECT_DIR``,
``GEMINI_CWD``, ``GEMINI_SESSION_ID`` and ``CLAUDE_PROJECT_DIR``. Its answer is read as
Gemini CLI reads it: stdout (or stderr when stdout is empty) as JSON, whatever the exit code;
plain text allows on exit 0 and denies (with the text as reason) on exit 2 and above.

Where Gemini CLI lets the tool run on a failure, this reading fails instead (and a failure
blocks on a blocking event, unless the hook's ``on_error`` says otherwise): exit 1, a
non-zero exit that does not deny (``{}``, nothing), output that starts like a JSON object but
does not parse, and a ``decision`` Gemini does not know.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Final

from hookgate.integrations.agent_tools import GEMINI_TOOL_NAMES
from hookgate.integrations.gemini.contract import GEMINI_EVENTS, RENAMES
from hookgate.outcome import HookError, HookResult, MalformedAnswer

if TYPE_CHECKING:
    from hookgate.events import EventSpec

__all__ = ["command_document", "gemini_event_name", "gemini_input", "parse_command_answer"]

#: hookgate's canonical event → Gemini CLI's name for it.
_GEMINI_NAME: Final[Mapping[str, str]] = {ours: theirs for theirs, ours in GEMINI_EVENTS.items()}
#: hookgate's tool name → the Gemini name a script is shown (the first one in the table).
_GEMINI_TOOL: Final[Mapping[str, str]] = {
    ours: theirs for theirs, ours in reversed(list(GEMINI_TOOL_NAMES.items()))
}
#: Payload keys hookgate adds that a Gemini script never sees.
_INTERNAL: Final = frozenset(
    {
        "event_id",
        "tenant_id",
        "depth",
        "turn_id",
        "user_id",
        "agent_id",
        "source_agent",
        "agent_tool_name",
    }
)
_DECISIONS: Final[Mapping[str, str]] = {
    "allow": "allow",
    "approve": "allow",
    "deny": "block",
    "block": "block",
    "ask": "ask",
}


def gemini_event_name(spec: EventSpec) -> str:
    name = _GEMINI_NAME.get(spec.name)
    if name is None:
        raise HookError(
            f"Gemini CLI has no event for {spec.name}: a 'format: gemini' hook cannot run on it"
        )
    return name


def _gemini_tool(payload: Mapping[str, Any]) -> Any:
    own = payload.get("agent_tool_name")
    if isinstance(own, str) and own in GEMINI_TOOL_NAMES:
        return own
    name = payload.get("tool_name")
    return _GEMINI_TOOL.get(name, name) if isinstance(name, str) else name


def gemini_input(spec: EventSpec, payload: Mapping[str, Any], cwd: str | None) -> dict[str, Any]:
    """The stdin document a Gemini CLI hook script expects for this event."""
    event = gemini_event_name(spec)
    back = {ours: theirs for theirs, ours in RENAMES.get(event, {}).items()}
    document: dict[str, Any] = {
        "session_id": payload.get("session_id") or "",
        "transcript_path": payload.get("transcript_path") or "",
        "cwd": payload.get("cwd") or cwd or os.getcwd(),
        "hook_event_name": event,
        "timestamp": payload.get("timestamp")
        or datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z"),
    }
    for key, value in payload.items():
        if key not in _INTERNAL and key not in document:
            document[back.get(key, key)] = value
    if "tool_name" in document:
        document["tool_name"] = _gemini_tool(payload)
    if event == "AfterAgent":
        document.setdefault("stop_hook_active", False)
    return document


def command_document(
    spec: EventSpec, payload: Mapping[str, Any], cwd: str | None
) -> tuple[dict[str, Any], dict[str, str]]:
    """What a ``format: gemini`` command gets: Gemini's stdin document and the variables
    Gemini CLI sets for a hook."""
    document = gemini_input(spec, payload, cwd)
    folder = str(document["cwd"])
    return document, {
        "GEMINI_PROJECT_DIR": folder,
        "GEMINI_CWD": folder,
        "GEMINI_SESSION_ID": str(document["session_id"]),
        "CLAUDE_PROJECT_DIR": folder,
    }


def _parsed(text: str) -> Any:
    """Gemini's reading: JSON (a JSON string holding JSON is read once more), else None."""
    try:
        value = json.loads(text)
        if isinstance(value, str):
            value = json.loads(value)
    except (ValueError, RecursionError):
        if text.startswith("{"):
            raise MalformedAnswer(
                "output starts like a JSON object but does not parse (Gemini "
                "CLI would read it as text and let the action run)"
            ) from None
        return None
    return value if isinstance(value, dict | list) else None


def parse_command_answer(
    spec: EventSpec, code: int, stdout: str, stderr: str, details: dict[str, Any]
) -> HookResult:
    """Gemini CLI's exit-code and JSON contract, mapped onto a hookgate answer."""
    from hookgate.handlers.subprocess.output import failure_message

    event = gemini_event_name(spec)
    text = stdout.strip() or stderr.strip()
    document = _parsed(text) if text else None
    if document is None:
        if text and code >= 2:
            return HookResult(decision="block", reason=text, details=details)
        if code != 0:
            raise HookError(
                failure_message(code, stderr) + " (Gemini CLI would let the "
                "action run; hookgate fails closed)",
                details=details,
            )
        if text:
            details["system_message"] = text
        return HookResult(details=details)
    result = _from_gemini_json(event, document if isinstance(document, dict) else {}, details)
    if code != 0 and not result.blocks:
        raise HookError(
            failure_message(code, stderr) + " without a deny (Gemini CLI would "
            "let the action run; hookgate fails closed)",
            details=details,
        )
    return result


def _from_gemini_json(
    event: str, document: Mapping[str, Any], details: dict[str, Any]
) -> HookResult:
    result = HookResult(details=details)
    decision = document.get("decision")
    if decision is not None:
        mapped = _DECISIONS.get(decision) if isinstance(decision, str) else None
        if mapped is None:
            raise MalformedAnswer(
                f"decision must be one of {', '.join(_DECISIONS)}, got {decision!r}"
            )
        result.decision = mapped  # type: ignore[assignment]
    for key in ("reason", "stopReason", "systemMessage"):
        if document.get(key) is not None and not isinstance(document[key], str):
            raise MalformedAnswer(f"{key} must be a string")
    result.reason = document.get("reason") or None
    if document.get("systemMessage"):
        details["system_message"] = document["systemMessage"]
    cont = document.get("continue", True)
    if not isinstance(cont, bool):
        raise MalformedAnswer(f"'continue' must be true or false, got {cont!r}")
    if not cont:
        result.continue_ = False
        result.reason = (
            document.get("stopReason")
            or result.reason
            or (f"{event} hook asked to stop (continue: false)")
        )
    specific = document.get("hookSpecificOutput")
    if specific is not None:
        if not isinstance(specific, Mapping):
            raise MalformedAnswer("hookSpecificOutput must be an object")
        _apply_specific(event, specific, result)
    return result


def _apply_specific(event: str, specific: Mapping[str, Any], result: HookResult) -> None:
    context = specific.get("additionalContext")
    if context is not None:
        if not isinstance(context, str):
            raise MalformedAnswer("hookSpecificOutput.additionalContext must be a string")
        if context:
            result.additional_context.append(context)
    tool_input = specific.get("tool_input")
    if tool_input is not None and event == "BeforeTool":
        if not isinstance(tool_input, Mapping):
            raise MalformedAnswer("hookSpecificOutput.tool_input must be an object")
        result.updated_input = dict(tool_input)
    ignored = sorted(set(specific) - {"hookEventName", "additionalContext", "tool_input"})
    if ignored:
        # llm_request, llm_response, toolConfig, clearContext: Gemini-only rewrites
        result.details["ignored_keys"] = ignored
