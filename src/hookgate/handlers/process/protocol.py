"""PicoClaw's process-hook messages: hookgate events to requests, answers to HookResults.

| hookgate event  | method              | answer                                              |
|-----------------|---------------------|-----------------------------------------------------|
| pre_tool_use    | hook.before_tool    | {action, reason?, call?: {tool, arguments}, result?} |
| post_tool_use   | hook.after_tool     | {action, reason?, result?: {…, result: ToolResult}}  |
| approve_tool    | hook.approve_tool   | {approved, defer?, reason?}; ``{}`` denies          |
| before_llm      | hook.before_llm     | {action, reason?, request?: {model, messages, …}}   |
| after_llm       | hook.after_llm      | {action, reason?, response?: {…, response: {…}}}    |
| runtime_event   | hook.runtime_event  | notification, no answer                             |

Actions: ``continue`` (or empty) and ``modify`` apply a returned ``call``/``request``/
``response``/``result`` whole, as PicoClaw does; ``respond`` (before_tool) answers with a
synthetic tool result; ``deny_tool`` (before_tool) blocks; ``abort_turn`` / ``hard_abort``
abort. Anything else, including a misspelled ``block``, is a malformed answer, which blocks
a blocking event whatever the hook's failure policy.

``meta`` keeps PicoClaw's PascalCase keys (``SessionKey``, ``TurnID``, …) so hooks written
for PicoClaw read it unchanged.

``approve_tool`` may also answer ``{"approved": false, "defer": true, "reason"?}``: the hook
cannot decide and hands the call to a person (hookgate's approvals; without an approver it
blocks like a deny).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from hookgate.outcome import HookResult, MalformedAnswer, empty_result

__all__ = [
    "ACTIONS",
    "METHODS",
    "RUNTIME_EVENT_METHOD",
    "build_params",
    "decode_answer",
    "runtime_envelope",
]

METHODS: Final[Mapping[str, str]] = {
    "pre_tool_use": "hook.before_tool",
    "post_tool_use": "hook.after_tool",
    "approve_tool": "hook.approve_tool",
    "before_llm": "hook.before_llm",
    "after_llm": "hook.after_llm",
}
RUNTIME_EVENT_METHOD: Final = "hook.runtime_event"
ACTIONS: Final = ("continue", "modify", "respond", "deny_tool", "abort_turn", "hard_abort")
_TRACE_PATHS: Final[Mapping[str, str]] = {
    "pre_tool_use": "turn.tool.before",
    "approve_tool": "turn.tool.approve",
    "post_tool_use": "turn.tool.after",
    "before_llm": "turn.llm.request",
    "after_llm": "turn.llm.response",
}
_ENVELOPE: Final = ("id", "kind", "time", "source", "scope", "correlation", "severity", "payload",
                    "attrs")


def _arguments(payload: Mapping[str, Any]) -> Any:
    value = payload.get("tool_input")
    return {} if value is None else value


def _tool_result(value: Any) -> Any:
    """A tool response as PicoClaw's ToolResult (``{for_llm, silent, is_error, async}``)."""
    if isinstance(value, Mapping) and "for_llm" in value:
        return dict(value)
    text = value if isinstance(value, str) else ("" if value is None else value)
    return {"for_llm": text, "silent": False, "is_error": False, "async": False}


def build_params(event: str, payload: Mapping[str, Any]) -> dict[str, Any]:
    """The params of the request for ``event`` (one of :data:`METHODS`)."""
    meta = {  # PicoClaw's keys, so hooks written for it read it unchanged
        "AgentID": payload.get("agent_id") or "",
        "TurnID": payload.get("turn_id") or "",
        "ParentTurnID": payload.get("parent_turn_id") or "",
        "SessionKey": payload.get("session_id") or "",
        "Iteration": payload.get("iteration") or 0,
        "TracePath": _TRACE_PATHS.get(event, event),
        "Source": "hookgate",
    }
    if event in ("pre_tool_use", "approve_tool"):
        arguments = payload.get("tool_input")  # _arguments, inline: once per tool call
        return {"meta": meta, "tool": payload.get("tool_name") or "",
                "arguments": {} if arguments is None else arguments}
    if event == "post_tool_use":
        duration_ms = payload.get("duration_ms")
        return {
            "meta": meta,
            "tool": payload.get("tool_name") or "",
            "arguments": _arguments(payload),
            "result": _tool_result(payload.get("tool_response")),
            "duration": int(duration_ms * 1_000_000) if isinstance(duration_ms, int | float)
            else 0,
        }
    request = payload.get("request")
    if event == "before_llm":
        body = dict(request) if isinstance(request, Mapping) else {"request": request}
        return {"meta": meta, **body}
    if event == "after_llm":
        model = request.get("model", "") if isinstance(request, Mapping) else ""
        return {"meta": meta, "model": model, "response": payload.get("response")}
    raise ValueError(f"{event} has no process-hook method")


