"""The execution rule: a function registered in code runs in place on the caller's thread (an
overrun on a blocking event blocks once it returns); one marked ``isolate: thread`` runs on a
worker with a hard deadline; a coroutine is cancelled at its deadline; nothing touches the
host's signals."""

from __future__ import annotations

import asyncio
import re
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.support.waiting import wait_until

import hookgate
from hookgate import Engine
from hookgate.settings import Settings

EXEC = {"tool_name": "x"}


@pytest.fixture()
def release() -> Iterator[threading.Event]:
    event = threading.Event()
    yield event
    event.set()  # let the stuck function end


def stuck_engine(release: threading.Event, settings: Settings | None = None, **hook: Any) -> Engine:
    """An engine whose first hook is isolated and waits for ``release``; a second one adds
    context."""
    engine = Engine(settings=settings)
    hook.setdefault("isolate", None if settings is not None else "thread")

    @engine.hook("pre_tool_use", timeout_ms=200, **hook)
    def stall(event: Any) -> None:
        release.wait(30)

    @engine.hook("pre_tool_use", name="after", priority=-1)
    def after(event: Any) -> dict[str, Any]:
        return {"additional_context": "after ran"}

    return engine


# -- in place: the embedding program's own code --------------------------------------------


def test_a_function_registered_in_code_runs_on_the_callers_thread() -> None:
    """fire_sync calls an in-code function in place; isolate="thread" sends it to a worker."""
    seen: list[str] = []
    engine = Engine()
    engine.hook("pre_tool_use")(lambda event: seen.append(threading.current_thread().name))
    engine.hook("stop", isolate="thread")(
        lambda event: seen.append(threading.current_thread().name)
    )
    engine.fire_sync("pre_tool_use", EXEC)
    engine.fire_sync("stop", {}, wait=True)
    assert seen[0] == threading.current_thread().name
    assert seen[1].startswith("hookgate-hook-")
    engine.close()


async def test_await_fire_runs_an_in_code_function_in_place() -> None:
    """On the event loop too, an in-code plain function runs on the caller's thread."""
    seen: list[str] = []
    engine = Engine()
    engine.hook("pre_tool_use")(lambda event: seen.append(threading.current_thread().name))
    await engine.fire("pre_tool_use", EXEC)
    assert seen == [threading.current_thread().name]
    await engine.aclose()


@pytest.mark.parametrize("how", ["fire_sync", "await fire", "beside a coroutine hook"])
def test_an_in_code_overrun_on_a_blocking_event_blocks_when_it_returns(how: str) -> None:
    """Nothing interrupts the program's own function: it runs to its end, and since its
    answer came too late the blocking event blocks (its on_timeout)."""
    engine = Engine()
    finished: list[bool] = []

    @engine.hook("pre_tool_use", timeout_ms=20)
    def slow(event: Any) -> dict[str, str]:
        time.sleep(0.2)  # a simulated slow hook
        finished.append(True)
        return {"decision": "allow"}

    if how == "beside a coroutine hook":

        @engine.hook("pre_tool_use", name="async one", priority=5)
        async def abstain(event: Any) -> None:
            return None

    if how == "fire_sync":
        outcome = engine.fire_sync("pre_tool_use", EXEC)
        engine.close()
    else:

        async def fire() -> hookgate.Outcome:
            try:
                return await engine.fire("pre_tool_use", EXEC)
            finally:
                await engine.aclose()

        outcome = asyncio.run(fire())
    assert finished == [True]
    assert outcome.decision == "block" and "timed out" in str(outcome.reason)
    assert engine.stats.hook_threads_abandoned == 0


def test_context_variables_follow_the_call() -> None:
    """In place or on a worker, the function sees the caller's context variables."""
    import contextvars

    where: contextvars.ContextVar[str] = contextvars.ContextVar("where", default="unset")
    engine = Engine()
    engine.hook("pre_tool_use")(lambda event: {"additional_context": where.get()})
    engine.hook("pre_tool_use", name="isolated", priority=-1, isolate="thread")(
        lambda event: {"additional_context": where.get()}
    )
    where.set("the caller's")
    assert engine.fire_sync("pre_tool_use", EXEC).additional_context == [
        "the caller's",
        "the caller's",
    ]
    engine.close()


