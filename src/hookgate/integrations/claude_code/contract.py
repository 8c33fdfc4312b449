"""Claude Code's hook contract, both ways.

Inbound (``hookgate claude-code`` run by Claude Code as its hook): Claude Code's stdin JSON
becomes a hookgate event (:func:`hookgate_input`), the engine (or a gateway) decides
(:data:`Evaluate`), and the :class:`~hookgate.outcome.Outcome` goes back as Claude Code's
JSON and exit code (:func:`claude_answer`). :func:`answer_claude_code` is the seam that ties
the three together; it takes any ``Evaluate`` function.

Outbound (``command`` hooks with ``format: claude_code``): a hookgate event becomes Claude
Code's stdin shape (:func:`claude_input`) and the script's exit code and JSON become a
:class:`~hookgate.outcome.HookResult` (:func:`parse_command_answer`).

Differences from Claude Code, on purpose: exit 1 and timeouts follow the hook's
``on_error``/``on_timeout`` (block by default on blocking events) where Claude Code lets the
action proceed; ``ask``/``defer`` from a hook run through the bridge go back to Claude Code
as ``ask``/``defer``, but elsewhere block (no approver).
"""

from __future__ import annotations

import json
import os
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final

from hookgate.events import EventSpec, UnknownEventError, get_event
from hookgate.integrations.claude_code.startup import (
    FAIL_CLOSED_EVENTS,
    default_config_path,
)
from hookgate.outcome import HookError, HookResult, MalformedAnswer, Outcome

# This module is on ``hookgate claude-code``'s start-up path (see main.py): what only some
# answers need (the command handler's parsers, pathlib) is imported where it is used.
if TYPE_CHECKING:
    from pathlib import Path

    from hookgate.client import AsyncGatewayClient
    from hookgate.engine import Engine
    from hookgate.settings import Settings

__all__ = [
    "CLAUDE_EVENTS",
    "CLAUDE_TO_HOOKGATE",
    "ClaudeAnswer",
    "Evaluate",
    "answer_claude_code",
    "claude_answer",
    "claude_event_name",
    "claude_input",
    "command_document",
    "default_config_path",
    "engine_evaluator",
    "failure_answer",
    "failure_json",
    "gateway_evaluator",
    "hookgate_input",
    "parse_command_answer",
    "run_bridge",
    "run_gateway_bridge",
]

#: hookgate's canonical event → Claude Code's event name.
CLAUDE_EVENTS: Final[Mapping[str, str]] = {
    "session_start": "SessionStart",
    "user_prompt_submit": "UserPromptSubmit",
    "pre_tool_use": "PreToolUse",
    "post_tool_use": "PostToolUse",
    "post_tool_use_failure": "PostToolUseFailure",
    "stop": "Stop",
    "subagent_start": "SubagentStart",
    "subagent_stop": "SubagentStop",
    "approve_tool": "PermissionRequest",
    "notification": "Notification",
    "session_end": "SessionEnd",
    "before_compaction": "PreCompact",
    "after_compaction": "PostCompact",
    "post_tool_batch": "PostToolBatch",
    "permission_denied": "PermissionDenied",
    "user_prompt_expansion": "UserPromptExpansion",
    "stop_failure": "StopFailure",
    "message_display": "MessageDisplay",
    "elicitation": "Elicitation",
    "elicitation_result": "ElicitationResult",
    "teammate_idle": "TeammateIdle",
    "task_created": "TaskCreated",
    "task_completed": "TaskCompleted",
    "setup": "Setup",
    "instructions_loaded": "InstructionsLoaded",
    "cwd_changed": "CwdChanged",
    "file_changed": "FileChanged",
    "config_change": "ConfigChange",
    "worktree_create": "WorktreeCreate",
    "worktree_remove": "WorktreeRemove",
    "before_model_switch": "PreModelSwitch",
    "after_model_switch": "PostModelSwitch",
    "directory_added": "DirectoryAdded",
}
#: Claude Code's event name → hookgate's (its integration's event aliases).
CLAUDE_TO_HOOKGATE: Final[Mapping[str, str]] = {
    name: event for event, name in CLAUDE_EVENTS.items()
}
#: Claude Code events whose hookSpecificOutput takes ``additionalContext`` (2.1.330's schema).
_TAKES_CONTEXT: Final = frozenset({
    "SessionStart", "UserPromptSubmit", "UserPromptExpansion", "PreToolUse", "PostToolUse",
    "PostToolUseFailure", "PostToolBatch", "Setup", "Stop", "SubagentStart", "SubagentStop",
    "PostModelSwitch", "PreCompact", "PostCompact",
})
#: Events where a hook's block is Claude Code's top-level ``decision: "block"``.
_DECISION_BLOCK: Final = frozenset({
    "PostToolUse", "Stop", "SubagentStop", "PreCompact", "PostToolUseFailure",
    "PostToolBatch", "UserPromptExpansion", "TeammateIdle", "TaskCreated", "TaskCompleted",
    "ConfigChange",
})
#: Claude Code events where plain stdout (exit 0) becomes context for the model.
_TEXT_IS_CONTEXT: Final = frozenset({"UserPromptSubmit", "SessionStart"})
#: hookgate fields with another name in Claude Code's input, per event.
_RENAMES: Final[Mapping[str, Mapping[str, str]]] = {
    "stop": {"last_message": "last_assistant_message"},
    "subagent_stop": {"output": "last_assistant_message", "target_agent": "agent_type"},
    "subagent_start": {"target_agent": "agent_type"},
    "stop_failure": {"last_message": "last_assistant_message"},
}
# hookgate bookkeeping that a Claude Code script has no use for.
_INTERNAL: Final = frozenset(
    {"event_id", "tenant_id", "depth", "turn_id", "user_id", "agent_id", "source_agent"}
)
_PERMISSION: Final[Mapping[str, str]] = {
    "allow": "allow",
    "deny": "block",
    "ask": "ask",
    "defer": "defer",
}


