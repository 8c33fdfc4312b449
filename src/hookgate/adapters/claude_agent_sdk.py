"""hookgate inside the Claude Agent SDK for Python (``claude-agent-sdk``).

    from claude_agent_sdk import ClaudeAgentOptions, query
    from hookgate.adapters.claude_agent_sdk import hook_matchers
    matchers = hook_matchers(engine)
    options = ClaudeAgentOptions(hooks=matchers, allowed_tools=["Bash"])
    async for message in query(prompt=await matchers.submit("clean up"), options=options): ...

The agent loop runs inside the Claude Code CLI that the SDK drives; the SDK's hooks are Claude
Code's hooks answered in-process, so this adapter speaks the same contract as the Claude Code
bridge (:mod:`hookgate.integrations.claude_code.contract`, whose mapping it reuses) and the
same hooks file works under both. Every matcher is registered with ``on_failure="block"``,
and any error in the adapter answers a deny (``PreToolUse``) or a block
(``UserPromptSubmit``) itself.

Each registered event costs every run a round trip CLI → SDK → CLI where it occurs, so for an
:class:`~hookgate.Engine` only the events its hooks need are registered, plus
``UserPromptSubmit`` and ``PreToolUse``: there a hook added since, for an event left out, is
noticed and the prompt or tool call refused (never run without it). A gateway client gets
every event.

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
rewrite the prompt          workaround   Claude Code's ``UserPromptSubmit`` takes no new
                                         prompt, so ``HookgateMatchers.submit(prompt)``
                                         fires ``user_prompt_submit`` before the prompt is
                                         sent and returns the rewritten prompt to send
                                         (Claude Code's own check then lets it through
                                         without firing again). A prompt sent without it
                                         and rewritten by a hook is blocked, the block
                                         message showing the rewrite
before_llm / after_llm      impossible   the model is called inside the CLI (a proxy at
                                         ``ANTHROPIC_BASE_URL`` is the way to reach it)
sub-agent start / stop      native       ``subagent_start`` at the ``Agent``/``Task`` tool
                                         call that spawns it (a block denies the call, a
                                         rewrite of ``task`` becomes its ``prompt``: a
                                         block answered to ``SubagentStart`` does not stop
                                         a sub-agent); ``SubagentStop``
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

import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Final

from claude_agent_sdk import HookMatcher
from claude_agent_sdk.types import HookContext, HookEvent, HookInput, HookJSONOutput

from hookgate.adapters._gate import Gate, Target, failed_closed
from hookgate.adapters._mapping import HookgateAbort, prompt_verdict, with_context
from hookgate.engine import Engine
from hookgate.integrations.claude_code.contract import claude_answer, hookgate_input
from hookgate.log import log_event
from hookgate.outcome import Outcome
from hookgate.tool_output import POST_TOOL_STAGE, check_failed, output_check, withheld_like

__all__ = ["ALWAYS", "EVENTS", "FIRES", "HookgateAbort", "HookgateMatchers", "hook_matchers"]

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

#: What the adapter fires at each Claude Code event (``SubagentStart`` is decided at the
#: spawning tool call, so nothing is fired there and it is never registered).
FIRES: Final[Mapping[HookEvent, tuple[str, ...]]] = {
    "UserPromptSubmit": ("session_start", "user_prompt_submit"),
    "PreToolUse": ("pre_tool_use", "subagent_start"),
    "PermissionRequest": ("approve_tool",),
    "PostToolUse": ("post_tool_use",),
    "PostToolUseFailure": ("post_tool_use_failure",),
    "SubagentStart": (),
    "SubagentStop": ("subagent_stop",),
    "Stop": ("stop",),
    "PreCompact": ("before_compaction",),
    "Notification": ("notification",),
}

#: Registered for an engine even without hooks for them: the two points where Claude Code
#: waits before anything happens (a prompt, a tool call), where the adapter checks that no
#: hook was added since the matchers were built for an event they do not register.
ALWAYS: Final[tuple[HookEvent, ...]] = ("UserPromptSubmit", "PreToolUse")

#: The tools through which Claude Code spawns a sub-agent (``Task`` was renamed ``Agent``).
SUBAGENT_TOOLS: Final = frozenset({"Agent", "Task"})

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
    "PermissionRequest": "approve_tool",
}


def _post_tool_answer(outcome: Outcome, tool_response: Any) -> dict[str, Any]:
    """Claude Code's ``PostToolUse`` answer. A withheld output is replaced (in the tool's own
    output shape) by the notice, since a ``decision: block`` alone still shows it."""
    answer = claude_answer("PostToolUse", outcome).stdout or {}
    check = output_check(outcome)
    if not check.withheld:
        return answer
    answer["decision"] = "block"
    answer["reason"] = check.text()
    specific = answer.setdefault("hookSpecificOutput", {"hookEventName": "PostToolUse"})
    specific["updatedToolOutput"] = withheld_like(tool_response, check.text())
    if check.action == "stop":
        answer["continue"] = False
        answer["stopReason"] = check.reason
    return answer


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
    if event == "PermissionRequest":
        return {
            "hookSpecificOutput": {
                "hookEventName": "PermissionRequest",
                "decision": {"behavior": "deny", "message": reason},
            }
        }
    return {}


async def _spawn(
    gate: Gate, payload: dict[str, Any], agent_name: str | None, answer: dict[str, Any]
) -> dict[str, Any]:
    """``subagent_start`` at the ``Agent``/``Task`` tool call that spawns the sub-agent: the
    one point where Claude Code lets a hook refuse it or change its task (a block answered to
    ``SubagentStart`` itself does not stop the sub-agent)."""
    tool_input = dict(payload.get("tool_input") or {})
    specific = answer.setdefault("hookSpecificOutput", {"hookEventName": "PreToolUse"})
    if isinstance(specific.get("updatedInput"), dict):
        tool_input = dict(specific["updatedInput"])
    outcome = await gate.fire(
        "subagent_start",
        {
            key: payload[key]
            for key in ("session_id", "turn_id", "agent_id", "tool_use_id")
            if payload.get(key) is not None
        }
        | {
            "source_agent": agent_name or "main",
            "target_agent": str(tool_input.get("subagent_type") or "general-purpose"),
            "task": tool_input.get("prompt"),
        },
    )
    if outcome.blocked:
        specific["permissionDecision"] = "deny"
        specific["permissionDecisionReason"] = outcome.reason or "sub-agent blocked by hookgate"
        if outcome.abort is not None or not outcome.continue_:
            answer["continue"] = False
            answer["stopReason"] = specific["permissionDecisionReason"]
        return answer
    if outcome.updated_input is not None:
        if not isinstance(outcome.updated_input, str):
            raise TypeError("updated_input for subagent_start must be the new task (a string)")
        specific["updatedInput"] = {**tool_input, "prompt": outcome.updated_input}
    if outcome.additional_context:
        context = [specific.get("additionalContext"), *outcome.additional_context]
        specific["additionalContext"] = "\n\n".join(c for c in context if c)
    if len(specific) == 1:
        del answer["hookSpecificOutput"]
    return answer


class _Checked:
    """Prompts :meth:`HookgateMatchers.submit` already put through ``user_prompt_submit``,
    as they will reach Claude Code's ``UserPromptSubmit``: each is let through there once
    without being fired again (a prompt counts as many times as it was submitted)."""

    __slots__ = ("_counts",)

    def __init__(self) -> None:
        self._counts: dict[str, int] = {}

    def add(self, prompt: str) -> None:
        if len(self._counts) >= 1024:  # submitted, never sent: forget the oldest
            self._counts.pop(next(iter(self._counts)))
        self._counts[prompt] = self._counts.get(prompt, 0) + 1

    def take(self, prompt: str) -> bool:
        count = self._counts.get(prompt, 0)
        if count == 0:
            return False
        if count == 1:
            del self._counts[prompt]
        else:
            self._counts[prompt] = count - 1
        return True


def _unserved(gate: Gate, unregistered: tuple[str, ...]) -> list[str]:
    """hookgate events that now have hooks but whose Claude Code event is not registered."""
    return [event for event in unregistered if gate.wants(event)]


def _callback(
    gate: Gate,
    agent_name: str | None,
    started: set[str],
    checked: _Checked,
    unregistered: tuple[str, ...],
) -> Callback:
    async def hook(
        input_data: HookInput, tool_use_id: str | None, context: HookContext
    ) -> HookJSONOutput:
        event = str(input_data.get("hook_event_name", ""))
        try:
            if event == "SubagentStart":
                # Decided at the spawning tool call (see _spawn); nothing more to ask here.
                return {}
            if unregistered and event in _BLOCKING and (missed := _unserved(gate, unregistered)):
                # Hooks added after the matchers were built, for events Claude Code does not
                # send here: refuse rather than run without them.
                log_event(
                    "hookgate.adapter.unregistered_hooks",
                    level=logging.ERROR,
                    hook_event=_BLOCKING[event],
                    events=missed,
                )
                reason = (
                    f"hookgate has hooks for {', '.join(missed)}, added after hook_matchers() "
                    "was built without those Claude Code events; build the matchers again"
                )
                return _refusal(event, reason)  # type: ignore[return-value]
            spec, payload = hookgate_input(input_data)
            if tool_use_id and "tool_name" in payload and not payload.get("tool_use_id"):
                payload["tool_use_id"] = tool_use_id
            if payload.get("prompt_id"):
                payload["turn_id"] = payload["prompt_id"]
            if agent_name is not None:
                payload["agent_id"] = agent_name
            session = str(payload.get("session_id") or "")
            if event == "UserPromptSubmit" and session not in started:
                started.add(session)
                if gate.wants("session_start"):
                    await gate.fire(
                        "session_start",
                        {
                            **payload,
                            "source": "claude-agent-sdk",
                            "hook_event_name": "SessionStart",
                        },
                    )
            if event == "UserPromptSubmit" and checked.take(str(payload.get("prompt", ""))):
                return {}  # submit() fired user_prompt_submit for this very prompt
            answer: dict[str, Any] = {}
            refused = False
            # An event without hooks answers nothing: skip the engine (a registered event
            # can have none, e.g. PreToolUse when only sub-agent hooks exist).
            if event == "PostToolUse" and gate.wants(spec.name):
                # The tool's output waits here for the hooks: fired as the synchronous
                # stage, so a block withholds it and an abort stops the run.
                outcome = await gate.fire(POST_TOOL_STAGE, payload, wait=True)
                answer = _post_tool_answer(outcome, payload.get("tool_response"))
                return _for_sdk(answer)  # type: ignore[return-value]
            if gate.wants(spec.name):
                # Claude Code waits for the answer anyway: run non-blocking events now too,
                # so their context comes back.
                outcome = await gate.fire(spec.name, payload, wait=not spec.blocking)
                answer = claude_answer(event, outcome).stdout or {}
                refused = outcome.blocked or outcome.result is not None
            spawns = event == "PreToolUse" and payload.get("tool_name") in SUBAGENT_TOOLS
            if spawns and not refused and gate.wants("subagent_start"):
                answer = await _spawn(gate, payload, agent_name, answer)
            return _for_sdk(answer)  # type: ignore[return-value]
        except Exception as exc:
            if event == "PostToolUse":
                # The output could not be checked: it is withheld, never let through.
                unchecked = check_failed(exc)
                answer = _post_tool_answer(unchecked, input_data.get("tool_response"))
                return _for_sdk(answer)  # type: ignore[return-value]
            outcome = failed_closed(_BLOCKING.get(event, "stop"), exc)
            if event in _BLOCKING:
                return _refusal(event, outcome.reason or "blocked")  # type: ignore[return-value]
            return {}

    return hook


class HookgateMatchers(dict[HookEvent, list[HookMatcher]]):
    """What :func:`hook_matchers` returns: the ``hooks`` for ``ClaudeAgentOptions``, plus
    :meth:`submit` for prompts whose rewrite must be applied."""

    def __init__(
        self,
        matchers: dict[HookEvent, list[HookMatcher]],
        gate: Gate,
        agent_name: str | None,
        checked: _Checked,
    ) -> None:
        super().__init__(matchers)
        self._gate = gate
        self._agent_name = agent_name
        self._checked = checked

    async def submit(self, prompt: str) -> str:
        """Fire ``user_prompt_submit`` before the prompt goes to Claude Code, and return the
        prompt to send: rewritten, with the hooks' context appended.

        Claude Code's own ``UserPromptSubmit`` cannot replace a prompt (a rewrite answered
        there blocks it), so a prompt whose hooks may rewrite it goes through here first:
        ``query(prompt=await matchers.submit(text), options=...)``. A block, an abort or a
        failure raises :class:`~hookgate.adapters.HookgateAbort` (nothing is sent). When
        the returned prompt reaches Claude Code's ``UserPromptSubmit``, it is let through
        without firing again (so give each session its own ``hook_matchers``: the pass is
        for that text, whichever session sends it). Claude Code has not given the session
        and prompt ids yet, so this payload carries ``agent_id`` only.
        """
        payload: dict[str, Any] = {"prompt": prompt}
        if self._agent_name is not None:
            payload["agent_id"] = self._agent_name
        outcome = await self._gate.fire("user_prompt_submit", payload)
        verdict = prompt_verdict(outcome, prompt)  # raises HookgateAbort on a block
        text = with_context(verdict.prompt, verdict.context)
        self._checked.add(text)
        return text


def _registered(gate: Gate, events: tuple[HookEvent, ...]) -> tuple[HookEvent, ...]:
    """The events to register: every one for a gateway (its hooks are not known here); for an
    engine, those it has hooks for, plus :data:`ALWAYS`. Each registered event costs every run
    a round trip CLI → SDK → CLI per occurrence, hooked or not."""
    if not isinstance(gate.target, Engine):
        return tuple(event for event in events if FIRES.get(event, (event,)))
    return tuple(
        event
        for event in events
        if event in ALWAYS
        or event not in FIRES  # an event this adapter does not know: the caller asked for it
        or any(gate.wants(name) for name in FIRES[event])
    )


def hook_matchers(
    target: Target | Gate,
    *,
    agent_name: str | None = None,
    events: tuple[HookEvent, ...] = EVENTS,
    timeout: float | None = None,
) -> HookgateMatchers:
    """``ClaudeAgentOptions(hooks=...)`` that send Claude Code's events to hookgate.

    One matcher per event, matching every tool (hookgate's own matchers select hooks). For an
    :class:`~hookgate.Engine`, only the events among ``events`` that its hooks need are
    registered, plus ``UserPromptSubmit`` and ``PreToolUse`` (where a hook added later for an
    unregistered event is noticed: the prompt or tool call is then refused, never let through
    unhooked; build the matchers again after adding hooks for new events). A gateway client's
    hooks can change at any time, so for one every event is registered. ``timeout`` (seconds)
    is Claude Code's limit per callback; hookgate's own per-hook timeouts and chain budget
    apply inside it. Send prompts through the result's :meth:`~HookgateMatchers.submit` for
    a prompt rewrite to apply.
    """
    gate = Gate(target)
    checked = _Checked()
    registered = _registered(gate, events)
    # What the engine's hooks did not need when the matchers were built (events left out of
    # ``events`` on purpose are the caller's choice).
    unregistered = tuple(
        name for event in events if event not in registered for name in FIRES.get(event, ())
    )
    callback = _callback(gate, agent_name, set(), checked, unregistered)
    matchers: dict[HookEvent, list[HookMatcher]] = {
        event: [HookMatcher(matcher=None, hooks=[callback], timeout=timeout, on_failure="block")]
        for event in registered
    }
    return HookgateMatchers(matchers, gate, agent_name, checked)
