"""Seeds 003 (the three-layer practice) and 004 (OpenClaw hooks): observing hooks never
block, OpenClaw's lifecycle hooks exist with their answers, one id for a tool call, and the
priority direction OpenClaw's code uses."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from hookgate import Engine, HookEvent
from hookgate.events import get_event


def boom(event: HookEvent) -> None:
    raise RuntimeError("observer crashed")


async def test_llm_output_observer_that_throws_does_not_block_the_reply() -> None:
    engine = Engine()
    engine.hook("llm_output")(boom)
    try:
        waited = await engine.fire("llm_output", {"assistantTexts": ["hi"]}, wait=True)
        queued = await engine.fire("llm_output", {"assistantTexts": ["hi"]})
        await engine.drain()
    finally:
        await engine.aclose()
    assert waited.decision == "allow" and waited.trace[0].decision == "error"
    assert queued.decision == "allow"
    assert not get_event("llm_output").blocking and not get_event("llm_input").blocking


async def test_message_sending_hook_that_throws_lets_the_message_go() -> None:
    """OpenClaw isolates hook errors: message_sending fails open by default; a hook can
    still rewrite ({content}) or cancel ({cancel, cancelReason}) in OpenClaw's shape."""
    engine = Engine()
    engine.hook("message-sending", priority=30)(boom)
    engine.hook("message-sending", priority=20)(
        lambda e: {"content": e.content + " [checked]"} if "ok" in e.content else None
    )
    engine.hook("message-sending", priority=10)(
        lambda e: {"cancel": True, "cancelReason": "internal hostname"}
        if "db.internal" in e.content else None
    )
    try:
        crashed = await engine.fire("message_sending", content="ok to send", channel="dm")
        cancelled = await engine.fire("message_sending", content="see db.internal:5432")
    finally:
        await engine.aclose()
    assert crashed.decision == "allow" and crashed.updated_input == "ok to send [checked]"
    assert crashed.trace[0].decision == "error"
    assert (cancelled.decision, cancelled.reason) == ("block", "internal hostname")
    strict = Engine()
    strict.hook("message_sending", on_error="block")(boom)
    assert (await strict.fire("message_sending", content="x")).decision == "block"
    await strict.aclose()


async def test_openclaw_priority_runs_higher_first_as_openclaw_code_does() -> None:
    """Seed 004's text says lower numbers run first; OpenClaw's hook runner sorts by
    priority descending, and so does hookgate."""
    order: list[int] = []
    engine = Engine()
    for priority in (10, 100, 50):
        engine.hook("before-tool-call", priority=priority, name=f"p{priority}")(
            lambda e, p=priority: order.append(p)
        )
    await engine.fire("before_tool_call", toolName="exec", params={"cmd": "ls"})
    assert order == [100, 50, 10]


async def test_before_prompt_build_returns_prepend_context_for_the_next_prompt() -> None:
    """Context from every hook, higher priority first; the caller always waits, and a hook
    that throws or answers block cannot stop the prompt."""
    engine = Engine()
    engine.hook("before_prompt_build", priority=5)(lambda e: {"prependContext": "second"})
    engine.hook("before_prompt_build", priority=9)(lambda e: {"prepend_context": "first"})
    engine.hook("before_prompt_build", priority=1)(boom)
    try:
        outcome = await engine.fire("before_prompt_build", prompt="hello", messages=[])
    finally:
        await engine.aclose()
    assert outcome.decision == "allow"
    assert outcome.additional_context == ["first", "second"]


async def test_agent_end_is_observe_only_bookkeeping() -> None:
    seen: list[Any] = []
    engine = Engine()
    engine.hook("agent-end")(lambda e: seen.append((e.run_id, e.success)) or {"decision": "block"})
    try:
        outcome = await engine.fire("agent_end", runId="run-9", success=True, messages=[])
        assert outcome.decision == "allow" and outcome.trace == []  # queued, returned at once
        await engine.drain()
    finally:
        await engine.aclose()
    assert seen == [("run-9", True)]