def claude_event_name(spec: EventSpec) -> str:
    return CLAUDE_EVENTS.get(spec.name, spec.name)


# -- hookgate event → Claude Code stdin ---------------------------------------------------


def claude_input(spec: EventSpec, payload: Mapping[str, Any], cwd: str | None) -> dict[str, Any]:
    """The stdin document a Claude Code hook script expects for this event."""
    renames = _RENAMES.get(spec.name, {})
    document: dict[str, Any] = {
        "session_id": payload.get("session_id") or "",
        "transcript_path": payload.get("transcript_path") or "",
        "cwd": payload.get("cwd") or cwd or os.getcwd(),
        "permission_mode": payload.get("permission_mode") or "default",
        "hook_event_name": claude_event_name(spec),
    }
    for key, value in payload.items():
        if key in _INTERNAL or key in document:
            continue
        document[renames.get(key, key)] = value
    if "claude_agent_id" in document:
        document["agent_id"] = document.pop("claude_agent_id")
    if spec.name in ("stop", "subagent_stop"):
        document.setdefault("stop_hook_active", False)
    return document


def command_document(
    spec: EventSpec, payload: Mapping[str, Any], cwd: str | None
) -> tuple[dict[str, Any], dict[str, str]]:
    """What a command hook with ``format: claude_code`` gets: Claude Code's stdin document,
    and ``CLAUDE_PROJECT_DIR`` as Claude Code sets it."""
    document = claude_input(spec, payload, cwd)
    project = os.environ.get("CLAUDE_PROJECT_DIR") or str(
        cwd or document.get("cwd") or os.getcwd()
    )
    return document, {"CLAUDE_PROJECT_DIR": project}


# -- Claude Code script answer → HookResult -----------------------------------------------


def parse_command_answer(
    spec: EventSpec, code: int, stdout: str, stderr: str, details: dict[str, Any]
) -> HookResult:
    """Claude Code's exit-code and JSON contract, mapped onto a hookgate answer."""
    from hookgate.handlers.subprocess.output import failure_message, json_object

    event = claude_event_name(spec)
    if code == 2:
        reason: str | None = stderr.strip()
        if not reason:
            document = json_object(stdout, details)
            if document is not None:
                reason = _text(document.get("reason")) or _text(
                    (document.get("hookSpecificOutput") or {}).get("permissionDecisionReason")
                )
        return HookResult(
            decision="block", reason=reason or f"blocked by {event} hook (exit 2)", details=details
        )
    if code != 0:
        raise HookError(failure_message(code, stderr), details=details)
    document = json_object(stdout, details)
    if document is None:
        text = stdout.strip()
        if text and event in _TEXT_IS_CONTEXT:
            return HookResult(additional_context=[text], details=details)
        return HookResult(details=details)
    return _from_claude_json(spec, event, document, details)


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _from_claude_json(
    spec: EventSpec, event: str, document: Mapping[str, Any], details: dict[str, Any]
) -> HookResult:
    result = HookResult(details=details)
    cont = document.get("continue", True)
    if not isinstance(cont, bool):
        raise MalformedAnswer(f"'continue' must be true or false, got {cont!r}")
    decision = document.get("decision")
    if decision is not None:
        if decision not in ("block", "approve"):
            raise MalformedAnswer(f"decision must be 'block' or 'approve', got {decision!r}")
        result.decision = "block" if decision == "block" else "allow"
    reason = document.get("reason")
    if reason is not None and not isinstance(reason, str):
        raise MalformedAnswer(f"reason must be a string, got {reason!r}")
    result.reason = reason or None
    if _text(document.get("systemMessage")):
        details["system_message"] = document["systemMessage"]
    specific = document.get("hookSpecificOutput")
    if specific is not None:
        if not isinstance(specific, Mapping):
            raise MalformedAnswer("hookSpecificOutput must be an object")
        _apply_specific(spec, event, specific, result)
    if not cont:
        result.continue_ = False
        result.reason = _text(document.get("stopReason")) or result.reason or (
            f"{event} hook asked to stop (continue: false)"
        )
    return result