# -- isolated: a worker with a hard deadline -------------------------------------------------


@pytest.mark.parametrize("marked", ["isolate=thread", "Settings.isolate_callables"])
def test_fire_sync_answers_the_timeout_at_the_deadline(
    release: threading.Event, marked: str
) -> None:
    """An isolated function that never ends answers its on_timeout at the deadline; its
    worker is counted stuck until the function returns."""
    settings = Settings(isolate_callables=True) if marked != "isolate=thread" else None
    engine = stuck_engine(release, settings)
    outcome = engine.fire_sync("pre_tool_use", EXEC)
    assert not release.is_set()  # the function is still running: the caller did not wait
    assert outcome.decision == "block" and "timed out" in str(outcome.reason)
    assert engine.stats.hook_threads_stuck == 1 and engine.stats.hook_threads_abandoned == 1
    release.set()
    wait_until(lambda: engine.stats.hook_threads_stuck == 0, "the worker came back")
    engine.close()


def test_a_hook_from_a_hooks_file_is_isolated_by_default(tmp_path: Path) -> None:
    """A function a hooks file names (``module:function``) runs on a worker."""
    module = tmp_path / "file_hooks_isolation.py"
    module.write_text(
        "import threading\n"
        "def where(event):\n"
        "    return {'additional_context': threading.current_thread().name}\n"
    )
    hooks = tmp_path / "hooks.yaml"
    hooks.write_text(
        "hooks:\n"
        "  - name: where\n"
        "    event: pre_tool_use\n"
        "    handler_type: callable\n"
        "    config: {callable: 'file_hooks_isolation:where'}\n"
        "  - name: in-place\n"
        "    event: pre_tool_use\n"
        "    handler_type: callable\n"
        "    priority: -1\n"
        "    config: {callable: 'file_hooks_isolation:where', isolate: none}\n"
    )
    import sys

    sys.path.insert(0, str(tmp_path))
    try:
        engine = Engine()
        engine.load(hooks)
        context = engine.fire_sync("pre_tool_use", EXEC).additional_context
        engine.close()
    finally:
        sys.path.remove(str(tmp_path))
    assert context[0].startswith("hookgate-hook-")
    assert context[1] == threading.current_thread().name


def test_isolate_takes_thread_or_none() -> None:
    """Any other value is a definition error naming the field."""
    engine = Engine()
    with pytest.raises(hookgate.DefinitionError, match="isolate must be"):
        engine.hook("pre_tool_use", isolate="process")(lambda event: None)


async def test_await_fire_follows_on_timeout_allow_and_runs_the_rest(
    release: threading.Event,
) -> None:
    """The loop keeps serving while an isolated function is stuck; on_timeout=allow lets the
    chain go on."""
    engine = stuck_engine(release, on_timeout="allow")
    ticks = 0

    async def ticker() -> None:
        nonlocal ticks
        while not release.is_set():
            ticks += 1
            await asyncio.sleep(0.01)

    running = asyncio.create_task(ticker())
    outcome = await engine.fire("pre_tool_use", EXEC)
    assert not release.is_set()
    assert outcome.decision == "allow" and outcome.additional_context == ["after ran"]
    assert ticks > 0  # the loop kept running while the function was stuck
    assert engine.stats.to_dict()["hook_threads_stuck"] == 1
    release.set()
    await running
    await engine.aclose()


async def test_an_isolated_hook_mixed_with_async_hooks_is_given_up_at_its_deadline(
    release: threading.Event,
) -> None:
    """Beside a coroutine hook (the loop's path), the isolated function's await is cancelled
    at its deadline and its worker abandoned."""
    engine = stuck_engine(release)

    @engine.hook("pre_tool_use", name="async one", priority=5)
    async def abstain(event: Any) -> None:
        return None

    outcome = await engine.fire("pre_tool_use", EXEC)
    assert outcome.decision == "block" and "timed out" in str(outcome.reason)
    assert engine.stats.hook_threads_stuck == 1
    release.set()
    await engine.aclose()