async def test_before_message_write_is_a_synchronous_block_or_message_pipeline() -> None:
    """{message} replaces the message for the next hook and the caller; {block: true}
    keeps it out of the transcript."""
    engine = Engine()
    engine.hook("before_message_write", priority=2)(
        lambda e: {"message": {**e.message, "text": e.message["text"].replace("sk-123", "***")}}
    )
    engine.hook("before_message_write", priority=1)(
        lambda e: {"block": True} if "DROP" in e.message["text"] else None
    )
    try:
        rewritten = await engine.fire("before_message_write",
                                      message={"role": "tool", "text": "key sk-123"})
        dropped = await engine.fire("before_message_write",
                                    message={"role": "tool", "text": "DROP sk-123"})
    finally:
        await engine.aclose()
    garbled = Engine()
    garbled.hook("before_message_write")(lambda e: {"block": "yes"})
    malformed = await garbled.fire("before_message_write", message={"text": "x"})
    await garbled.aclose()
    assert rewritten.decision == "allow"
    assert rewritten.updated_input == {"role": "tool", "text": "key ***"}
    assert dropped.decision == "block"
    assert malformed.decision == "block" and "must be true or false" in (malformed.reason or "")


async def test_bootstrap_files_rewrite_needs_the_exact_shape() -> None:
    """Seed 003: WorkspaceBootstrapFile entries need {name, path, content, missing}; a
    near-miss (basename) crashes OpenClaw deep in init. hookgate refuses it, naming the
    missing field, before the agent sees it."""
    good = {"name": "RULES.md", "path": "/ws/RULES.md", "content": "be careful", "missing": False}
    bad = {"basename": "RULES.md", "path": "/ws/RULES.md", "content": "x", "missing": False}
    engine = Engine()
    engine.hook("agent:bootstrap")(
        lambda e: {"updated_input": [*e.bootstrap_files, e.payload.get("extra", good)]}
    )
    try:
        fine = await engine.fire("bootstrap", bootstrapFiles=[], workspaceDir="/ws")
        refused = await engine.fire("bootstrap", bootstrap_files=[], extra=bad)
    finally:
        await engine.aclose()
    assert fine.decision == "allow" and fine.updated_input == [good]
    assert refused.decision == "block"
    assert "bootstrap_files[0] lacks name" in (refused.reason or "")


def test_new_lifecycle_hooks_are_in_the_catalogue_with_aliases_fields_and_outcomes() -> None:
    """`hookgate fire` accepted none of these before; `hookgate events` lists them."""
    listed = subprocess.run([sys.executable, "-m", "hookgate", "events", "--json"],
                            capture_output=True, text=True, check=True, timeout=60)
    rows = {row["name"]: row for row in json.loads(listed.stdout)}
    expected = {
        "before_prompt_build": ({"prompt", "messages"}, ["context"], "before-prompt-build"),
        "agent_end": ({"messages", "success", "error", "run_id"}, [], "agent-end"),
        "before_message_write": ({"message"}, ["block", "updated_input"],
                                 "before-message-write"),
        "bootstrap": ({"bootstrap_files", "workspace_dir"}, ["context", "updated_input"],
                      "agent:bootstrap"),
    }
    for name, (fields, outcomes, alias) in expected.items():
        row = rows[name]
        assert fields <= set(row["fields"]) and row["outcomes"] == outcomes, name
        assert alias in row["aliases"] and get_event(alias).name == name
    assert rows["before_prompt_build"]["awaited_names"] == ["before-prompt-build",
                                                            "before_prompt_build"]
    assert rows["before_message_write"]["blocking"] is True
    assert rows["message_sending"]["default_policy"] == "allow"


@pytest.mark.parametrize(
    "payload",
    [
        {"toolName": "exec", "toolCallId": "call-7", "runId": "run-1"},  # OpenClaw
        {"tool_name": "exec", "tool_use_id": "call-7", "run_id": "run-1"},  # Claude Code
        {"tool": "exec", "tool_call_id": "call-7", "run_id": "run-1"},  # PicoClaw
    ],
    ids=["openclaw", "claude-code", "picoclaw"],
)
async def test_one_tool_call_id_across_formats_usable_in_cel(payload: dict[str, Any]) -> None:
    seen: list[Any] = []
    engine = Engine()
    engine.hook("before_tool_call", if_expr='tool_use_id == "call-7" && run_id == "run-1"')(
        lambda e: seen.append((e.tool_use_id, e.run_id))
    )
    await engine.fire("pre_tool_use", payload)
    assert seen == [("call-7", "run-1")]


