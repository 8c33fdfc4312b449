"""The ``process`` handler against a real child speaking PicoClaw's JSON-RPC protocol."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from tests.handlers.process_support import (
    pid_alive,
    process_hook,
    read_log,
    saw_eof,
)
from tests.support.waiting import wait_until, wait_until_async

import hookgate
from hookgate import Engine, Outcome
from hookgate.definition import DefinitionError
from hookgate.definition_model import validate_definition
from hookgate.handlers.process import rpc
from hookgate.handlers.process.handler import ProcessHandler
from hookgate.handlers.process.rpc import HookProcess

TOOL = {"tool_name": "exec", "tool_input": {"cmd": "ls"}, "session_id": "s-1", "turn_id": "t-9"}


def handler_of(engine: Engine) -> ProcessHandler:
    handler = engine.handler("process")
    assert isinstance(handler, ProcessHandler)
    return handler


# -- handshake and params -----------------------------------------------------------------


async def test_hello_then_before_tool_with_picoclaw_params(tmp_path: Path) -> None:
    log = tmp_path / "log.jsonl"
    async with Engine([process_hook(log=log, name="gate")]) as engine:
        outcome = await engine.fire("pre_tool_use", TOOL)
    assert outcome.decision == "allow"
    hello, call = read_log(log)[:2]
    assert hello["method"] == "hook.hello"
    assert hello["id"] == 1
    assert hello["params"] == {"name": "gate", "version": 1, "modes": ["tool"]}
    assert call["method"] == "hook.before_tool"
    assert call["id"] == 2
    params = call["params"]
    assert params["tool"] == "exec"
    assert params["arguments"] == {"cmd": "ls"}
    assert params["meta"]["SessionKey"] == "s-1"
    assert params["meta"]["TurnID"] == "t-9"
    assert params["meta"]["TracePath"] == "turn.tool.before"
    assert outcome.trace[0].details["method"] == "hook.before_tool"


async def test_hello_modes_follow_intercept_and_observe(tmp_path: Path) -> None:
    log = tmp_path / "log.jsonl"
    hook = process_hook(
        log=log, config={"intercept": ["approve_tool", "before_llm"], "observe": ["turn_end"]}
    )
    async with Engine([hook]) as engine:
        await engine.fire("pre_tool_use", TOOL)
    assert read_log(log)[0]["params"]["modes"] == ["observe", "llm", "approve"]


async def test_after_tool_params_carry_a_tool_result(tmp_path: Path) -> None:
    log = tmp_path / "log.jsonl"
    async with Engine([process_hook("post_tool_use", log=log)]) as engine:
        await engine.fire(
            "after_tool", {**TOOL, "tool_response": "a.txt b.txt", "duration_ms": 12}, wait=True
        )
    params = read_log(log)[1]["params"]
    assert read_log(log)[1]["method"] == "hook.after_tool"
    assert params["result"] == {"for_llm": "a.txt b.txt", "silent": False, "is_error": False,
                                "async": False}
    assert params["duration"] == 12_000_000


async def test_llm_params(tmp_path: Path) -> None:
    log = tmp_path / "log.jsonl"
    request = {"model": "m-1", "messages": [{"role": "user", "content": "hi"}], "tools": [],
               "options": {}}
    hooks = [process_hook("before_llm", log=log, name="b"),
             process_hook("after_llm", log=log, name="a")]
    async with Engine(hooks) as engine:
        await engine.fire("before_llm", request=request)
        await engine.fire("after_llm", request=request, response={"content": "hello"})
    messages = {m["method"]: m["params"] for m in read_log(log) if m["method"] != "hook.hello"}
    before = messages["hook.before_llm"]
    assert before["model"] == "m-1"
    assert before["messages"] == request["messages"]
    assert before["meta"]["TracePath"] == "turn.llm.request"
    after = messages["hook.after_llm"]
    assert after["model"] == "m-1"
    assert after["response"] == {"content": "hello"}


# -- actions ------------------------------------------------------------------------------


async def run_answer(event: str, answer: Any, payload: dict[str, Any], **fields: Any) -> Any:
    method = {"pre_tool_use": "hook.before_tool", "post_tool_use": "hook.after_tool",
              "approve_tool": "hook.approve_tool", "before_llm": "hook.before_llm",
              "after_llm": "hook.after_llm"}[event]
    async with Engine([process_hook(event, answers={method: answer}, **fields)]) as engine:
        return await engine.fire(event, payload, wait=True)


@pytest.mark.parametrize("answer", [{"action": "continue"}, {"action": ""}, {}, None])
async def test_continue_allows(answer: Any) -> None:
    outcome = await run_answer("pre_tool_use", answer, TOOL)
    assert outcome.decision == "allow"
    assert outcome.updated_input is None


async def test_modify_before_tool_rewrites_arguments() -> None:
    answer = {"action": "modify", "call": {"tool": "exec", "arguments": {"cmd": "ls -la"}}}
    outcome = await run_answer("pre_tool_use", answer, TOOL)
    assert outcome.decision == "allow"
    assert outcome.updated_input == {"cmd": "ls -la"}


async def test_renaming_the_tool_is_malformed() -> None:
    answer = {"action": "modify", "call": {"tool": "shell", "arguments": {}}}
    outcome = await run_answer("pre_tool_use", answer, TOOL, on_error="allow")
    assert outcome.decision == "block"
    assert "renaming the tool" in (outcome.trace[0].error or "")


async def test_respond_gives_a_synthetic_result() -> None:
    result = {"for_llm": "cached answer", "silent": False, "is_error": False}
    outcome = await run_answer("pre_tool_use", {"action": "respond", "result": result}, TOOL)
    assert outcome.decision == "allow"
    assert outcome.result == result
    assert outcome.trace[0].decision == "respond"


async def test_deny_tool_blocks_with_reason() -> None:
    answer = {"action": "deny_tool", "reason": "not on weekends"}
    outcome = await run_answer("pre_tool_use", answer, TOOL)
    assert outcome.decision == "block"
    assert outcome.reason == "not on weekends"


@pytest.mark.parametrize(("action", "abort", "cont"), [("abort_turn", "turn", True),
                                                       ("hard_abort", "hard", False)])
async def test_aborts(action: str, abort: str, cont: bool) -> None:
    outcome = await run_answer("pre_tool_use", {"action": action, "reason": "stop"}, TOOL)
    assert outcome.decision == "block"
    assert outcome.abort == abort
    assert outcome.continue_ is cont


@pytest.mark.parametrize("action", ["block", "deny", "allow", "Continue"])
async def test_unknown_action_is_malformed_even_when_failing_open(action: str) -> None:
    outcome = await run_answer("pre_tool_use", {"action": action}, TOOL,
                               on_error="allow", on_timeout="allow")
    assert outcome.decision == "block"
    assert "unknown action" in (outcome.trace[0].error or "")


async def test_respond_outside_before_tool_is_malformed() -> None:
    outcome = await run_answer("before_llm", {"action": "respond", "result": {}},
                               {"request": {"model": "m"}}, on_error="allow")
    assert outcome.decision == "block"


async def test_modify_before_llm_replaces_the_request() -> None:
    new = {"model": "m-2", "messages": [], "meta": {"x": 1}}
    outcome = await run_answer("before_llm", {"action": "modify", "request": new},
                               {"request": {"model": "m-1", "messages": []}})
    assert outcome.updated_input == {"model": "m-2", "messages": []}


async def test_modify_after_llm_replaces_the_response() -> None:
    answer = {"action": "modify", "response": {"model": "m", "response": {"content": "edited"}}}
    outcome = await run_answer("after_llm", answer, {"request": {}, "response": {"content": "x"}})
    assert outcome.updated_input == {"content": "edited"}


async def test_modify_after_tool_replaces_the_result_in_the_callers_shape() -> None:
    answer = {"action": "modify", "result": {"tool": "exec", "result": {"for_llm": "after:ok"}}}
    outcome = await run_answer("post_tool_use", answer, {**TOOL, "tool_response": "ok"})
    assert outcome.updated_input == "after:ok"


@pytest.mark.parametrize(
    ("answer", "decision", "reason"),
    [
        ({"approved": True}, "allow", None),
        ({"approved": False, "reason": "blocked by ipc hook"}, "block", "blocked by ipc hook"),
        ({}, "block", "denied by approval hook"),
    ],
)
async def test_approve_tool(answer: Any, decision: str, reason: str | None) -> None:
    outcome = await run_answer("approve_tool", answer, TOOL)
    assert outcome.decision == decision
    if reason:
        assert reason in (outcome.reason or "")


async def test_rpc_error_fails_closed_by_default_and_open_when_asked() -> None:
    error = {"__error__": "method not found"}
    closed = await run_answer("pre_tool_use", error, TOOL)
    assert closed.decision == "block"
    assert "hook.before_tool failed: method not found" in (closed.trace[0].error or "")
    opened = await run_answer("pre_tool_use", error, TOOL, on_error="allow")
    assert opened.decision == "allow"


async def test_event_without_method_is_a_clear_error() -> None:
    async with Engine([process_hook("user_prompt_submit")]) as engine:
        outcome = await engine.fire("user_prompt_submit", prompt="hi")
    assert outcome.decision == "block"
    assert "user_prompt_submit has no process-hook method" in (outcome.trace[0].error or "")


# -- robustness -----------------------------------------------------------------------------


async def test_crash_fails_pending_at_once_and_restarts_with_backoff() -> None:
    async with Engine([process_hook(timeout_ms=5000)]) as engine:
        first = await engine.fire("pre_tool_use", TOOL)
        handler = handler_of(engine)
        hook_id = first.trace[0].hook_id
        pid = handler.status(hook_id)["pid"]  # type: ignore[index]
        crashed = await engine.fire("pre_tool_use", {**TOOL, "tool_input": {"_crash": 3}})
        assert crashed.decision == "block"
        assert crashed.trace[0].decision == "error"  # failed at the crash, not at the timeout
        assert "exited with status 3" in (crashed.trace[0].error or "")
        assert "crashing as asked" in (crashed.trace[0].error or "")
        status = handler.status(hook_id)
        assert status is not None and status["state"] == "restarting"
        assert status["next_restart_in_s"] is not None
        await wait_until_async(lambda: handler.status(hook_id)["state"] == "running", "running")  # type: ignore[index]
        status = handler.status(hook_id)
        assert status is not None
        assert status["restarts"] == 1
        assert status["pid"] != pid
        assert "exited with status 3" in status["last_error"]
        again = await engine.fire("pre_tool_use", TOOL)
        assert again.decision == "allow"


async def test_calls_during_restart_fail_fast_with_the_status() -> None:
    async with Engine([process_hook(on_error="block")]) as engine:
        await engine.fire("pre_tool_use", {**TOOL, "tool_input": {"_crash": 1}})
        outcome = await engine.fire("pre_tool_use", TOOL)
    assert outcome.decision == "block"
    assert "is restarting" in (outcome.trace[0].error or "")


async def test_a_process_that_never_starts_keeps_backing_off() -> None:
    hook = process_hook(env={"HOOK_EXIT_ON_START": "4"})
    async with Engine([hook]) as engine:
        outcome = await engine.fire("pre_tool_use", TOOL)
        assert outcome.decision == "block"
        assert "failed to start" in (outcome.trace[0].error or "")
        handler = handler_of(engine)
        hook_id = outcome.trace[0].hook_id
        await wait_until_async(lambda: handler.status(hook_id)["restarts"] >= 2, "2 restarts")  # type: ignore[index]
        assert handler.status(hook_id)["state"] in ("restarting", "starting")  # type: ignore[index]


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"HOOK_HELLO": '{"ok": false}'}, "hook.hello was refused"),
        ({"HOOK_HELLO": "[1]"}, "hook.hello was refused"),
        ({"HOOK_HELLO_SLEEP": "3"}, "no answer to hook.hello within 0.3 s"),
    ],
)
async def test_bad_hello_fails_the_start(env: dict[str, str], message: str) -> None:
    hook = process_hook(env=env, config={"hello_timeout_ms": 300})
    async with Engine([hook]) as engine:
        outcome = await engine.fire("pre_tool_use", TOOL)
    assert outcome.decision == "block"
    assert message in (outcome.trace[0].error or "")


async def test_a_close_during_a_restart_starts_no_process_behind_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The engine closes while a process that failed its hello is being restarted (the
    restart is stopping the old process's tasks): no new process starts behind the close,
    and the one that ran is reaped."""
    log = tmp_path / "log.jsonl"
    restarting: list[tuple[HookProcess, asyncio.Task[Any]]] = []
    paused, resume = asyncio.Event(), asyncio.Event()
    stop_tasks = HookProcess._stop_tasks

    async def pausing_stop_tasks(self: HookProcess) -> None:
        if self.state == "restarting":  # the restart's own stop, not the close's
            restarting.append((self, asyncio.current_task()))  # type: ignore[arg-type]
            paused.set()
            await resume.wait()
        await stop_tasks(self)

    monkeypatch.setattr(HookProcess, "_stop_tasks", pausing_stop_tasks)
    engine = Engine([process_hook(env={"HOOK_HELLO": '{"ok": false}'}, log=log)])
    outcome = await engine.fire("pre_tool_use", TOOL)
    assert "hook.hello was refused" in (outcome.trace[0].error or "")
    await paused.wait()
    child, restart = restarting[0]
    first_pid = child.pid
    assert first_pid is not None
    closing = asyncio.create_task(engine.aclose())
    await wait_until_async(lambda: child.closed, "the child is closed")
    resume.set()
    await closing
    await asyncio.gather(restart, return_exceptions=True)  # the restart has ended too
    assert child.state == "closed" and child.restarts == 0
    assert [m["method"] for m in read_log(log)] == ["hook.hello"]  # one process, one hello
    assert child.pid == first_pid and not pid_alive(first_pid)


