"""hookgate inside the Claude Agent SDK for Python (``claude-agent-sdk``).

    from claude_agent_sdk import ClaudeAgentOptions, query
    from hookgate.adapters.claude_agent_sdk import hook_matchers
    options = ClaudeAgentOptions(hooks=hook_matchers(engine), allowed_tools=["Bash"])

The agent loop runs inside the Claude Code CLI that the SDK drives; the SDK's hooks are Claude
Code's hooks answered in-process, so this adapter speaks the same contract as the Claude Code
bridge (:mod:`hookgate.bridges.claude_code`, whose mapping it reuses) and the same hooks file
works under both. Every matcher is registered with ``on_failure="block"``, and any error in
the adapter answers a deny (``PreToolUse``) or a block (``UserPromptSubmit``) itself.

==========================  ===========  ==================================================
outcome                     support      how
==========================  ===========  ==================================================
block a tool call           native       ``PreToolUse`` ``permissionDecision: deny``; the
                                         model reads ``PreToolUse:<tool> hook error:
                                         <reason>``
rewrite tool arguments      native       ``updatedInput``, the complete new input (Claude
                                         Code replaces the input whole); not a permission
                                         grant: Claude Code still checks the new call
synthetic tool result       workaround   deny, with the result as the reason the model
                                         reads
context for the model       native       ``additionalContext`` (tool and prompt events)
rewrite tool output         native       ``PostToolUse`` ``updatedToolOutput``
abort the run               native       ``continue: false`` with a deny (``continue``
                                         alone does not stop a tool call)
block the prompt            native       ``UserPromptSubmit`` ``decision: block`` (no model
                                         call)
rewrite the prompt          impossible   Claude Code takes no new prompt: the prompt is
                                         blocked and the block message shows the rewrite
before_llm / after_llm      impossible   the model is called inside the CLI (a proxy at
                                         ``ANTHROPIC_BASE_URL`` is the way to reach it)
sub-agent start / stop      native       ``SubagentStart`` / ``SubagentStop``; a start
                                         cannot be refused, so a block stops the run
session start               workaround   Claude Code's ``SessionStart`` never fires through
                                         the SDK: ``session_start`` is fired at the first
                                         ``UserPromptSubmit`` of each session
session stop                native       ``Stop``
==========================  ===========  ==================================================

Payloads carry ``tool_use_id``, ``session_id`` (Claude Code's session), ``turn_id`` (the
prompt id) and ``agent_id`` (``agent_name``, when given); Claude Code's own sub-agent id
travels as ``claude_agent_id`` (as in the bridge, it never selects agent-scoped hooks).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, Final

from claude_agent_sdk import HookMatcher
from claude_agent_sdk.types import HookContext, HookEvent, HookInput, HookJSONOutput

from hookgate.adapters._gate import Gate, Target, failed_closed
from hookgate.bridges.claude_code import claude_answer, hookgate_input

__all__ = ["EVENTS", "hook_matchers"]

#: The Claude Code events the Python SDK delivers to in-process callbacks.
EVENTS: Final[tuple[HookEvent, ...]] = (
    "UserPromptSubmit",
    "PreToolUse",
    "PermissionRequest",
    "PostToolUse",
    "PostToolUseFailure",
    "SubagentStart",
    "SubagentStop",
    "Stop",
    "PreCompact",
    "Notification",
)

Callback = Callable[[HookInput, str | None, HookContext], Awaitable[HookJSONOutput]]


def _for_sdk(answer: dict[str, Any]) -> dict[str, Any]:
    # The SDK takes Python-safe names and turns them back into Claude Code's.
    if "continue" in answer:
        answer["continue_"] = answer.pop("continue")
    return answer


#: Claude Code events that can stop something, and hookgate's name for them.
_BLOCKING: Final = {
    "PreToolUse": "pre_tool_use",
    "UserPromptSubmit": "user_prompt_submit",
    "SubagentStart": "subagent_start",
    "PermissionRequest": "approve_tool",
}


def _refusal(event: str, reason: str) -> dict[str, Any]:
    """What a failure answers: stop the action where it can be stopped."""
    if event == "PreToolUse":
        return {
            "hookSpecificOutput": {
                "hookEventName": "PreToolUse",
                "permissionDecision": "deny",
                "permissionDecisionReason": reason,
            }
        }
    if event == "UserPromptSubmit":
        return {"decision": "block", "reason": reason}
    if event == "SubagentStart":
        return {"continue_": False, "stopReason": reason}
    if event == "PermissionRequest":
        return {
            "hookSpecificOutput": {
                "hookEventName": "PermissionRequest",
                "decision": {"behavior": "deny", "message": reason},
            }
        }
    return {}


def _callback(gate: Gate, agent_name: str | None, started: set[str]) -> Callback:
    async def hook(
        input_data: HookInput, tool_use_id: str | None, context: HookContext
    ) -> HookJSONOutput:
        event = str(input_data.get("hook_event_name", ""))
        try:
            spec, payload = hookgate_input(input_data)
            if tool_use_id and not payload.get("tool_use_id"):
                payload["tool_use_id"] = tool_use_id
            if payload.get("prompt_id"):
                payload["turn_id"] = payload["prompt_id"]
            if agent_name is not None:
                payload["agent_id"] = agent_name
            session = str(payload.get("session_id") or "")
            if event == "UserPromptSubmit" and session not in started:
                started.add(session)
                await gate.fire(
                    "session_start",
                    {**payload, "source": "claude-agent-sdk", "hook_event_name": "SessionStart"},
                )
            # Claude Code waits for the answer anyway: run non-blocking events now too, so
            # PostToolUse rewrites and context come back.
            outcome = await gate.fire(spec.name, payload, wait=not spec.blocking)
            answer = claude_answer(event, outcome).stdout or {}
            if event == "SubagentStart" and outcome.blocked and answer.get("continue") is not False:
                # A sub-agent cannot be refused on its own: stop the run rather than ignore it.
                answer["continue"] = False
                answer["stopReason"] = outcome.reason or "sub-agent blocked by hookgate"
            return _for_sdk(answer)  # type: ignore[return-value]
        except Exception as exc:
            outcome = failed_closed(_BLOCKING.get(event, "stop"), exc)
            if event in _BLOCKING:
                return _refusal(event, outcome.reason or "blocked")  # type: ignore[return-value]
            return {}

    return hook


def hook_matchers(
    target: Target | Gate,
    *,
    agent_name: str | None = None,
    events: tuple[HookEvent, ...] = EVENTS,
    timeout: float | None = None,
) -> dict[HookEvent, list[HookMatcher]]:
    """``ClaudeAgentOptions(hooks=...)`` that send every event to hookgate.

    One matcher per event, matching every tool (hookgate's own matchers select hooks).
    ``timeout`` (seconds) is Claude Code's limit per callback; hookgate's own per-hook
    timeouts and chain budget apply inside it.
    """
    gate = Gate(target)
    callback = _callback(gate, agent_name, set())
    return {
        event: [HookMatcher(matcher=None, hooks=[callback], timeout=timeout, on_failure="block")]
        for event in events
    }
