"""Google Gemini CLI's hook contract, both ways (checked with Gemini CLI 0.61.0).

Gemini CLI runs ``hookgate gemini`` as a command hook: its JSON on stdin (``hook_event_name``
names one of its 11 events), an answer as JSON on stdout. Gemini reads stdout (or stderr
when stdout is empty) as JSON when it parses, whatever the exit code; otherwise exit 0 and
1 allow and any other code denies. **A crash (exit 1), exit 2 with ``{}`` or nothing, a
timeout or a kill let the tool run**, so hookgate always answers JSON with exit 0 and turns
its own failures into ``{"decision": "deny"}`` on the events that can be stopped.

What each event can express:

* ``BeforeTool``: ``decision: "deny"`` (the model gets the reason as the tool's error),
  ``hookSpecificOutput.tool_input`` (merged into the call's arguments: a rewrite).
* ``AfterTool``: ``decision: "deny"`` (the tool already ran; the model gets the reason, not
  the output: a withheld or redacted output goes that way), ``additionalContext``.
* ``BeforeAgent`` (the prompt) and ``BeforeModel``: ``deny`` means no model call;
  ``additionalContext``.
* ``AfterAgent``: ``deny`` makes Gemini retry the turn with the reason, without end if it
  always denies; hookgate honours at most :data:`~hookgate.integrations.codex.contract.STOP_RETRIES`
  in a row per session.
* ``continue: false`` stops the agent (hookgate's abort).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from hookgate.integrations.agent_reply import BridgeReply, block_reason
from hookgate.integrations.agent_tools import GEMINI_TOOL_NAMES
from hookgate.integrations.codex.contract import STOP_RETRIES
from hookgate.outcome import Outcome

__all__ = ["GEMINI_EVENTS", "INSTALLED_EVENTS", "GeminiContract", "failure_answer",
           "gemini_answer"]

#: Gemini CLI's event → hookgate's canonical event.
GEMINI_EVENTS: Final[Mapping[str, str]] = {
    "SessionStart": "session_start",
    "SessionEnd": "session_end",
    "BeforeAgent": "user_prompt_submit",
    "AfterAgent": "stop",
    "BeforeModel": "before_llm",
    "AfterModel": "after_llm",
    "BeforeToolSelection": "list_tools",
    "BeforeTool": "pre_tool_use",
    "AfterTool": "post_tool_use",
    "PreCompress": "before_compaction",
    "Notification": "notification",
}
#: What ``hookgate gemini install`` hooks by default: every event but the two model events
#: and tool selection, which fire several times per turn and carry the whole request
#: (``--event`` adds them).
INSTALLED_EVENTS: Final = ("SessionStart", "SessionEnd", "BeforeAgent", "AfterAgent",
                           "BeforeTool", "AfterTool", "PreCompress", "Notification")
#: Events where hookgate's own failure must stop the action.
_FAIL_CLOSED: Final = frozenset({"BeforeTool", "AfterTool", "BeforeAgent", "BeforeModel",
                                 "AfterModel", "BeforeToolSelection"})


def _text(value: Any) -> str:
    if isinstance(value, str):
        return value
    import json

    return json.dumps(value, default=str)


def gemini_answer(event: str, outcome: Outcome, *, stop_blocks_so_far: int = 0) -> BridgeReply:
    """Gemini CLI's JSON for ``outcome`` on Gemini event ``event``."""
    out: dict[str, Any] = {}
    specific: dict[str, Any] = {"hookEventName": event}
    notes: list[str] = []
    context = "\n\n".join(outcome.additional_context)
    denied = block_reason(outcome)
    if event == "AfterAgent":
        if denied is not None:
            if stop_blocks_so_far < STOP_RETRIES:
                out.update(decision="deny", reason=denied)
            else:
                notes.append(f"AfterAgent denied {stop_blocks_so_far} times in a row in this "
                             f"session; letting the agent finish ({denied})")
    elif denied is not None and event in _FAIL_CLOSED:
        out.update(decision="deny", reason=denied)
    elif event == "BeforeTool" and outcome.result is not None:
        # Gemini takes no synthetic result: the call is denied, the result is the reason.
        out.update(decision="deny", reason=_text(outcome.result))
    elif event == "BeforeTool" and outcome.updated_input is not None:
        specific["tool_input"] = outcome.updated_input
    elif event == "AfterTool" and outcome.updated_input is not None:
        # A rewritten output (a redaction): the model is shown the deny's reason instead.
        out.update(decision="deny", reason=_text(outcome.updated_input))
    elif event == "BeforeAgent" and outcome.updated_input is not None:
        out.update(decision="deny", reason="a hook rewrote this prompt, which Gemini CLI "
                   "cannot apply: " + _text(outcome.updated_input)[:2000])
    elif denied is not None:
        notes.append(f"{event} cannot be stopped in Gemini CLI: {denied}")
    if context and event in ("SessionStart", "BeforeAgent", "AfterTool", "BeforeModel"):
        specific["additionalContext"] = context
    elif context:
        notes.append(f"Gemini CLI takes no context on {event}: {context}")
    if outcome.abort is not None or not outcome.continue_:
        out["continue"] = False
        out["stopReason"] = outcome.reason or "stopped by hookgate"
    if len(specific) > 1:
        out["hookSpecificOutput"] = specific
    # Gemini reads stderr only when stdout is empty: a note always goes with some JSON.
    if notes and not out:
        out["systemMessage"] = "; ".join(notes)
    return BridgeReply(stdout=out or None, stderr="; ".join(notes))


def failure_answer(event: str | None, message: str) -> BridgeReply:
    """hookgate itself failed: deny where Gemini can be stopped (and when the event is not
    known), else only say so (exit 0 either way)."""
    reason = f"hookgate: {message}"
    if event is None or event in _FAIL_CLOSED:
        return BridgeReply(stdout={"decision": "deny", "reason": reason}, stderr=reason)
    return BridgeReply(stdout={"systemMessage": reason}, stderr=reason)


#: Gemini's field names where hookgate's differ, per Gemini event.
RENAMES: Final[Mapping[str, Mapping[str, str]]] = {
    "AfterAgent": {"prompt_response": "last_message"},
    "BeforeModel": {"llm_request": "request"},
    "AfterModel": {"llm_request": "request", "llm_response": "response"},
    "BeforeToolSelection": {"llm_request": "request"},
}


class GeminiContract:
    """Gemini CLI for :func:`hookgate.integrations.agent_bridge.answer`."""

    name = "gemini"
    events = GEMINI_EVENTS
    renames = RENAMES
    stop_events = frozenset({"AfterAgent"})
    tool_names = GEMINI_TOOL_NAMES

    def reply(self, event: str, outcome: Outcome, stop_blocks_so_far: int) -> BridgeReply:
        return gemini_answer(event, outcome, stop_blocks_so_far=stop_blocks_so_far)

    def failure(self, event: str | None, message: str) -> BridgeReply:
        return failure_answer(event, message)