def _apply_specific(
    spec: EventSpec, event: str, specific: Mapping[str, Any], result: HookResult
) -> None:
    details = result.details
    permission = specific.get("permissionDecision")
    if permission is not None:
        mapped = _PERMISSION.get(permission) if isinstance(permission, str) else None
        if mapped is None:
            raise MalformedAnswer(
                f"permissionDecision must be allow, deny, ask or defer, got {permission!r}"
            )
        result.decision = mapped  # type: ignore[assignment]
        details["permission_decision"] = permission
        if _text(specific.get("permissionDecisionReason")):
            result.reason = specific["permissionDecisionReason"]
    approval = specific.get("decision")
    if isinstance(approval, Mapping):  # PermissionRequest: {behavior, message, updatedInput}
        behavior = approval.get("behavior")
        if behavior not in ("allow", "deny"):
            raise MalformedAnswer(f"decision.behavior must be allow or deny, got {behavior!r}")
        result.decision = "allow" if behavior == "allow" else "block"
        if _text(approval.get("message")):
            result.reason = approval["message"]
        if "updatedInput" in approval:
            details["note"] = f"{spec.name} takes no updated input; decision.updatedInput ignored"
    elif approval is not None:
        raise MalformedAnswer("hookSpecificOutput.decision must be an object")
    for key in ("updatedInput", "updatedToolOutput", "updatedMCPToolOutput"):
        if key in specific:
            result.updated_input = specific[key]
    context = specific.get("additionalContext")
    if context is not None:
        if isinstance(context, str):
            result.additional_context = [context] if context else []
        elif isinstance(context, list) and all(isinstance(item, str) for item in context):
            result.additional_context = [item for item in context if item]
        else:
            raise MalformedAnswer("additionalContext must be a string")
    named = specific.get("hookEventName")
    if named is not None and named != event:
        details["note"] = f"hookSpecificOutput.hookEventName is {named!r}, expected {event!r}"


# -- Claude Code stdin → hookgate event ---------------------------------------------------


def hookgate_input(data: Mapping[str, Any]) -> tuple[EventSpec, dict[str, Any]]:
    """The hookgate event and payload for Claude Code's hook input; raise UnknownEventError."""
    name = data.get("hook_event_name")
    if not isinstance(name, str) or not name:
        raise UnknownEventError(repr(name))
    spec = get_event(name)
    reverse = {theirs: ours for ours, theirs in _RENAMES.get(spec.name, {}).items()}
    payload: dict[str, Any] = {}
    for key, value in data.items():
        if key == "hook_event_name":
            continue
        if key == "agent_id":
            # Claude Code's agent_id names a sub-agent run; hookgate's agent_id is the agent
            # that scoped hooks belong to. Keep it apart so it cannot select hooks.
            payload["claude_agent_id"] = value
            continue
        payload[reverse.get(key, key)] = value
    payload["hook_event_name"] = name
    return spec, payload


# -- Outcome → Claude Code answer ---------------------------------------------------------


@dataclass(slots=True)
class ClaudeAnswer:
    """What ``hookgate claude-code`` prints and exits with."""

    exit_code: int = 0
    stdout: dict[str, Any] | None = None
    stderr: str = ""
    outcome: Outcome | None = field(default=None, repr=False)

    def stdout_text(self) -> str:
        return "" if self.stdout is None else json.dumps(self.stdout, default=str)


