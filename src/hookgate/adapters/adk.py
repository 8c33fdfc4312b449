"""hookgate inside Google ADK agents (``google-adk``), as a plugin.

    from google.adk.apps import App
    from hookgate.adapters.adk import HookgatePlugin
    app = App(name="ops", root_agent=agent, plugins=[HookgatePlugin(engine)])
    runner = InMemoryRunner(app=app)

Plugins run before the agents' own callbacks and apply to every agent of the app.

==========================  ===========  ==================================================
outcome                     support      how
==========================  ===========  ==================================================
block a tool call           native       ``before_tool_callback`` returns
                                         ``{"error": reason}``: the tool is skipped
rewrite tool arguments      native       ``tool_args`` are replaced in place
synthetic tool result       native       ``before_tool_callback`` returns the result (a
                                         dict, or ``{"result": value}``)
context for the model       native       ``additional_context`` key of the tool result;
                                         appended to the user message / the system
                                         instruction (``before_llm``)
rewrite tool output         native       ``after_tool_callback`` returns the new result
abort the run               native       :class:`~hookgate.adapters.HookgateAbort`; ADK
                                         wraps a plugin's exception in ``RuntimeError``
                                         (the abort is its ``__cause__``)
block / rewrite the prompt  native       ``on_user_message_callback`` returns the new
                                         message; a block raises before any model call
before_llm / after_llm      native       ``before_model_callback`` (system instruction) /
                                         ``after_model_callback`` (text parts)
sub-agent start / stop      native       ``before/after_agent_callback`` of agents other
                                         than the root; a block skips the sub-agent with
                                         the reason as its answer
session start / stop        native       ``before_run_callback`` / ``after_run_callback``
==========================  ===========  ==================================================

ADK does not run plugins inside ``AgentTool`` sub-agents (they get their own runner): give
that runner its own ``HookgatePlugin``. Live (bidirectional) mode skips plugin tool callbacks.
Payloads carry ``tool_use_id`` (the function call id), ``turn_id`` (the invocation id),
``session_id`` (the ADK session id) and ``agent_id`` (the agent's name).
"""

from __future__ import annotations

from typing import Any

from google.adk.agents.base_agent import BaseAgent
from google.adk.agents.callback_context import CallbackContext
from google.adk.agents.invocation_context import InvocationContext
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.adk.plugins.base_plugin import BasePlugin
from google.adk.tools.base_tool import BaseTool
from google.adk.tools.tool_context import ToolContext
from google.genai import types

from hookgate.adapters._gate import Gate, Target
from hookgate.adapters._mapping import (
    HookgateAbort,
    after_tool,
    as_text,
    before_tool,
    check_abort,
    drop_none,
    llm_verdict,
    prompt_verdict,
    request_view,
    response_view,
    system_rewrite,
    text_rewrite,
    with_context,
)

__all__ = ["HookgateAbort", "HookgatePlugin"]

SOURCE = "adk"


def _text(content: types.Content | None) -> str:
    if content is None or not content.parts:
        return ""
    return "".join(part.text for part in content.parts if part.text and not part.thought)


def _agent_name(invocation: InvocationContext) -> str | None:
    agent = invocation.agent
    return agent.name if agent is not None else None


def _ids(invocation: InvocationContext, agent_name: str | None = None) -> dict[str, Any]:
    return drop_none(
        {
            "session_id": invocation.session.id,
            "turn_id": invocation.invocation_id,
            "agent_id": agent_name or _agent_name(invocation),
        }
    )


def _call_key(tool_context: ToolContext) -> tuple[str, str] | None:
    """A tool call's key in the plugin's per-call state (None: the call has no id)."""
    call_id = tool_context.function_call_id
    return (tool_context.invocation_id, call_id) if call_id else None


def _system_text(request: LlmRequest) -> str | None:
    system = request.config.system_instruction if request.config else None
    if system is None:
        return None
    if isinstance(system, str):
        return system
    if isinstance(system, types.Content):
        return _text(system)
    return as_text(system)