def runtime_envelope(payload: Mapping[str, Any]) -> dict[str, Any]:
    """``hook.runtime_event`` params from a ``runtime_event`` payload."""
    envelope = {key: payload[key] for key in _ENVELOPE if key in payload}
    envelope.setdefault("scope", {})
    envelope.setdefault("correlation", {})
    return envelope


def decode_answer(event: str, answer: Any, payload: Mapping[str, Any]) -> HookResult:
    """The hookgate answer for a process hook's ``result``; MalformedAnswer if it is not one."""
    if answer is None:
        answer = {}  # PicoClaw decodes an empty result into zero values
    if type(answer) is not dict and not isinstance(answer, Mapping):  # (a dict: no ABC check)
        raise MalformedAnswer(f"the answer must be a JSON object, got {type(answer).__name__}")
    reason = answer.get("reason")
    if reason is not None and not isinstance(reason, str):
        raise MalformedAnswer(f"reason must be a string, got {reason!r}")
    reason = reason or None
    if event == "approve_tool":
        approved = answer.get("approved", False)
        if not isinstance(approved, bool):
            raise MalformedAnswer(f"approved must be true or false, got {approved!r}")
        if approved:
            return HookResult(decision="allow", reason=reason)
        defer = answer.get("defer", False)
        if not isinstance(defer, bool):
            raise MalformedAnswer(f"defer must be true or false, got {defer!r}")
        if defer:
            return HookResult(decision="defer", reason=reason)
        return HookResult(
            decision="block",
            reason=reason or "denied by approval hook (its answer did not approve)",
        )
    action = answer.get("action") or "continue"
    if action == "continue" or action == "modify":  # the common answers first
        if len(answer) == 1 and "action" in answer:
            return empty_result()  # a bare {"action": ...}: nothing to apply, no reason
        updated_input = _replacement(event, answer, payload)
        if updated_input is None and reason is None:
            return empty_result()  # a plain continue: no keywords to pass
        return HookResult(updated_input=updated_input, reason=reason)
    if action not in ACTIONS:
        raise MalformedAnswer(
            f"unknown action {action!r}; expected one of {', '.join(ACTIONS)}"
        )
    if action == "abort_turn":
        return HookResult(abort="turn", reason=reason)
    if action == "hard_abort":
        return HookResult(abort="hard", reason=reason, continue_=False)
    if action in ("respond", "deny_tool") and event != "pre_tool_use":
        raise MalformedAnswer(f"action {action!r} is only valid for before_tool")
    if action == "deny_tool":
        return HookResult(decision="block", reason=reason or "Tool execution denied by hook")
    result = answer.get("result")  # action == "respond"
    if result is None:
        raise MalformedAnswer("action 'respond' needs a result")
    return HookResult(result=result, reason=reason)


def _replacement(event: str, answer: Mapping[str, Any], payload: Mapping[str, Any]) -> Any:
    """The new input a ``continue``/``modify`` answer carries, ``None`` if it carries none."""
    if event == "pre_tool_use":
        call = _object(answer, "call")
        if call is None:
            return None
        tool = call.get("tool")
        if tool not in (None, "", payload.get("tool_name")):
            raise MalformedAnswer(
                f"renaming the tool ({payload.get('tool_name')!r} to {tool!r}) is not supported"
            )
        if "arguments" not in call:
            return None
        if not isinstance(call["arguments"], Mapping):
            raise MalformedAnswer("call.arguments must be an object")
        return dict(call["arguments"])
    if event == "before_llm":
        request = _object(answer, "request")
        if request is None:
            return None
        return {key: value for key, value in request.items() if key not in ("meta", "context")}
    if event == "after_llm":
        envelope = _object(answer, "response")
        if envelope is None:
            return None
        if "response" not in envelope:
            raise MalformedAnswer(
                "after_llm: response must be the whole envelope {model, response: {…}}"
            )
        return envelope["response"]
    if event == "post_tool_use":
        envelope = _object(answer, "result")
        if envelope is None:
            return None
        if "result" not in envelope:
            raise MalformedAnswer(
                "after_tool: result must be the whole envelope {tool, arguments, result: {…}}"
            )
        new = envelope["result"]
        original = payload.get("tool_response")
        # Hand the rewrite back in the caller's own shape: text in, text out.
        if not isinstance(original, Mapping) and isinstance(new, Mapping) and isinstance(
            new.get("for_llm"), str
        ):
            return new["for_llm"]
        return new
    return None  # pragma: no cover - callers pass only METHODS events


def _object(answer: Mapping[str, Any], key: str) -> Mapping[str, Any] | None:
    value = answer.get(key)
    if value is None:
        return None
    if not isinstance(value, Mapping):
        raise MalformedAnswer(f"{key} must be an object, got {type(value).__name__}")
    return value