def claude_answer(event: str, outcome: Outcome, tool_response: Any = None) -> ClaudeAnswer:
    """Claude Code's JSON for ``outcome`` on Claude Code event ``event`` (exit code 0);
    ``tool_response``: the output a ``PostToolUse`` block withholds (its shape is kept)."""
    answer = _Answer(event, outcome, tool_response, {}, {"hookEventName": event})
    write = _EVENT_ANSWERS.get(event)
    if write is None and event in _DECISION_BLOCK:
        write = _decision_block
    if write is not None:
        write(answer)
    out, specific = answer.out, answer.specific
    context = "\n\n".join(outcome.additional_context)
    if context and event in _TAKES_CONTEXT:
        specific["additionalContext"] = context
    if outcome.abort is not None or not outcome.continue_:
        out["continue"] = False
        out["stopReason"] = outcome.reason or "stopped by hookgate"
    if len(specific) > 1:
        out["hookSpecificOutput"] = specific
    return ClaudeAnswer(exit_code=0, stdout=out or None, outcome=outcome)


@dataclass(slots=True)
class _Answer:
    """One answer being written: the event's own part goes to ``out`` (top-level keys) and
    ``specific`` (``hookSpecificOutput``), by one function per event."""

    event: str
    outcome: Outcome
    #: The output a ``PostToolUse`` block withholds.
    tool_response: Any
    out: dict[str, Any]
    specific: dict[str, Any]


def _pre_tool_use(answer: _Answer) -> None:
    outcome, specific = answer.outcome, answer.specific
    approval = _approval_status(outcome)
    if outcome.blocked:
        specific["permissionDecision"] = _requested(outcome) or (
            "ask" if approval == "pending" and _pending_asks() else "deny"
        )
        specific["permissionDecisionReason"] = outcome.reason or "blocked by hookgate"
    elif approval == "approved":
        # A person approved this call in hookgate (panel, API or CLI): grant it, with the
        # input they may have edited.
        specific["permissionDecision"] = "allow"
        specific["permissionDecisionReason"] = outcome.reason or "approved"
        if outcome.updated_input is not None:
            specific["updatedInput"] = outcome.updated_input
    elif outcome.result is not None:
        # Claude Code cannot take a synthetic tool result: the tool is denied and the result
        # handed to the model as the reason.
        specific["permissionDecision"] = "deny"
        specific["permissionDecisionReason"] = _as_text(outcome.result)
    elif outcome.updated_input is not None:
        # A rewrite is not a permission grant: Claude Code applies updatedInput without a
        # decision and still runs its own permission checks on the rewritten call.
        specific["updatedInput"] = outcome.updated_input
        if outcome.explicitly_allowed:
            specific["permissionDecision"] = "allow"
            specific["permissionDecisionReason"] = "allowed by hookgate"


def _permission_request(answer: _Answer) -> None:
    outcome = answer.outcome
    approval = _approval_status(outcome)
    if outcome.blocked:
        answer.specific["decision"] = {"behavior": "deny", "message": outcome.reason or "denied"}
    elif outcome.explicitly_allowed or approval == "approved":
        decision: dict[str, Any] = {"behavior": "allow"}
        if approval == "approved" and outcome.updated_input is not None:
            decision["updatedInput"] = outcome.updated_input
        answer.specific["decision"] = decision


def _user_prompt_submit(answer: _Answer) -> None:
    outcome, out = answer.outcome, answer.out
    if outcome.blocked:
        out["decision"] = "block"
        out["reason"] = outcome.reason or "blocked by hookgate"
    elif outcome.updated_input is not None:
        # Claude Code cannot take a rewritten prompt; sending the original instead would
        # drop what the hook did, so the prompt is stopped and the rewrite shown.
        from hookgate.handlers.subprocess.runner import shorten

        out["decision"] = "block"
        out["reason"] = (
            "a hook rewrote this prompt, which Claude Code cannot apply; rewritten prompt: "
            + shorten(_as_text(outcome.updated_input), 2000)
        )