def test_one_tenants_stuck_hooks_leave_workers_for_the_others(release: threading.Event) -> None:
    """Past its bound of stuck workers a tenant's isolated hooks are refused (fail closed);
    another tenant's, and events with no tenant, still run."""
    engine = Engine(
        settings=Settings(hook_threads_max_stuck=10, hook_threads_max_stuck_per_tenant=2)
    )

    @engine.hook("pre_tool_use", timeout_ms=50, isolate="thread", matcher="^stall$")
    def stall(event: Any) -> None:
        release.wait(30)

    engine.hook("pre_tool_use", isolate="thread", matcher="^ok$")(
        lambda event: {"additional_context": "ran"}
    )
    for _ in range(2):
        outcome = engine.fire_sync("pre_tool_use", {"tool_name": "stall", "tenant_id": "a"})
        assert "timed out" in str(outcome.reason)
    refused = engine.fire_sync("pre_tool_use", {"tool_name": "ok", "tenant_id": "a"})
    assert refused.decision == "block" and "this tenant's" in str(refused.reason)
    other = engine.fire_sync("pre_tool_use", {"tool_name": "ok", "tenant_id": "b"})
    assert other.decision == "allow" and other.additional_context == ["ran"]
    assert engine.fire_sync("pre_tool_use", {"tool_name": "ok"}).additional_context == ["ran"]
    release.set()
    wait_until(lambda: engine.stats.hook_threads_stuck == 0, "the workers came back")
    again = engine.fire_sync("pre_tool_use", {"tool_name": "ok", "tenant_id": "a"})
    assert again.additional_context == ["ran"]
    engine.close()


# -- coroutines --------------------------------------------------------------------------------


async def test_a_coroutine_is_cancelled_at_its_deadline() -> None:
    """A coroutine hook that waits forever is cancelled at its timeout; the caller gets its
    on_timeout outcome."""
    engine = Engine()
    cancelled = asyncio.Event()

    @engine.hook("pre_tool_use", timeout_ms=50)
    async def forever(event: Any) -> None:
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            cancelled.set()
            raise

    outcome = await engine.fire("pre_tool_use", EXEC)
    assert cancelled.is_set()
    assert outcome.decision == "block" and "timed out" in str(outcome.reason)
    await engine.aclose()


async def test_a_short_deadline_after_long_ones_is_kept() -> None:
    """Deadlines share one loop timer: a hung hook with a short timeout is cancelled at its own
    deadline even while the timer waits for a longer one, and after many quick calls."""
    engine = Engine()

    @engine.hook("pre_tool_use", matcher="^slow$", timeout_ms=10_000)
    async def patient(event: Any) -> None:
        await asyncio.sleep(0)

    @engine.hook("pre_tool_use", matcher="^hung$", timeout_ms=100)
    async def hung(event: Any) -> None:
        await asyncio.Event().wait()

    for _ in range(300):  # many done deadlines, 10 s away
        assert (await engine.fire("pre_tool_use", {"tool_name": "slow"})).decision == "allow"
    long_call = asyncio.ensure_future(engine.fire("pre_tool_use", {"tool_name": "slow"}))
    started = time.monotonic()
    outcome = await engine.fire("pre_tool_use", {"tool_name": "hung"})
    assert outcome.decision == "block" and "timed out" in str(outcome.reason)
    assert time.monotonic() - started < 5  # its own 100 ms, not the 10 s one's
    assert (await long_call).decision == "allow"
    await engine.aclose()


