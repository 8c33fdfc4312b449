"""OpenAI Codex CLI's hook contract, both ways (checked with Codex 0.171.0).

Codex runs ``hookgate codex`` as a command hook: its JSON on stdin (Claude Code's field names,
``hook_event_name`` naming the event), an answer as JSON on stdout with exit 0. Codex **fails
open** on anything else (a crash, exit 1, invalid JSON, exit 2 with empty stderr, a timeout,
an answer field it does not support), so this module only ever emits what Codex honours:

* ``PreToolUse``: ``permissionDecision: "deny"`` with a reason, or ``"allow"`` with
  ``updatedInput`` (a rewrite; ``allow`` alone is unsupported and would count as a failure).
* ``PostToolUse``: ``decision: "block"`` replaces the output the model sees with the reason
  (a redaction is sent that way too: Codex ignores ``updatedToolOutput``);
  ``additionalContext`` reaches the model.
* ``UserPromptSubmit``: ``decision: "block"`` (no model request), ``additionalContext``.
* ``SessionStart``: ``additionalContext``.
* ``Stop``: ``decision: "block"`` makes Codex go on with the reason as a user message and
  run Stop again with ``stop_hook_active: true``; with no cap of Codex's own, the bridge
  honours at most :data:`STOP_RETRIES` blocks in a row per session.

Every failure inside hookgate becomes an explicit deny/block on the events where that stops
the action (never exit 1, never exit 2 with an empty stderr).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from hookgate.integrations.agent_reply import BridgeReply, block_reason
from hookgate.outcome import Outcome

__all__ = [
    "CODEX_EVENTS",
    "INSTALLED_EVENTS",
    "STOP_RETRIES",
    "CodexContract",
    "codex_answer",
    "failure_answer",
]

#: Codex's event name → hookgate's canonical event (the protocol's 14 names, where hookgate
#: has one).
CODEX_EVENTS: Final[Mapping[str, str]] = {
    "SessionStart": "session_start",
    "SessionEnd": "session_end",
    "UserPromptSubmit": "user_prompt_submit",
    "PreToolUse": "pre_tool_use",
    "PermissionRequest": "approve_tool",
    "PostToolUse": "post_tool_use",
    "PreCompact": "before_compaction",
    "PostCompact": "after_compaction",
    "SubagentStart": "subagent_start",
    "SubagentStop": "subagent_stop",
    "Stop": "stop",
}
#: What ``hookgate codex install`` hooks: the events ``codex exec`` fires, each tested with
#: the real CLI.
INSTALLED_EVENTS: Final = ("SessionStart", "UserPromptSubmit", "PreToolUse", "PostToolUse",
                           "Stop")
#: Blocks of Stop honoured in a row within one session before the agent may stop anyway.
STOP_RETRIES: Final = 3
#: Events where a failure of hookgate's must stop the action.
_FAIL_CLOSED: Final = frozenset({"PreToolUse", "PermissionRequest", "UserPromptSubmit",
                                 "PostToolUse"})


def _text(value: Any) -> str:
    if isinstance(value, str):
        return value
    import json

    return json.dumps(value, default=str)


def codex_answer(event: str, outcome: Outcome, *, stop_blocks_so_far: int = 0) -> BridgeReply:
    """Codex's JSON for ``outcome`` on Codex event ``event``."""
    reason = outcome.reason or "blocked by hookgate"
    context = "\n\n".join(outcome.additional_context)
    stopped = outcome.abort is not None or not outcome.continue_
    notes: list[str] = []
    out: dict[str, Any] = {}
    specific: dict[str, Any] = {"hookEventName": event}
    if event == "PreToolUse":
        if outcome.blocked or stopped:
            specific["permissionDecision"] = "deny"
            specific["permissionDecisionReason"] = reason
        elif outcome.result is not None:
            # Codex takes no synthetic result: the call is denied, the result is the reason.
            specific["permissionDecision"] = "deny"
            specific["permissionDecisionReason"] = _text(outcome.result)
        elif outcome.updated_input is not None:
            specific["permissionDecision"] = "allow"
            specific["updatedInput"] = outcome.updated_input
        if context:
            notes.append("Codex takes no context on PreToolUse: " + context)
    elif event == "PostToolUse":
        withheld = block_reason(outcome)
        if withheld is not None or stopped:
            out["decision"] = "block"
            out["reason"] = withheld or reason
        elif outcome.updated_input is not None:
            # A rewritten output (a redaction): Codex shows the model the block's reason
            # instead of the output, so the rewrite goes there.
            out["decision"] = "block"
            out["reason"] = _text(outcome.updated_input)
        if context:
            specific["additionalContext"] = context
    elif event == "UserPromptSubmit":
        if outcome.blocked or stopped:
            out["decision"] = "block"
            out["reason"] = reason
        elif outcome.updated_input is not None:
            out["decision"] = "block"
            out["reason"] = ("a hook rewrote this prompt, which Codex cannot apply: "
                             + _text(outcome.updated_input)[:2000])
        elif context:
            specific["additionalContext"] = context
    elif event == "Stop":
        if block_reason(outcome) is not None:
            reason = block_reason(outcome) or reason
            if stop_blocks_so_far < STOP_RETRIES:
                out["decision"] = "block"
                out["reason"] = reason
            else:
                notes.append(f"Stop blocked {stop_blocks_so_far} times in a row in this "
                             f"session; letting the agent stop ({reason})")
    elif event == "SessionStart":
        if context:
            specific["additionalContext"] = context
    elif outcome.blocked:
        notes.append(f"{event} cannot be stopped in Codex: {reason}")
    if len(specific) > 1:
        out["hookSpecificOutput"] = specific
    return BridgeReply(stdout=out or None, stderr="; ".join(notes))


def failure_answer(event: str | None, message: str) -> BridgeReply:
    """hookgate itself failed: an explicit deny/block where Codex can be stopped (and when the
    event is not known), else the failure on stderr only (exit 0 either way)."""
    reason = f"hookgate: {message}"
    if event == "PreToolUse":
        return BridgeReply(stdout={"hookSpecificOutput": {
            "hookEventName": "PreToolUse", "permissionDecision": "deny",
            "permissionDecisionReason": reason}}, stderr=reason)
    # The legacy block form stops every event that can be stopped (PreToolUse included),
    # so it is the answer when the event itself could not be read.
    if event is None or event in _FAIL_CLOSED:
        return BridgeReply(stdout={"decision": "block", "reason": reason}, stderr=reason)
    return BridgeReply(stderr=reason)


class CodexContract:
    """Codex CLI for :func:`hookgate.integrations.agent_bridge.answer`."""

    name = "codex"
    events = CODEX_EVENTS
    renames: Mapping[str, Mapping[str, str]] = {
        "Stop": {"last_assistant_message": "last_message"}}
    stop_events = frozenset({"Stop"})

    def reply(self, event: str, outcome: Outcome, stop_blocks_so_far: int) -> BridgeReply:
        return codex_answer(event, outcome, stop_blocks_so_far=stop_blocks_so_far)

    def failure(self, event: str | None, message: str) -> BridgeReply:
        return failure_answer(event, message)
