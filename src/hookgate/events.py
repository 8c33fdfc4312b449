"""The event catalogue: every event hookgate knows, in one table.

Each entry fixes how the chain for that event runs (blocking or not), which payload fields
the event carries, which outcome fields a hook may set, which payload field an
``updated_input`` rewrites, which field a ``matcher`` tests, and the default timeout.
Names used by other systems (Claude Code, PicoClaw, OpenClaw, GoClaw's legacy quality
gates) are aliases of the canonical snake_case names.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Final

from hookgate.errors import HookgateError

__all__ = [
    "BLOCK",
    "KIND_ALIASES",
    "CATALOGUE",
    "CONTEXT",
    "RESULT",
    "ABORT",
    "UPDATED_INPUT",
    "COMMON_FIELDS",
    "KNOWN_FIELDS",
    "LONG_WAIT_ABOVE_S",
    "MAX_LONG_WAIT_MS",
    "MAX_TIMEOUT_MS",
    "EventSpec",
    "UnknownEventError",
    "canonical_event",
    "event_names",
    "EVENTS_BY_NAME",
    "get_event",
    "normalize_payload",
]

#: Outcome capabilities a catalogue entry may grant to its hooks.
BLOCK: Final = "block"
UPDATED_INPUT: Final = "updated_input"
CONTEXT: Final = "context"
RESULT: Final = "result"
ABORT: Final = "abort"

#: Fields every event may carry, whatever its kind.
COMMON_FIELDS: Final = (
    "event_id",
    "session_id",
    "tenant_id",
    "agent_id",
    "turn_id",
    "run_id",
    "user_id",
    "depth",
    "cwd",
)

#: The longest a hook may take on most events (GoClaw's 10 s maximum).
MAX_TIMEOUT_MS: Final = 10_000
#: A hook whose timeout is longer is a *long wait* (an approval, a quality gate): the chain
#: budget does not bind it, and it is never admitted without a look.
LONG_WAIT_ABOVE_S: Final = MAX_TIMEOUT_MS / 1000
#: The longest a long wait may take: events whose hooks wait for a person or a reviewer
#: (human approvals: PicoClaw's default is 60 s, approvals may wait hours; quality gates:
#: GoClaw's ``timeout_seconds``, 60 by default, 90 and 120 in its examples).
MAX_LONG_WAIT_MS: Final = 24 * 3600 * 1000

#: The short names PicoClaw's ``observe`` lists accept, each for one ``agent.*`` kind.
KIND_ALIASES: Final[Mapping[str, str]] = {
    "turn_start": "agent.turn.start",
    "turn_end": "agent.turn.end",
    "llm_request": "agent.llm.request",
    "llm_delta": "agent.llm.delta",
    "llm_response": "agent.llm.response",
    "llm_retry": "agent.llm.retry",
    "context_compress": "agent.context.compress",
    "session_summarize": "agent.session.summarize",
    "tool_exec_start": "agent.tool.exec_start",
    "tool_exec_end": "agent.tool.exec_end",
    "tool_exec_skipped": "agent.tool.exec_skipped",
    "steering_injected": "agent.steering.injected",
    "follow_up_queued": "agent.follow_up.queued",
    "interrupt_received": "agent.interrupt.received",
    "subturn_spawn": "agent.subturn.spawn",
    "subturn_end": "agent.subturn.end",
    "subturn_result_delivered": "agent.subturn.result_delivered",
    "subturn_orphan": "agent.subturn.orphan",
    "error": "agent.error",
}


class UnknownEventError(HookgateError, ValueError):
    """An event name that is neither canonical nor a known alias."""

    def __init__(self, name: str) -> None:
        self.name = name
        close = similar_event_names(name)
        hint = f" (did you mean {' or '.join(repr(n) for n in close)}?)" if close else ""
        super().__init__(
            f"unknown event {name!r}{hint}; known events: {', '.join(event_names())} "
            "(aliases such as PreToolUse, before_tool and delegation.completed are accepted too)"
        )


@dataclass(frozen=True, slots=True)
class EventSpec:
    """One row of the catalogue."""

    name: str
    blocking: bool
    origin: str
    description: str
    fields: tuple[str, ...]
    outcomes: frozenset[str]
    input_field: str | None = None
    match_field: str | None = None
    default_timeout_ms: int = 5000
    aliases: tuple[str, ...] = ()
    #: The longest ``timeout_ms`` a hook on this event may have.
    max_timeout_ms: int = MAX_TIMEOUT_MS
    #: ``on_error``/``on_timeout`` when a hook does not say: ``block`` on blocking events
    #: unless the event's home system isolates hook failures (OpenClaw's modifying hooks).
    failure_policy: str | None = None
    #: A non-blocking event whose chain runs as a blocking one when the caller waits for it
    #: (a quality gate checking a delegated result; PicoClaw's synchronous after_tool).
    blocks_when_awaited: bool = False
    #: Names under which the caller always waits: they name a synchronous stage.
    awaited_names: frozenset[str] = frozenset()
    #: Names that run the chain as a blocking one (PicoClaw's interceptor ``after_tool``).
    blocking_names: frozenset[str] = frozenset()
    #: Answer keys of the event's home system, read as hookgate's (``prependContext``).
    answer_keys: Mapping[str, str] | None = None
    #: Checks a rewritten input; returns a problem or ``None``.
    check_input: Callable[[Any], str | None] | None = None
    #: Puts a fired payload in canonical form (short runtime-event kind names).
    prepare: Callable[[Mapping[str, Any]], Mapping[str, Any]] | None = None
    #: Blocking under every name it is fired as: every caller waits (:meth:`waits`) and the
    #: chain runs as this spec (:meth:`run_as`), which the engine then need not ask.
    always_blocking: bool = field(init=False)

    def __post_init__(self) -> None:
        always = self.blocking and not self.blocking_names and not self.blocks_when_awaited
        object.__setattr__(self, "always_blocking", always)

    @property
    def all_fields(self) -> tuple[str, ...]:
        return COMMON_FIELDS + self.fields

    def allows(self, outcome: str) -> bool:
        return outcome in self.outcomes

    @property
    def default_policy(self) -> str:
        """``on_error``/``on_timeout`` of a hook that does not set them."""
        if self.failure_policy is not None:
            return self.failure_policy
        return "block" if self.blocking or self.blocks_when_awaited else "allow"

    def waits(self, name: str, wait: bool) -> bool:
        """Whether a caller firing this event as ``name`` waits for its outcome."""
        return (
            wait or self.blocking or name in self.awaited_names or name in self.blocking_names
        )

    def run_as(self, name: str, wait: bool) -> EventSpec:
        """The spec the chain runs under: a waited-for ``blocks_when_awaited`` event, or one
        fired under a name in ``blocking_names``, runs as a blocking chain."""
        if name in self.blocking_names or (
            self.blocks_when_awaited and (wait or name in self.awaited_names)
        ):
            return _awaited(self)
        return self


_AWAITED: dict[str, EventSpec] = {}


def _awaited(spec: EventSpec) -> EventSpec:
    found = _AWAITED.get(spec.name)
    if found is None:
        found = _AWAITED[spec.name] = replace(
            spec, blocking=True, blocks_when_awaited=False, blocking_names=frozenset()
        )
    return found


def _spec(
    name: str,
    *,
    blocking: bool,
    origin: str,
    description: str,
    fields: tuple[str, ...],
    outcomes: tuple[str, ...],
    input_field: str | None = None,
    match_field: str | None = None,
    timeout_ms: int = 5000,
    aliases: tuple[str, ...] = (),
    max_timeout_ms: int = MAX_TIMEOUT_MS,
    failure_policy: str | None = None,
    blocks_when_awaited: bool = False,
    awaited_names: tuple[str, ...] = (),
    blocking_names: tuple[str, ...] = (),
    answer_keys: Mapping[str, str] | None = None,
    check_input: Callable[[Any], str | None] | None = None,
    prepare: Callable[[Mapping[str, Any]], Mapping[str, Any]] | None = None,
) -> EventSpec:
    return EventSpec(
        name=name,
        blocking=blocking,
        origin=origin,
        description=description,
        fields=fields,
        outcomes=frozenset(outcomes),
        input_field=input_field,
        match_field=match_field,
        default_timeout_ms=timeout_ms,
        aliases=aliases,
        max_timeout_ms=max_timeout_ms,
        failure_policy=failure_policy,
        blocks_when_awaited=blocks_when_awaited,
        awaited_names=frozenset(awaited_names),
        blocking_names=frozenset(blocking_names),
        answer_keys=answer_keys,
        check_input=check_input,
        prepare=prepare,
    )


#: OpenClaw's ``WorkspaceBootstrapFile``: a rewrite missing one of these crashes the agent.
BOOTSTRAP_FILE_FIELDS: Final = ("name", "path", "content", "missing")


def _check_bootstrap_files(files: Any) -> str | None:
    if not isinstance(files, list):
        return "bootstrap_files must be a list of {name, path, content, missing} objects"
    for index, entry in enumerate(files):
        if not isinstance(entry, Mapping):
            return f"bootstrap_files[{index}] must be an object"
        missing = [key for key in BOOTSTRAP_FILE_FIELDS if key not in entry]
        if missing:
            return (
                f"bootstrap_files[{index}] lacks {', '.join(missing)} (each entry needs "
                f"{', '.join(BOOTSTRAP_FILE_FIELDS)})"
            )
        if not isinstance(entry["missing"], bool):
            return f"bootstrap_files[{index}].missing must be true or false"
    return None


def _canonical_kind(payload: Mapping[str, Any]) -> Mapping[str, Any]:
    """``tool_exec_end`` → ``agent.tool.exec_end``, so observe lists and matchers that name
    either form see the event."""
    kind = payload.get("kind")
    if isinstance(kind, str) and kind in KIND_ALIASES:
        return {**payload, "kind": KIND_ALIASES[kind]}
    return payload


_TOOL = ("tool_name", "tool_input", "tool_use_id")

CATALOGUE: Final[tuple[EventSpec, ...]] = (
    # GoClaw's seven lifecycle events.
    _spec(
        "session_start",
        blocking=False,
        origin="goclaw",
        description="A new session is established.",
        fields=("source", "model", "prompt"),
        outcomes=(CONTEXT,),
        match_field="source",
        aliases=("SessionStart", "session-start"),
    ),
    _spec(
        "user_prompt_submit",
        blocking=True,
        origin="goclaw",
        description="Before the user's message enters the pipeline.",
        fields=("prompt",),
        outcomes=(BLOCK, UPDATED_INPUT, CONTEXT, ABORT),
        input_field="prompt",
        aliases=("UserPromptSubmit",),
    ),
    _spec(
        "pre_tool_use",
        blocking=True,
        origin="goclaw",
        description="Before any tool call executes.",
        fields=_TOOL,
        outcomes=(BLOCK, UPDATED_INPUT, CONTEXT, RESULT, ABORT),
        input_field="tool_input",
        match_field="tool_name",
        aliases=("PreToolUse", "before_tool", "before_tool_call", "before-tool-call"),
    ),
    _spec(
        "post_tool_use",
        blocking=False,
        origin="goclaw",
        description=(
            "After a tool call completes. Fired as PicoClaw's synchronous after_tool, the chain "
            "is an interceptor's: hooks in turn, each seeing the last rewrite, an abort stops "
            "the turn. Otherwise hooks run side by side; a waiting caller gets every answer."
        ),
        fields=(*_TOOL, "tool_response", "duration_ms"),
        outcomes=(BLOCK, CONTEXT, UPDATED_INPUT, ABORT),
        input_field="tool_response",
        match_field="tool_name",
        aliases=("PostToolUse", "after_tool", "after_tool_call", "after-tool-call"),
        blocking_names=("after_tool",),
        # The tool already ran: GoClaw, PicoClaw and Claude Code all let a failing
        # post-tool hook pass.
        failure_policy="allow",
    ),
    _spec(
        "stop",
        blocking=False,
        origin="goclaw",
        description="The agent session terminates normally.",
        fields=("last_message", "stop_reason"),
        outcomes=(CONTEXT,),
        aliases=("Stop",),
    ),
    _spec(
        "subagent_start",
        blocking=True,
        origin="goclaw",
        description="A sub-agent is spawned.",
        fields=("source_agent", "target_agent", "task"),
        outcomes=(BLOCK, UPDATED_INPUT, CONTEXT, ABORT),
        input_field="task",
        match_field="target_agent",
        aliases=("SubagentStart", "subagent_spawning"),
    ),
    _spec(
        "subagent_stop",
        blocking=False,
        origin="goclaw",
        description=(
            "A sub-agent finishes; its delegated result is the `output` field. A caller that "
            "waits (GoClaw's quality gates: delegation.completed) gets a chain that can block it."
        ),
        fields=("source_agent", "target_agent", "task", "output", "attempt"),
        outcomes=(BLOCK, CONTEXT),
        match_field="target_agent",
        aliases=("SubagentStop", "delegation.completed", "subagent_ended"),
        max_timeout_ms=MAX_LONG_WAIT_MS,
        blocks_when_awaited=True,
        awaited_names=("delegation.completed",),
    ),
    # PicoClaw's synchronous stages (before_tool/after_tool are aliases above).
    _spec(
        "before_llm",
        blocking=True,
        origin="picoclaw",
        description="Before every model call; the hook may rewrite the request.",
        fields=("request",),
        outcomes=(BLOCK, UPDATED_INPUT, CONTEXT, ABORT),
        input_field="request",
        aliases=("before-llm",),
    ),
    _spec(
        "after_llm",
        blocking=True,
        origin="picoclaw",
        description="After every model call; the hook may rewrite the response.",
        fields=("request", "response"),
        outcomes=(BLOCK, UPDATED_INPUT, CONTEXT, ABORT),
        input_field="response",
        aliases=("after-llm",),
    ),
    _spec(
        "approve_tool",
        blocking=True,
        origin="picoclaw",
        description="Approval of a tool call just before it runs; allow or deny only.",
        fields=_TOOL,
        outcomes=(BLOCK,),
        match_field="tool_name",
        timeout_ms=60_000,
        aliases=("PermissionRequest", "approve-tool"),
        max_timeout_ms=MAX_LONG_WAIT_MS,
    ),
    # OpenClaw's named hooks that are not the same moment as an event above.
    _spec(
        "session_end",
        blocking=False,
        origin="openclaw",
        description="A session ends.",
        fields=("reason",),
        outcomes=(),
        aliases=("SessionEnd", "session-end"),
    ),
    _spec(
        "gateway_start",
        blocking=False,
        origin="openclaw",
        description="The agent gateway finished starting.",
        fields=(),
        outcomes=(),
        aliases=("gateway-start",),
    ),
    _spec(
        "gateway_stop",
        blocking=False,
        origin="openclaw",
        description="The agent gateway is shutting down.",
        fields=(),
        outcomes=(),
        aliases=("gateway-stop",),
    ),
    _spec(
        "before_agent_start",
        blocking=True,
        origin="openclaw",
        description="Before an agent run starts; hooks may inject context or rewrite the prompt.",
        fields=("prompt",),
        outcomes=(BLOCK, UPDATED_INPUT, CONTEXT),
        input_field="prompt",
        aliases=("before-agent-start", "before_agent_run"),
    ),
    _spec(
        "message_received",
        blocking=False,
        origin="openclaw",
        description="A user message was received on a channel.",
        fields=("channel", "content", "sender_id"),
        outcomes=(),
        aliases=("message-received",),
    ),
    _spec(
        "message_sending",
        blocking=True,
        origin="openclaw",
        description=(
            "Before a message is sent; hooks may rewrite or cancel it. Failures are isolated "
            "(on_error/on_timeout allow unless a hook says block), as in OpenClaw."
        ),
        fields=("channel", "content", "to"),
        outcomes=(BLOCK, UPDATED_INPUT),
        input_field="content",
        aliases=("message-sending",),
        failure_policy="allow",
        answer_keys={"content": "updated_input", "cancel": "block", "cancelReason": "reason",
                     "cancel_reason": "reason"},
    ),
    _spec(
        "message_sent",
        blocking=False,
        origin="openclaw",
        description="A message was sent.",
        fields=("channel", "content", "to"),
        outcomes=(),
        aliases=("message-sent",),
    ),
    _spec(
        "before_compaction",
        blocking=False,
        origin="openclaw",
        description="Before the context is compacted.",
        fields=("trigger",),
        outcomes=(CONTEXT,),
        aliases=("before-compaction", "PreCompact"),
    ),
    _spec(
        "after_compaction",
        blocking=False,
        origin="openclaw",
        description="After the context was compacted.",
        fields=("trigger",),
        outcomes=(),
        aliases=("after-compaction", "PostCompact"),
    ),
    _spec(
        "tool_result_persist",
        blocking=True,
        origin="openclaw",
        description="A tool result is about to be written to the transcript; hooks may rewrite it.",
        fields=("tool_name", "tool_use_id", "message"),
        outcomes=(UPDATED_INPUT,),
        input_field="message",
        match_field="tool_name",
        aliases=("tool-result-persist",),
        answer_keys={"message": "updated_input"},
    ),
    _spec(
        "before_prompt_build",
        blocking=False,
        origin="openclaw",
        description=(
            "Before the next prompt is built; hooks return prepend_context (kept from every "
            "hook, higher priority first). The caller always waits; nothing here can block."
        ),
        fields=("prompt", "messages"),
        outcomes=(CONTEXT,),
        aliases=("before-prompt-build",),
        awaited_names=("before_prompt_build", "before-prompt-build"),
        answer_keys={"prepend_context": "additional_context",
                     "prependContext": "additional_context"},
    ),
    _spec(
        "before_message_write",
        blocking=True,
        origin="openclaw",
        description=(
            "A message is about to be written to the transcript (synchronous): a hook may "
            "rewrite it ({message}) or keep it out ({block: true})."
        ),
        fields=("message",),
        outcomes=(BLOCK, UPDATED_INPUT),
        input_field="message",
        aliases=("before-message-write",),
        answer_keys={"message": "updated_input", "block": "block"},
    ),
    _spec(
        "bootstrap",
        blocking=True,
        origin="openclaw",
        description=(
            "An agent's workspace is bootstrapped: hooks may replace bootstrap_files, each "
            "entry {name, path, content, missing} (checked: a wrong shape is refused)."
        ),
        fields=("bootstrap_files", "workspace_dir"),
        outcomes=(UPDATED_INPUT, CONTEXT),
        input_field="bootstrap_files",
        aliases=("agent:bootstrap", "agent-bootstrap"),
        check_input=_check_bootstrap_files,
    ),
    _spec(
        "agent_end",
        blocking=False,
        origin="openclaw",
        description="An agent run ended (observe only: per-run bookkeeping).",
        fields=("messages", "success", "error", "duration_ms"),
        outcomes=(),
        aliases=("agent-end",),
        timeout_ms=10_000,
    ),
    _spec(
        "llm_input",
        blocking=False,
        origin="openclaw",
        description="Observe the input of a model call (OpenClaw's llm_input; never blocks).",
        fields=("provider", "model", "prompt", "messages"),
        outcomes=(),
    ),
    _spec(
        "llm_output",
        blocking=False,
        origin="openclaw",
        description=(
            "Observe a model's output (OpenClaw's llm_output; never blocks, a failing hook "
            "does not touch the reply)."
        ),
        fields=("provider", "model", "prompt", "assistant_texts", "last_assistant", "usage"),
        outcomes=(),
    ),
    # Claude Code events with no GoClaw counterpart.
    _spec(
        "notification",
        blocking=False,
        origin="claude_code",
        description="The agent shows a notification to the user.",
        fields=("message", "title", "notification_type"),
        outcomes=(),
        match_field="notification_type",
        aliases=("Notification",),
    ),
    _spec(
        "post_tool_use_failure",
        blocking=False,
        origin="claude_code",
        description="A tool call failed.",
        fields=(*_TOOL, "error", "duration_ms"),
        outcomes=(CONTEXT,),
        match_field="tool_name",
        aliases=("PostToolUseFailure",),
    ),
    # The rest of Claude Code's hook events (2.1.330; fields as Claude Code sends them).
    _spec(
        "post_tool_batch",
        blocking=True,
        origin="claude_code",
        description="A batch of tool calls finished; a block stops the agent's loop.",
        fields=("tool_calls",),
        outcomes=(BLOCK, CONTEXT),
        aliases=("PostToolBatch",),
    ),
    _spec(
        "permission_denied",
        blocking=False,
        origin="claude_code",
        description="A tool call was denied by a permission rule or the user.",
        fields=(*_TOOL, "reason"),
        outcomes=(),
        match_field="tool_name",
        aliases=("PermissionDenied",),
    ),
    _spec(
        "user_prompt_expansion",
        blocking=True,
        origin="claude_code",
        description="A slash command or skill expands into a prompt.",
        fields=("expansion_type", "command_name", "command_args", "command_source", "prompt"),
        outcomes=(BLOCK, CONTEXT),
        match_field="command_name",
        aliases=("UserPromptExpansion",),
    ),
    _spec(
        "stop_failure",
        blocking=False,
        origin="claude_code",
        description="A turn ended on an API error.",
        fields=("error", "error_details", "last_message"),
        outcomes=(),
        aliases=("StopFailure",),
    ),
    _spec(
        "message_display",
        blocking=False,
        origin="claude_code",
        description="Assistant text is shown to the user; a rewrite changes what is shown.",
        fields=("turn_id", "message_id", "index", "final", "delta"),
        outcomes=(UPDATED_INPUT,),
        input_field="delta",
        aliases=("MessageDisplay",),
    ),
    _spec(
        "elicitation",
        blocking=True,
        origin="claude_code",
        description="An MCP server asks the user for input; a block declines it.",
        fields=("mcp_server_name", "message", "mode", "url", "elicitation_id",
                "requested_schema"),
        outcomes=(BLOCK,),
        match_field="mcp_server_name",
        aliases=("Elicitation",),
    ),
    _spec(
        "elicitation_result",
        blocking=True,
        origin="claude_code",
        description="The user answered an MCP elicitation; a block declines it.",
        fields=("mcp_server_name", "elicitation_id", "mode", "action", "content"),
        outcomes=(BLOCK, UPDATED_INPUT),
        input_field="content",
        match_field="mcp_server_name",
        aliases=("ElicitationResult",),
    ),
    _spec(
        "teammate_idle",
        blocking=False,
        origin="claude_code",
        description="An agent-team teammate is about to go idle; a block keeps it working.",
        fields=("teammate_name", "team_name"),
        outcomes=(BLOCK,),
        blocks_when_awaited=True,
        aliases=("TeammateIdle",),
    ),
    _spec(
        "task_created",
        blocking=False,
        origin="claude_code",
        description="A task is created; a block refuses it.",
        fields=("task_id", "task_subject", "task_description", "teammate_name", "team_name"),
        outcomes=(BLOCK,),
        blocks_when_awaited=True,
        aliases=("TaskCreated",),
    ),
    _spec(
        "task_completed",
        blocking=False,
        origin="claude_code",
        description="A task is marked completed; a block keeps it open.",
        fields=("task_id", "task_subject", "task_description", "teammate_name", "team_name"),
        outcomes=(BLOCK,),
        blocks_when_awaited=True,
        aliases=("TaskCompleted",),
    ),
    _spec(
        "setup",
        blocking=False,
        origin="claude_code",
        description="Claude Code's setup run (`--init`, `--maintenance`).",
        fields=("trigger",),
        outcomes=(CONTEXT,),
        match_field="trigger",
        aliases=("Setup",),
    ),
    _spec(
        "instructions_loaded",
        blocking=False,
        origin="claude_code",
        description="An instructions file (CLAUDE.md, a rule) was loaded into the context.",
        fields=("file_path", "memory_type", "load_reason", "globs", "trigger_file_path",
                "parent_file_path"),
        outcomes=(),
        match_field="load_reason",
        aliases=("InstructionsLoaded",),
    ),
    _spec(
        "cwd_changed",
        blocking=False,
        origin="claude_code",
        description="The session's working directory changed.",
        fields=("old_cwd", "new_cwd"),
        outcomes=(),
        aliases=("CwdChanged",),
    ),
    _spec(
        "file_changed",
        blocking=False,
        origin="claude_code",
        description="A watched file changed on disk.",
        fields=("file_path", "event"),
        outcomes=(),
        match_field="file_path",
        aliases=("FileChanged",),
    ),
    _spec(
        "config_change",
        blocking=True,
        origin="claude_code",
        description="A settings file changed during the session; a block refuses the change.",
        fields=("source", "file_path"),
        outcomes=(BLOCK,),
        match_field="source",
        aliases=("ConfigChange",),
    ),
    _spec(
        "worktree_create",
        blocking=False,
        origin="claude_code",
        description="Claude Code asks for a worktree (a hook there replaces its creation and "
        "must answer the path, so hookgate only observes it and install leaves it out).",
        fields=("name",),
        outcomes=(),
        aliases=("WorktreeCreate",),
    ),
    _spec(
        "worktree_remove",
        blocking=False,
        origin="claude_code",
        description="A worktree is removed.",
        fields=("worktree_path",),
        outcomes=(),
        aliases=("WorktreeRemove",),
    ),
    _spec(
        "before_model_switch",
        blocking=True,
        origin="claude_code",
        description="The session is about to switch models; a block cancels the switch.",
        fields=("from_model", "to_model", "requested_model", "source"),
        outcomes=(BLOCK,),
        match_field="to_model",
        aliases=("PreModelSwitch",),
    ),
    _spec(
        "after_model_switch",
        blocking=False,
        origin="claude_code",
        description="The session switched models.",
        fields=("from_model", "to_model", "requested_model", "source"),
        outcomes=(CONTEXT,),
        match_field="to_model",
        aliases=("PostModelSwitch",),
    ),
    _spec(
        "directory_added",
        blocking=False,
        origin="claude_code",
        description="A directory was added to the session's workspace.",
        fields=("directory", "source"),
        outcomes=(),
        aliases=("DirectoryAdded",),
    ),
    # PicoClaw's observe-only runtime events (turn, llm, tool exec, subturn, errors), delivered
    # by hookgate.integrations.picoclaw.runtime_events; `kind` is the dotted event kind,
    # e.g. agent.tool.exec_start.
    _spec(
        "runtime_event",
        blocking=False,
        origin="picoclaw",
        description="An observe-only runtime event from the agent loop (PicoClaw's event bus).",
        fields=("kind", "time", "source", "scope", "correlation", "severity", "payload", "attrs"),
        outcomes=(),
        match_field="kind",
        timeout_ms=500,
        aliases=("hook.runtime_event",),
        prepare=_canonical_kind,
    ),
    # MCP clients listing a server's tools through `hookgate mcp-proxy`.
    _spec(
        "list_tools",
        blocking=True,
        origin="mcp",
        description="An MCP client lists a server's tools; hooks may hide tools by rewriting "
        "`tools` (the list to show, as tool objects or names).",
        fields=("server", "tools"),
        outcomes=(BLOCK, UPDATED_INPUT),
        input_field="tools",
        match_field="server",
        aliases=("tools/list", "ListTools"),
    ),
)

_BY_NAME: Final[dict[str, EventSpec]] = {}
#: Every event by canonical name and alias, read-only: what :func:`get_event` looks up (the
#: engine indexes it once per fired event, and asks get_event for the error).
EVENTS_BY_NAME: Final[Mapping[str, EventSpec]] = _BY_NAME
for _entry in CATALOGUE:
    for _key in (_entry.name, *_entry.aliases):
        if _key in _BY_NAME:  # pragma: no cover - guards the table itself
            raise RuntimeError(f"event name {_key!r} appears twice in the catalogue")
        _BY_NAME[_key] = _entry


def get_event(name: str) -> EventSpec:
    """Look an event up by canonical name or alias; raise :class:`UnknownEventError`."""
    try:
        return _BY_NAME[name]
    except KeyError:
        raise UnknownEventError(name) from None


def canonical_event(name: str) -> str:
    return get_event(name).name


def similar_event_names(name: str, limit: int = 3) -> list[str]:
    """Known names (canonical or alias) spelled like ``name``, closest first: for "did you
    mean". Compared without case, dots, dashes and underscores (``pretooluse`` finds
    ``PreToolUse``)."""
    import difflib

    def key(text: str) -> str:
        return text.lower().replace("_", "").replace(".", "").replace("-", "")

    keys: dict[str, str] = {}
    for known in _BY_NAME:
        keys.setdefault(key(known), known)
    found = difflib.get_close_matches(key(name), list(keys), n=limit, cutoff=0.6)
    return [keys[k] for k in found]


def event_names() -> list[str]:
    """Canonical names, in catalogue order."""
    return [entry.name for entry in CATALOGUE]


_CAMEL_1 = re.compile(r"([A-Z]+)([A-Z][a-z])")
_CAMEL_2 = re.compile(r"([a-z0-9])([A-Z])")
#: Every field name in hookgate's own spelling. A payload whose keys all belong here needs
#: no normalisation (the hot path checks this with one ``issuperset``).
KNOWN_FIELDS: Final = frozenset(field for entry in CATALOGUE for field in entry.all_fields) | {
    "trace_id",
    "transcript_path",
    "hook_event_name",
    "permission_mode",
    "stop_hook_active",
}
# Other systems' spellings of our fields.
_FIELD_SYNONYMS: Final = {
    "raw_input": "prompt",
    "tool_output": "tool_response",
    "session_key": "session_id",
    "tool": "tool_name",
    "arguments": "tool_input",
    "params": "tool_input",
    # One id for a tool call: OpenClaw's toolCallId, PicoClaw's tool_call_id, Claude Code's
    # tool_use_id.
    "tool_call_id": "tool_use_id",
    "call_id": "tool_use_id",
}


def normalize_payload(payload: Mapping[str, Any]) -> dict[str, Any]:
    """Accept camelCase and PascalCase field names (GoClaw's WS and Go payloads) as snake_case.

    Unknown fields are kept as they are, so nothing the caller sent is lost.
    """
    out: dict[str, Any] = {}
    for key, value in payload.items():
        name = key
        if key not in KNOWN_FIELDS and key not in _FIELD_SYNONYMS and not key.islower():
            name = _CAMEL_2.sub(r"\1_\2", _CAMEL_1.sub(r"\1_\2", key)).lower()
        name = _FIELD_SYNONYMS.get(name, name)
        if name not in out:
            out[name] = value
    return out