async def test_capture_in_before_read_in_persist_keyed_on_tool_call_id() -> None:
    """Seed 003's pattern: remember the command in before_tool_call keyed on toolCallId,
    read it in tool_result_persist and substitute the persisted result ({message})."""
    commands: dict[str, str] = {}
    engine = Engine()
    engine.hook("before_tool_call")(lambda e: commands.update({e.tool_use_id: e.tool_input["cmd"]}))
    engine.hook("tool_result_persist")(
        lambda e: {"message": {"text": f"[{commands.pop(e.tool_use_id)}] output reduced"}}
        if e.tool_use_id in commands else None
    )
    await engine.fire("before_tool_call", toolName="exec", toolCallId="c1", params={"cmd": "ls"})
    persisted = await engine.fire("tool_result_persist", toolName="exec", toolCallId="c1",
                                  message={"text": "a\nb\nc"})
    assert persisted.updated_input == {"text": "[ls] output reduced"}


async def test_tool_narration_guard_across_four_lifecycle_hooks() -> None:
    """Seed 003's canonical plugin: after_tool_call records tools per run, llm_output flags
    a run that promised action but called no tool, before_prompt_build injects the warning,
    message_sending annotates, agent_end cleans up."""
    tools: dict[str, set[str]] = {}
    violations: dict[str, str] = {}
    engine = Engine()
    engine.hook("after_tool_call")(
        lambda e: tools.setdefault(e.run_id, set()).add(e.tool_use_id)
    )

    @engine.hook("llm_output")
    def check(event: HookEvent) -> None:
        said = " ".join(event.assistant_texts).lower()
        if "running it now" in said and not tools.get(event.run_id):
            violations[event.session_id] = "claimed to run a tool without calling one"

    engine.hook("before_prompt_build")(
        lambda e: {"prependContext": f"WARNING: you {violations[e.session_id]}."}
        if e.session_id in violations else None
    )
    engine.hook("message_sending")(
        lambda e: {"content": e.content + "\n(unverified: no tool ran)"}
        if e.session_id in violations else None
    )
    engine.hook("agent_end")(lambda e: tools.pop(e.run_id, None))
    try:
        await engine.fire("after_tool_call", runId="r1", sessionKey="s1", toolCallId="t1")
        # Non-blocking events run concurrently on the background queue, in no set order:
        # the tool's after-hook is done before the model answers, as in a real turn.
        await engine.drain()
        await engine.fire("llm_output", runId="r1", sessionKey="s1",
                          assistantTexts=["Running it now."])
        await engine.fire("llm_output", runId="r2", sessionKey="s2",
                          assistantTexts=["Running it now."])
        await engine.drain()
        clean = await engine.fire("before_prompt_build", sessionKey="s1", prompt="next")
        warned = await engine.fire("before-prompt-build", sessionKey="s2", prompt="next")
        sent = await engine.fire("message_sending", sessionKey="s2", content="Done!")
        await engine.fire("agent_end", runId="r1")
        await engine.drain()
    finally:
        await engine.aclose()
    assert clean.additional_context == []
    assert warned.additional_context == [
        "WARNING: you claimed to run a tool without calling one."]
    assert sent.updated_input == "Done!\n(unverified: no tool ran)"
    assert "r1" not in tools


def test_cli_fires_the_new_hooks(tmp_path: Path) -> None:
    hooks = tmp_path / "hooks.yaml"
    hooks.write_text(
        "hooks:\n"
        "  - {event: before_message_write, handler_type: callable,\n"
        "     config: {callable: 'tests.server.hookfns:block'}}\n"
    )
    for event, code in (("before_message_write", 2), ("agent_end", 0), ("bootstrap", 0),
                        ("before_prompt_build", 0)):
        done = subprocess.run(
            [sys.executable, "-m", "hookgate", "fire", event, "--config", str(hooks),
             "--input", '{"message": {"text": "x"}}'],
            capture_output=True, text=True, timeout=60,
        )
        assert done.returncode == code, (event, done.stderr)