def _decision_block(answer: _Answer) -> None:
    """The events that take ``decision: block`` (:data:`_DECISION_BLOCK`)."""
    outcome, out = answer.outcome, answer.out
    recorded_blocks = [
        entry.details.get("reason") or f"blocked by hook {entry.name or entry.hook_id!r}"
        for entry in outcome.trace
        if entry.decision == "block" and not outcome.blocked
    ]
    if outcome.blocked or recorded_blocks:
        out["decision"] = "block"
        out["reason"] = outcome.reason or "\n".join(recorded_blocks)
    if answer.event != "PostToolUse":
        return
    if outcome.updated_input is not None:
        answer.specific["updatedToolOutput"] = outcome.updated_input
    elif "decision" in out:
        # decision: block alone shows Claude the reason *beside* the output: a block
        # withholds the output itself (issue 24: an injected output never reaches it).
        from hookgate.tool_output import withheld_like, withheld_text

        answer.specific["updatedToolOutput"] = withheld_like(
            answer.tool_response, withheld_text(out["reason"])
        )


def _pre_model_switch(answer: _Answer) -> None:
    outcome = answer.outcome
    if outcome.blocked:
        answer.specific["permissionDecision"] = "deny"
        answer.specific["permissionDecisionReason"] = outcome.reason or "blocked by hookgate"


def _elicitation(answer: _Answer) -> None:
    outcome = answer.outcome
    if outcome.blocked:
        answer.specific["action"] = "decline"
    elif answer.event == "ElicitationResult" and isinstance(outcome.updated_input, Mapping):
        answer.specific["action"] = "accept"
        answer.specific["content"] = dict(outcome.updated_input)


def _message_display(answer: _Answer) -> None:
    if isinstance(answer.outcome.updated_input, str):
        answer.specific["displayContent"] = answer.outcome.updated_input


#: The event's own part of an answer, by Claude Code event (the events of
#: :data:`_DECISION_BLOCK` not named here: :func:`_decision_block`).
_EVENT_ANSWERS: Final[Mapping[str, Callable[[_Answer], None]]] = {
    "PreToolUse": _pre_tool_use,
    "PermissionRequest": _permission_request,
    "UserPromptSubmit": _user_prompt_submit,
    "PreModelSwitch": _pre_model_switch,
    "Elicitation": _elicitation,
    "ElicitationResult": _elicitation,
    "MessageDisplay": _message_display,
}


def _approval_status(outcome: Outcome) -> str | None:
    """What became of the approval a hook asked a person for (gateway with approvals)."""
    approval = outcome.approval
    status = approval.get("status") if isinstance(approval, Mapping) else None
    return status if isinstance(status, str) else None


def _pending_asks() -> bool:
    """``HOOKGATE_CLAUDE_CODE_PENDING=ask``: an approval nobody decided within Claude Code's
    hook timeout becomes Claude Code's own permission prompt instead of a deny."""
    return os.environ.get("HOOKGATE_CLAUDE_CODE_PENDING", "deny").strip().lower() == "ask"


def _requested(outcome: Outcome) -> str | None:
    """``ask``/``defer`` that a Claude Code hook asked for, to hand back to Claude Code."""
    for entry in reversed(outcome.trace):
        if entry.decision == "block":
            asked = entry.details.get("permission_decision")
            return asked if asked in ("ask", "defer") else None
    return None


def _as_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, Mapping) and isinstance(value.get("for_llm"), str):
        return str(value["for_llm"])
    return json.dumps(value, default=str)


def failure_answer(event: str | None, message: str) -> ClaudeAnswer:
    """hookgate itself failed: stop the action where it can be stopped (or when the event is
    not known), else report it."""
    code = 2 if event is None or event in FAIL_CLOSED_EVENTS else 1
    return ClaudeAnswer(exit_code=code, stderr=f"hookgate: {message}")


def failure_json(event: str | None, reason: str) -> dict[str, Any] | None:
    """The answer that stops ``event`` when hookgate failed, for transports with no exit code
    (the gateway's HTTP endpoint); ``None`` where Claude Code cannot be stopped."""
    message = f"hookgate: {reason}"
    if event == "PreToolUse":
        return {"hookSpecificOutput": {"hookEventName": event, "permissionDecision": "deny",
                                       "permissionDecisionReason": message}}
    if event == "PermissionRequest":
        return {"hookSpecificOutput": {"hookEventName": event,
                                       "decision": {"behavior": "deny", "message": message}}}
    if event == "UserPromptSubmit":
        return {"decision": "block", "reason": message}
    return None


# -- the seam -----------------------------------------------------------------------------

#: Decide one event: (canonical event name, payload) → Outcome. The local engine is one;
#: a gateway client is another.
Evaluate = Callable[[str, dict[str, Any]], Awaitable[Outcome]]