async def test_concurrent_deadlines_each_cancel_their_own_hook() -> None:
    """Calls running at once, with different timeouts: each hung one times out, the others
    answer, whatever order their deadlines come in."""
    from hookgate.chain import HookReply
    from hookgate.execution.coroutines import run_with_deadline

    async def hang() -> None:
        await asyncio.Event().wait()

    async def answer(after: float) -> str:
        await asyncio.sleep(after)
        return "done"

    calls = [
        run_with_deadline(hang(), 0.3),
        run_with_deadline(answer(0.05), 20.0),
        run_with_deadline(hang(), 0.1),
        run_with_deadline(answer(0.0), 0.2),
        run_with_deadline(hang(), 0.2),
    ]
    started = time.monotonic()
    replies: list[HookReply] = list(await asyncio.gather(*calls))
    assert [reply.timed_out for reply in replies] == [True, False, True, False, True]
    assert [reply.answer for reply in replies] == [None, "done", None, "done", None]
    assert time.monotonic() - started < 10


async def test_a_callers_cancellation_is_passed_on() -> None:
    """Cancelling the caller (not the deadline) cancels it: no timeout reply."""
    from hookgate.execution.coroutines import run_with_deadline

    started = asyncio.Event()

    async def hang() -> None:
        started.set()
        await asyncio.Event().wait()

    task = asyncio.ensure_future(run_with_deadline(hang(), 30.0))
    await started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


# -- filters -------------------------------------------------------------------------------------


def test_a_filters_time_counts_against_the_hook_timeout() -> None:
    """An if_expr that takes the whole timeout times the hook out before it is called."""
    expr = " || ".join(f"payload.s.contains('absent-{i}')" for i in range(45))
    engine = Engine()
    engine.hook("pre_tool_use", if_expr=f"!({expr})", timeout_ms=1, isolate="thread")(
        lambda event: None
    )
    outcome = engine.fire_sync("pre_tool_use", {"tool_name": "x", "s": "ab" * 400_000})
    assert outcome.decision == "block", outcome.reason
    assert "if_expr took" in str(outcome.reason)
    engine.close()


def test_input_over_the_filter_bound_fails_closed() -> None:
    """Input too large to filter fails the hook closed."""
    engine = Engine()
    engine.hook("pre_tool_use", if_expr="tool_name == 'x'")(lambda event: None)
    outcome = engine.fire_sync("pre_tool_use", {"tool_name": "x", "s": "a" * (2 << 20)})
    assert outcome.decision == "block" and "if_expr may be evaluated over" in str(outcome.reason)
    engine.close()


# -- the host's signals ---------------------------------------------------------------------------


def test_firing_leaves_the_hosts_signals_alone() -> None:
    """The SIGALRM handler in place (pytest-timeout's, here) is the one left, whatever ran."""
    before = signal.getsignal(signal.SIGALRM)
    engine = Engine()
    engine.hook("pre_tool_use", timeout_ms=20)(lambda event: time.sleep(0.05))
    engine.hook("stop", isolate="thread")(lambda event: None)
    engine.fire_sync("pre_tool_use", EXEC)
    engine.fire_sync("stop", {}, wait=True)
    engine.close()
    assert signal.getsignal(signal.SIGALRM) is before


#: Processes of hookgate's own (not code that runs inside a host): the warm Claude Code
#: process handles its own SIGTERM.
# Programs of hookgate's own (the warm Claude Code process and the resident worker it forks),
# never imported into a host program: they may set their own SIGTERM handler.
_OWN_PROCESSES = {"integrations/claude_code/warm.py", "integrations/claude_code/resident.py"}


def test_no_module_of_the_library_touches_signals() -> None:
    """No signal handler, interval timer, alarm or pthread_kill anywhere in the library."""
    root = Path(hookgate.__file__).parent
    pattern = re.compile(r"signal\.(signal|setitimer|alarm|pthread_kill|siginterrupt)\(|SIGALRM")
    touching = [
        str(path.relative_to(root))
        for path in root.rglob("*.py")
        if pattern.search(path.read_text()) and str(path.relative_to(root)) not in _OWN_PROCESSES
    ]
    assert touching == []