async def test_a_close_while_the_process_is_spawned_waits_for_its_exit(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The engine closes while a start is inside its spawn (the child exists, the start is
    not done): the cancelled start kills its child and ``aclose`` returns only once that
    child's exit was seen, so no unreaped process outlives the engine and its loop."""
    spawned: list[asyncio.subprocess.Process] = []
    paused, resume = asyncio.Event(), asyncio.Event()
    real_spawn = rpc.spawn

    async def spawn_and_pause(*args: Any, **kwargs: Any) -> Any:
        # Like asyncio's own spawn when cancelled before its pipes are connected: the
        # child is killed, then waited for, before the cancellation goes on.
        proc, exited = await real_spawn(*args, **kwargs)
        spawned.append(proc)
        paused.set()
        try:
            await resume.wait()
        except asyncio.CancelledError:
            proc.kill()
            await proc.wait()
            raise
        return proc, exited

    monkeypatch.setattr(rpc, "spawn", spawn_and_pause)
    engine = Engine([process_hook()])
    firing = asyncio.create_task(engine.fire("pre_tool_use", TOOL))
    await paused.wait()
    await engine.aclose()
    assert spawned[0].returncode is not None  # waited for before aclose returned
    outcome = (await asyncio.gather(firing, return_exceptions=True))[0]
    assert isinstance(outcome, Outcome) and outcome.decision == "block"


async def test_noise_on_stdout_and_stderr_never_wedges_the_reader() -> None:
    async with Engine([process_hook()]) as engine:
        outcome = await engine.fire("pre_tool_use", {**TOOL, "tool_input": {"_noise": 1,
                                                                              "_echo": 1}})
        assert outcome.decision == "allow"
        assert outcome.updated_input == {"_noise": 1, "_echo": 1, "echoed": True}
        status = handler_of(engine).status(outcome.trace[0].hook_id)
        assert status is not None
        assert status["dropped_lines"] == 1  # the 2 MiB line
        assert status["bad_lines"] == 2  # "this is not json" and the JSON array
        assert status["late_replies"] == 1  # the answer for an id nobody asked
        hook_id = outcome.trace[0].hook_id
        handler = handler_of(engine)
        await wait_until_async(
            lambda: "some stderr chatter" in handler.status(hook_id)["stderr_tail"],  # type: ignore[index]
            "the child's stderr in its status",
        )
        again = await engine.fire("pre_tool_use", {**TOOL, "tool_input": {"_echo": 2}})
        assert again.updated_input == {"_echo": 2, "echoed": True}


async def test_concurrent_calls_are_matched_by_id_when_answered_out_of_order() -> None:
    """The script answers only once all 20 calls are in flight, last one first: calls sent
    one at a time would never be answered, and ids matched by arrival would be swapped."""
    async with Engine([process_hook(timeout_ms=10_000)]) as engine:
        await engine.fire("pre_tool_use", TOOL)  # start it
        payloads = [{**TOOL, "tool_input": {"_echo": n, "_gather": 20}} for n in range(1, 21)]
        outcomes = await asyncio.gather(*(engine.fire("pre_tool_use", p) for p in payloads))
    for n, outcome in enumerate(outcomes, start=1):
        assert outcome.updated_input == {"_echo": n, "_gather": 20, "echoed": True}


async def test_a_timed_out_call_leaves_the_process_usable() -> None:
    async with Engine([process_hook(timeout_ms=200)]) as engine:
        # Started first (the start goes on after a call's timeout): on a loaded machine the
        # start alone can take the 200 ms, and the slow call would time out before it was sent.
        warm = await engine.fire("pre_tool_use", {**TOOL, "tool_input": {"_echo": 0}})
        handler = handler_of(engine)
        hook_id = warm.trace[0].hook_id
        await wait_until_async(lambda: handler.status(hook_id)["state"] == "running", "running", 30)  # type: ignore[index]
        slow = await engine.fire("pre_tool_use", {**TOOL, "tool_input": {"_sleep": 0.5}})
        assert slow.decision == "block"
        assert slow.trace[0].decision == "timeout"
        # The slow call's answer still arrives (0.5 s in) and is counted, not mistaken for
        # the next call's.
        await wait_until_async(lambda: handler.status(hook_id)["late_replies"] == 1, "a late reply")  # type: ignore[index]
        fast = await engine.fire("pre_tool_use", {**TOOL, "tool_input": {"_echo": 1}})
        assert fast.decision == "allow"
        status = handler.status(hook_id)
        assert status is not None
        assert status["restarts"] == 0
        assert status["late_replies"] == 1


# -- lifecycle ----------------------------------------------------------------------------


async def test_shutdown_closes_stdin_and_leaves_nothing_running(tmp_path: Path) -> None:
    log = tmp_path / "log.jsonl"
    engine = Engine([process_hook(log=log)])
    outcome = await engine.fire("pre_tool_use", TOOL)
    pid = handler_of(engine).status(outcome.trace[0].hook_id)["pid"]  # type: ignore[index]
    assert pid_alive(pid)
    await engine.aclose()
    wait_until(lambda: not pid_alive(pid), "the child exits")
    assert saw_eof(log)  # it read EOF and left; nothing had to kill it


async def test_removing_the_hook_stops_its_process() -> None:
    async with Engine([process_hook()]) as engine:
        outcome = await engine.fire("pre_tool_use", TOOL)
        hook_id = outcome.trace[0].hook_id
        pid = handler_of(engine).status(hook_id)["pid"]  # type: ignore[index]
        engine.remove(hook_id)
        assert handler_of(engine).status(hook_id) is None
        await wait_until_async(lambda: not pid_alive(pid), "the child exits")


async def test_a_new_version_gets_a_new_process() -> None:
    async with Engine([process_hook()]) as engine:
        outcome = await engine.fire("pre_tool_use", TOOL)
        hook_id = outcome.trace[0].hook_id
        handler = handler_of(engine)
        old_pid = handler.status(hook_id)["pid"]  # type: ignore[index]
        current = engine.registry.get(hook_id)
        assert current is not None
        engine.registry.put(current.bumped(timeout_ms=4000))
        await engine.fire("pre_tool_use", TOOL)
        assert handler.status(hook_id)["pid"] != old_pid  # type: ignore[index]
        await wait_until_async(lambda: not pid_alive(old_pid), "the old child exits")


async def test_hooks_with_one_instance_share_one_process(tmp_path: Path) -> None:
    log = tmp_path / "log.jsonl"
    shared = {"instance": "gate", "intercept": ["before_tool", "approve_tool"]}
    hooks = [process_hook("pre_tool_use", log=log, name="a", config=shared),
             process_hook("approve_tool", log=log, name="b", config=shared)]
    async with Engine(hooks) as engine:
        first = await engine.fire("pre_tool_use", TOOL)
        second = await engine.fire("approve_tool", TOOL)
    assert first.trace[0].details["pid"] == second.trace[0].details["pid"]
    assert [m["method"] for m in read_log(log)] == ["hook.hello", "hook.before_tool",
                                                    "hook.approve_tool"]


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ({"command": "python3 hook.py"}, "non-empty list"),
        ({"command": []}, "non-empty list"),
        ({"command": ["x"], "transport": "tcp"}, "transport must be 'stdio'"),
        ({"command": ["x"], "intercept": ["before_everything"]}, "unknown stage"),
        ({"command": ["x"], "observe": ["tool_exec_begin"]}, "unknown runtime event kind"),
        ({"command": ["x"], "env": {"A": 1}}, "env must map"),
        ({"command": ["x"], "timeout_ms": 5}, "unknown process config key"),
    ],
)
def test_bad_process_config_is_refused(config: dict[str, Any], message: str) -> None:
    with pytest.raises(DefinitionError, match=message):
        validate_definition({"event": "pre_tool_use", "handler_type": "process",
                             "config": config}, default_scope="global")