def engine_evaluator(engine: Engine) -> Evaluate:
    async def evaluate(event: str, payload: dict[str, Any]) -> Outcome:
        # Non-blocking events run now too: Claude Code waits for this process anyway, and
        # their context and recorded blocks belong in the answer.
        return await engine.fire(event, payload, wait=True)

    return evaluate


async def answer_claude_code(data: Mapping[str, Any], evaluate: Evaluate) -> ClaudeAnswer:
    """Claude Code hook input in, Claude Code hook answer out."""
    event = data.get("hook_event_name")
    try:
        spec, payload = hookgate_input(data)
    except UnknownEventError:
        # An event hookgate has no name for (Claude Code adds events often): nothing to run.
        return ClaudeAnswer()
    try:
        outcome = await evaluate(spec.name, payload)
    except Exception as exc:
        named = event if isinstance(event, str) else None
        return failure_answer(named, f"evaluating {event} failed: {exc}")
    return claude_answer(str(event), outcome, data.get("tool_response"))


# -- running as Claude Code's hook --------------------------------------------------------

def parse_claude_code_input(
    stdin_text: str,
) -> tuple[dict[str, Any] | None, str | None, ClaudeAnswer | None]:
    """Claude Code's stdin as ``(data, event name, None)``, or ``(None, None, answer)`` with
    the fail-closed answer for input that is not a hook input object."""
    try:
        data = json.loads(stdin_text)
    except json.JSONDecodeError as exc:
        return None, None, failure_answer(None, f"stdin is not Claude Code hook JSON: {exc.msg}")
    if not isinstance(data, dict):
        return None, None, failure_answer(None, "stdin is not a Claude Code hook input object")
    event = data.get("hook_event_name")
    return data, event if isinstance(event, str) else None, None


async def run_bridge(
    stdin_text: str,
    config_path: str | None,
    *,
    settings: Settings | None = None,
    environ: Mapping[str, str] | None = None,
    home: Path | None = None,
) -> ClaudeAnswer:
    """One ``hookgate claude-code`` run: parse stdin, load the hooks, answer."""
    from hookgate.config import ConfigError
    from hookgate.engine import Engine

    data, event_name, refused = parse_claude_code_input(stdin_text)
    if data is None:
        return refused or ClaudeAnswer()
    path = config_path or default_config_path(data, environ, home)
    if path is None:
        return ClaudeAnswer()  # no hooks file anywhere: nothing to enforce
    engine = Engine(settings=settings)
    try:
        try:
            engine.load(path)
        except ConfigError as exc:
            return failure_answer(event_name, f"hooks file {path} is invalid: {exc.problems[0]}")
        return await answer_claude_code(data, engine_evaluator(engine))
    finally:
        await engine.aclose()


#: How long a gateway dispatch waits for a person when a hook asks for approval: within
#: the bridge's own 25 s and Claude Code's hook timeout (30 s as installed). Undecided by
#: then, the call is denied (or asked in Claude Code, see :func:`_pending_asks`).
APPROVAL_WAIT_S: Final = 20.0


# -- asking a gateway instead (a fleet shares one set of hooks and one audit log) -----------


def gateway_evaluator(client: AsyncGatewayClient) -> Evaluate:
    """Decide through a gateway's ``hooks.dispatch`` (non-blocking events run now too)."""
    from hookgate.client import outcome_from_payload

    async def evaluate(event: str, payload: dict[str, Any]) -> Outcome:
        answer = await client.dispatch(
            event, payload, wait=True, approval_wait_s=APPROVAL_WAIT_S
        )
        return outcome_from_payload(answer)

    return evaluate


async def run_gateway_bridge(
    stdin_text: str, url: str, api_key: str | None, *, timeout_s: float = 25.0
) -> ClaudeAnswer:
    """One ``hookgate claude-code --gateway URL`` run. An unreachable gateway, a refused key
    or a bad answer fails closed where Claude Code can be stopped (see :func:`failure_answer`).
    """
    from hookgate.client import AsyncGatewayClient, GatewayError

    data, event_name, refused = parse_claude_code_input(stdin_text)
    if data is None:
        return refused or ClaudeAnswer()
    if not api_key:
        return failure_answer(event_name, "--gateway needs an API key in HOOKGATE_API_KEY")
    try:
        async with AsyncGatewayClient(url, api_key, timeout=timeout_s) as client:
            return await answer_claude_code(data, gateway_evaluator(client))
    except GatewayError as exc:
        return failure_answer(event_name, f"gateway {url}: {exc}")