class HookgatePlugin(BasePlugin):
    """Runs hookgate's hooks at every point of an ADK app's runs."""

    def __init__(self, target: Target | Gate, *, name: str = "hookgate") -> None:
        super().__init__(name=name)
        self.gate = Gate(target)
        # Context from pre_tool_use, added to the result once the tool ran, and the calls a
        # hook answered for (ADK still calls after_tool_callback for them), by invocation
        # and call id: models reuse call ids, and one invocation must never get another's.
        self._contexts: dict[tuple[str, str], list[str]] = {}
        self._answered: set[tuple[str, str]] = set()
        # invocation id -> the root agent's name (sub-agents are the others).
        self._roots: dict[str, str] = {}

    # -- the run ----------------------------------------------------------------------------

    async def on_user_message_callback(
        self, *, invocation_context: InvocationContext, user_message: types.Content
    ) -> types.Content | None:
        if not self.gate.wants("user_prompt_submit"):
            return None
        prompt = _text(user_message)
        outcome = await self.gate.fire(
            "user_prompt_submit", {**_ids(invocation_context), "prompt": prompt}
        )
        verdict = prompt_verdict(outcome, prompt)
        if not verdict.rewritten and not verdict.context:
            return None
        return types.Content(
            role=user_message.role or "user",
            parts=[types.Part(text=with_context(verdict.prompt, verdict.context))],
        )

    async def before_run_callback(
        self, *, invocation_context: InvocationContext
    ) -> types.Content | None:
        root = _agent_name(invocation_context)
        if root is not None:
            self._roots[invocation_context.invocation_id] = root
        if not self.gate.wants("session_start"):
            return None
        await self.gate.fire(
            "session_start",
            {
                **_ids(invocation_context),
                "source": SOURCE,
                "prompt": _text(invocation_context.user_content),
            },
        )
        return None

    async def after_run_callback(self, *, invocation_context: InvocationContext) -> None:
        self._roots.pop(invocation_context.invocation_id, None)
        if not self.gate.wants("stop"):
            return
        events = invocation_context.session.events
        last = _text(events[-1].content) if events else ""
        await self.gate.fire(
            "stop", {**_ids(invocation_context), "last_message": last, "stop_reason": "end"}
        )

    async def on_run_error_callback(
        self, *, invocation_context: InvocationContext, error: Exception
    ) -> None:
        self._roots.pop(invocation_context.invocation_id, None)

    # -- sub-agents -------------------------------------------------------------------------

    def _sub_agent(self, callback_context: CallbackContext) -> tuple[str, str] | None:
        root = self._roots.get(callback_context.invocation_id)
        name = callback_context.agent_name
        if root is None or name == root:
            return None
        return root, name

    async def before_agent_callback(
        self, *, agent: BaseAgent, callback_context: CallbackContext
    ) -> types.Content | None:
        pair = self._sub_agent(callback_context)
        if pair is None or not self.gate.wants("subagent_start"):
            return None
        invocation = callback_context._invocation_context
        outcome = await self.gate.fire(
            "subagent_start",
            {**_ids(invocation, pair[0]), "source_agent": pair[0], "target_agent": pair[1]},
        )
        check_abort("subagent_start", outcome)
        if outcome.blocked:
            # Returning content skips the agent; its answer is the reason.
            reason = outcome.reason or "blocked by a hook"
            return types.Content(role="model", parts=[types.Part(text=f"Blocked: {reason}")])
        if outcome.updated_input is not None:
            raise HookgateAbort("subagent_start", "an ADK sub-agent's task cannot be rewritten")
        return None

    async def after_agent_callback(
        self, *, agent: BaseAgent, callback_context: CallbackContext
    ) -> types.Content | None:
        pair = self._sub_agent(callback_context)
        if pair is not None and self.gate.wants("subagent_stop"):
            invocation = callback_context._invocation_context
            events = [e for e in invocation.session.events if e.author == pair[1]]
            output = _text(events[-1].content) if events else ""
            await self.gate.fire(
                "subagent_stop",
                {
                    **_ids(invocation, pair[0]),
                    "source_agent": pair[0],
                    "target_agent": pair[1],
                    "output": output,
                },
            )
        return None

    # -- the model call ---------------------------------------------------------------------

    async def before_model_callback(
        self, *, callback_context: CallbackContext, llm_request: LlmRequest
    ) -> LlmResponse | None:
        if not self.gate.wants("before_llm"):
            return None
        invocation = callback_context._invocation_context
        view = request_view(
            model=llm_request.model,
            system=_system_text(llm_request),
            messages=[
                {"role": c.role or "user", "content": _text(c)} for c in llm_request.contents
            ],
            tools=sorted(llm_request.tools_dict),
        )
        outcome = await self.gate.fire(
            "before_llm", {**_ids(invocation, callback_context.agent_name), "request": view}
        )
        updated, context = llm_verdict("before_llm", outcome)
        system = system_rewrite(view, updated)
        if system is not None:
            llm_request.config.system_instruction = system
        if context:
            llm_request.append_instructions(context)
        return None

    async def after_model_callback(
        self, *, callback_context: CallbackContext, llm_response: LlmResponse
    ) -> LlmResponse | None:
        if not self.gate.wants("after_llm"):
            return None
        invocation = callback_context._invocation_context
        content = llm_response.content
        parts = list(content.parts or []) if content is not None else []
        calls = [
            {
                "name": p.function_call.name,
                "args": dict(p.function_call.args or {}),
                "id": p.function_call.id,
            }
            for p in parts
            if p.function_call is not None
        ]
        view = response_view(_text(content), calls)
        outcome = await self.gate.fire(
            "after_llm", {**_ids(invocation, callback_context.agent_name), "response": view}
        )
        updated, context = llm_verdict("after_llm", outcome)
        text = text_rewrite(view, updated)
        if text is None and not context:
            return None
        texts = [p for p in parts if p.text and not p.thought]
        if not texts or content is None:
            if text is not None:
                raise HookgateAbort("after_llm", "a response without text cannot take new text")
            return None
        new_text = with_context(view["text"] if text is None else text, context)
        new_parts = [p for p in parts if p not in texts]
        new_parts.insert(parts.index(texts[0]), types.Part(text=new_text))
        return llm_response.model_copy(
            update={"content": content.model_copy(update={"parts": new_parts})}
        )

    # -- tool calls -------------------------------------------------------------------------

    def _tool_payload(
        self, tool: BaseTool, tool_args: dict[str, Any], tool_context: ToolContext
    ) -> dict[str, Any]:
        return {
            **_ids(tool_context._invocation_context, tool_context.agent_name),
            "tool_name": tool.name,
            "tool_input": dict(tool_args),
            "tool_use_id": tool_context.function_call_id,
        }

    async def before_tool_callback(
        self, *, tool: BaseTool, tool_args: dict[str, Any], tool_context: ToolContext
    ) -> dict[str, Any] | None:
        if not self.gate.wants("pre_tool_use"):
            return None
        verdict = await before_tool(self.gate, self._tool_payload(tool, tool_args, tool_context))
        key = _call_key(tool_context)
        if not verdict.runs and key is not None:
            self._answered.add(key)
        if verdict.action == "block":
            return {"error": verdict.text()}
        if verdict.action == "respond":
            result = verdict.result
            answer = dict(result) if isinstance(result, dict) else {"result": result}
            if verdict.context:
                answer["additional_context"] = verdict.context
            return answer
        if verdict.args != tool_args:
            # ADK calls the tool with this very dict: rewrite it in place.
            tool_args.clear()
            tool_args.update(verdict.args)
        if verdict.context and key is not None:
            self._contexts[key] = verdict.context
        return None  # not {}: an empty dict would be the tool's answer

    async def on_tool_error_callback(
        self,
        *,
        tool: BaseTool,
        tool_args: dict[str, Any],
        tool_context: ToolContext,
        error: Exception,
    ) -> dict[str, Any] | None:
        key = _call_key(tool_context)
        if key is not None:
            self._contexts.pop(key, None)
            self._answered.discard(key)
        if not self.gate.wants("post_tool_use_failure"):
            return None
        payload = self._tool_payload(tool, tool_args, tool_context)
        await self.gate.fire("post_tool_use_failure", {**payload, "error": type(error).__name__})
        return None  # ADK's own error handling goes on

    async def after_tool_callback(
        self,
        *,
        tool: BaseTool,
        tool_args: dict[str, Any],
        tool_context: ToolContext,
        result: dict[str, Any],
    ) -> dict[str, Any] | None:
        key = _call_key(tool_context)
        if key is not None and key in self._answered:
            self._answered.discard(key)
            return None  # the tool did not run: nothing to report
        if not self.gate.wants("post_tool_use"):
            context = self._contexts.pop(key, None) if key is not None and self._contexts else None
            if not context:
                return None
            answer = dict(result) if isinstance(result, dict) else {"result": result}
            return {**answer, "additional_context": context}
        payload = self._tool_payload(tool, tool_args, tool_context)
        after = await after_tool(self.gate, payload, result)
        context = (self._contexts.pop(key, []) if key is not None else []) + after.context
        if not after.rewritten and not context:
            return None
        output = after.output
        answer = dict(output) if isinstance(output, dict) else {"result": output}
        if context:
            answer["additional_context"] = context
        return answer