async def test_large_messages_go_through_the_writer_in_order() -> None:
    big = "x" * 400_000  # several pipe buffers: the writer task has to wait for the pipe
    async with Engine([process_hook()]) as engine:
        await engine.fire("pre_tool_use", TOOL)
        outcomes = await asyncio.gather(
            engine.fire("pre_tool_use", {**TOOL, "tool_input": {"_echo": 1, "blob": big}}),
            engine.fire("pre_tool_use", {**TOOL, "tool_input": {"_echo": 2}}),
            engine.fire("pre_tool_use", {**TOOL, "tool_input": {"_echo": 3, "blob": big}}),
        )
    assert [o.updated_input["_echo"] for o in outcomes] == [1, 2, 3]
    assert outcomes[0].updated_input["blob"] == big
    assert outcomes[2].updated_input["blob"] == big


def test_fire_sync_runs_process_hooks_on_the_engine_loop() -> None:
    engine = Engine([process_hook()])
    outcome = engine.fire_sync("pre_tool_use", {**TOOL, "tool_input": {"_echo": 7}})
    assert outcome.updated_input == {"_echo": 7, "echoed": True}
    pid = handler_of(engine).status(outcome.trace[0].hook_id)["pid"]  # type: ignore[index]
    engine.close()
    wait_until(lambda: not pid_alive(pid), "the child exits")


async def test_a_closed_engine_refuses_to_start_the_process_again(tmp_path: Path) -> None:
    """Before EngineClosed, a fire after aclose started a new hook process that nothing
    would ever stop (a second aclose returned at once)."""
    log = tmp_path / "log.jsonl"
    engine = Engine([process_hook(log=log, name="gate")])
    assert (await engine.fire("pre_tool_use", TOOL)).decision == "allow"
    await engine.aclose()
    assert saw_eof(log)
    started = len(read_log(log))
    with pytest.raises(hookgate.EngineClosed, match="pre_tool_use: this engine was closed"):
        await engine.fire("pre_tool_use", TOOL)
    with pytest.raises(hookgate.HookgateError):
        engine.fire_sync("pre_tool_use", TOOL)
    with pytest.raises(RuntimeError):
        await engine.simulate("pre_tool_use", TOOL)
    assert len(read_log(log)) == started  # no second hook process said hello
