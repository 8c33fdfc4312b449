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

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from hookgate.integrations.agent_reply import BridgeReply, block_reason
from hookgate.integrations.agent_tools import CODEX_TOOL_NAMES
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
    answer = _Answer(
        event,
        outcome,
        outcome.reason or "blocked by hookgate",
        "\n\n".join(outcome.additional_context),
        outcome.abort is not None or not outcome.continue_,
        stop_blocks_so_far,
    )
    write = _EVENT_ANSWERS.get(event)
    if write is not None:
        write(answer)
    elif outcome.blocked:
        answer.notes.append(f"{event} cannot be stopped in Codex: {answer.reason}")
    out, specific = answer.out, answer.specific
    if specific:
        out["hookSpecificOutput"] = {"hookEventName": event, **specific}
    return BridgeReply(stdout=out or None, stderr="; ".join(answer.notes))


@dataclass(slots=True)
class _Answer:
    """One answer being written by its event's function: top-level keys in ``out``, the
    ``hookSpecificOutput`` keys in ``specific``, what Codex cannot take in ``notes``."""

    event: str
    outcome: Outcome
    reason: str
    context: str
    #: The outcome stops the agent (an abort, ``continue: false``).
    stopped: bool
    stop_blocks_so_far: int
    out: dict[str, Any] = field(default_factory=dict)
    specific: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


def _pre_tool_use(answer: _Answer) -> None:
    outcome, specific = answer.outcome, answer.specific
    if outcome.blocked or answer.stopped:
        specific["permissionDecision"] = "deny"
        specific["permissionDecisionReason"] = answer.reason
    elif outcome.result is not None:
        # Codex takes no synthetic result: the call is denied, the result is the reason.
        specific["permissionDecision"] = "deny"
        specific["permissionDecisionReason"] = _text(outcome.result)
    elif outcome.updated_input is not None:
        specific["permissionDecision"] = "allow"
        specific["updatedInput"] = outcome.updated_input
    if answer.context:
        answer.notes.append("Codex takes no context on PreToolUse: " + answer.context)


def _post_tool_use(answer: _Answer) -> None:
    outcome, out = answer.outcome, answer.out
    withheld = block_reason(outcome)
    if withheld is not None or answer.stopped:
        out["decision"] = "block"
        out["reason"] = withheld or answer.reason
    elif outcome.updated_input is not None:
        # A rewritten output (a redaction): Codex shows the model the block's reason instead
        # of the output, so the rewrite goes there.
        out["decision"] = "block"
        out["reason"] = _text(outcome.updated_input)
    if answer.context:
        answer.specific["additionalContext"] = answer.context


def _user_prompt_submit(answer: _Answer) -> None:
    outcome, out = answer.outcome, answer.out
    if outcome.blocked or answer.stopped:
        out["decision"] = "block"
        out["reason"] = answer.reason
    elif outcome.updated_input is not None:
        out["decision"] = "block"
        out["reason"] = ("a hook rewrote this prompt, which Codex cannot apply: "
                         + _text(outcome.updated_input)[:2000])
    elif answer.context:
        answer.specific["additionalContext"] = answer.context


def _stop(answer: _Answer) -> None:
    withheld = block_reason(answer.outcome)
    if withheld is None:
        return
    reason = withheld or answer.reason
    if answer.stop_blocks_so_far < STOP_RETRIES:
        answer.out["decision"] = "block"
        answer.out["reason"] = reason
    else:
        answer.notes.append(f"Stop blocked {answer.stop_blocks_so_far} times in a row in this "
                            f"session; letting the agent stop ({reason})")


def _session_start(answer: _Answer) -> None:
    if answer.context:
        answer.specific["additionalContext"] = answer.context


#: The event's own part of an answer, by Codex event (any other: a block is only noted).
_EVENT_ANSWERS: Final[Mapping[str, Callable[[_Answer], None]]] = {
    "PreToolUse": _pre_tool_use,
    "PostToolUse": _post_tool_use,
    "UserPromptSubmit": _user_prompt_submit,
    "Stop": _stop,
    "SessionStart": _session_start,
}


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
    tool_names = CODEX_TOOL_NAMES

    def reply(self, event: str, outcome: Outcome, stop_blocks_so_far: int) -> BridgeReply:
        return codex_answer(event, outcome, stop_blocks_so_far=stop_blocks_so_far)

    def failure(self, event: str | None, message: str) -> BridgeReply:
        return failure_answer(event, message)
