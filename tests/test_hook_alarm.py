"""Plain-function hooks on the main thread run right there, and a watchdog interrupts one that
overruns its timeout: no thread hop, no system call per event, and the timeout still holds
whatever the hook does."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from hookgate import Engine, hook_alarm
from hookgate.settings import Settings

WATCHDOG = hook_alarm._WATCHDOG


def wait_until(condition: Any, seconds: float = 10.0) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "condition not reached"
        time.sleep(0.005)


@pytest.fixture()
def release() -> Iterator[threading.Event]:
    event = threading.Event()
    yield event
    event.set()


@pytest.fixture(autouse=True)
def _alarm_left_clean() -> Iterator[None]:
    yield
    assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0), "the timer was left armed"


def test_a_sleeping_hook_is_interrupted_at_its_timeout(release: threading.Event) -> None:
    engine = Engine()
    ran_on: list[str] = []
    interrupted = threading.Event()

    @engine.hook("pre_tool_use", timeout_ms=200)
    def stall(event: Any) -> None:
        ran_on.append(threading.current_thread().name)
        try:
            release.wait(30)
        except BaseException:
            interrupted.set()
            raise

    outcome = engine.fire_sync("pre_tool_use", {"tool_name": "x"})
    assert outcome.decision == "block" and "timed out" in str(outcome.reason)
    assert ran_on == [threading.main_thread().name]  # no hop to a worker
    assert interrupted.is_set() and not release.is_set()  # stopped, not abandoned
    assert engine.stats.hook_threads_stuck == 0 and engine.stats.hook_threads_abandoned == 0
    engine.close()


def test_a_hook_that_swallows_the_interruption_is_interrupted_again(
    release: threading.Event,
) -> None:
    engine = Engine()
    swallowed = 0

    @engine.hook("pre_tool_use", timeout_ms=100, on_timeout="allow")
    def stubborn(event: Any) -> None:
        nonlocal swallowed
        while True:
            try:
                while not release.is_set():
                    pass  # a busy loop: only the interpreter's own checks can stop it
            except BaseException:
                swallowed += 1
                if swallowed == 3:
                    release.wait(30)  # and then a blocking wait

    @engine.hook("pre_tool_use", name="after", priority=-1)
    def after(event: Any) -> dict[str, Any]:
        return {"additional_context": "after ran"}

    outcome = engine.fire_sync("pre_tool_use", {"tool_name": "x"})
    assert swallowed == 3 and not release.is_set()
    assert outcome.decision == "allow" and outcome.additional_context == ["after ran"]
    engine.close()


def test_a_sleep_is_cut_short_at_a_short_timeout() -> None:
    engine = Engine()
    slept: list[bool] = []

    @engine.hook("pre_tool_use", timeout_ms=50)
    def nap(event: Any) -> None:
        time.sleep(5)
        slept.append(True)

    started = time.perf_counter()
    outcome = engine.fire_sync("pre_tool_use", {"tool_name": "x"})
    took = time.perf_counter() - started
    assert outcome.decision == "block" and "timed out" in str(outcome.reason)
    assert slept == []  # interrupted inside the sleep, not after it
    assert took < 2.5  # the property is the bound: 50 ms and a loaded machine's delays
    engine.close()


def test_a_short_call_after_a_long_one_wakes_the_watchdog(
    release: threading.Event, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The watchdog looks at the patient hook and sleeps until its due time, far ahead; the
    # stall that follows is due sooner, so it rings the bell and is interrupted on time,
    # before the watchdog would have looked again by itself.
    monkeypatch.setattr(hook_alarm, "HORIZON_S", 60.0)
    monkeypatch.setattr(WATCHDOG, "horizon", 60.0)
    engine = Engine()

    @engine.hook("pre_tool_use", name="patient", timeout_ms=10_000, priority=2)
    def patient(event: Any) -> None:
        wait_until(lambda: WATCHDOG.wake_at - time.perf_counter() > 5)

    planned: list[float] = []
    interrupted_at: list[float] = []

    @engine.hook("pre_tool_use", name="stall", timeout_ms=150, priority=1)
    def stall(event: Any) -> None:
        planned.append(WATCHDOG.wake_at)
        try:
            release.wait(20)
        except BaseException:
            interrupted_at.append(time.perf_counter())
            raise

    outcome = engine.fire_sync("pre_tool_use", {"tool_name": "x"})
    assert outcome.decision == "block" and "'stall'" in str(outcome.reason)
    assert interrupted_at and interrupted_at[0] < planned[0]
    engine.close()


def test_the_watchdog_parks_when_idle_and_a_call_wakes_it(
    release: threading.Event, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(hook_alarm, "PARK_AFTER_S", 0.05)
    engine = Engine()
    engine.hook("pre_tool_use", name="quick")(lambda event: None)
    engine.fire_sync("pre_tool_use", {"tool_name": "x"})  # the watchdog runs
    wait_until(lambda: WATCHDOG.wake_at == float("inf"))  # and parks, waiting for its bell
    rings = WATCHDOG.rings
    interrupted = threading.Event()
    stalling = Engine()

    @stalling.hook("pre_tool_use", name="stall", timeout_ms=100)
    def stall(event: Any) -> None:
        try:
            release.wait(30)
        except BaseException:
            interrupted.set()
            raise

    outcome = stalling.fire_sync("pre_tool_use", {"tool_name": "x"})
    assert outcome.decision == "block" and "'stall'" in str(outcome.reason)
    assert interrupted.is_set() and not release.is_set()
    assert WATCHDOG.rings == rings + 1  # one system call woke it
    engine.close()
    stalling.close()


def test_events_in_a_row_do_not_ring_the_watchdog() -> None:
    # The bell is the only system call of the watch: in the steady state nothing rings it.
    engine = Engine()
    for index in range(10):
        engine.hook("pre_tool_use", name=f"h{index}")(lambda event: None)
    engine.fire_sync("pre_tool_use", {"tool_name": "x"})  # wakes a parked watchdog
    rings = WATCHDOG.rings
    for _ in range(300):
        engine.fire_sync("pre_tool_use", {"tool_name": "x"})
    assert WATCHDOG.rings == rings
    engine.close()


def _in_child(body: Any) -> int:
    """Run body in a forked child; its exit code (0: body answered True)."""
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        code = 1
        try:
            code = 0 if body() else 2
        finally:
            os._exit(code)
    return os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])


@pytest.mark.skipif(not hasattr(os, "fork"), reason="POSIX fork")
def test_a_forked_child_gets_a_watchdog_of_its_own() -> None:
    engine = Engine()
    engine.hook("pre_tool_use")(lambda event: None)
    engine.fire_sync("pre_tool_use", {"tool_name": "x"})  # the parent's watchdog runs

    def child() -> bool:
        slept: list[bool] = []

        @engine.hook("pre_tool_use", name="nap", timeout_ms=100)
        def nap(event: Any) -> None:
            time.sleep(5)
            slept.append(True)

        outcome = engine.fire_sync("pre_tool_use", {"tool_name": "x"})
        assert WATCHDOG.thread is not None and WATCHDOG.thread.is_alive()
        return outcome.decision == "block" and not slept

    assert _in_child(child) == 0
    engine.close()


@pytest.mark.skipif(not hasattr(os, "fork"), reason="POSIX fork")
def test_a_hook_that_forks_is_still_interrupted_in_the_child() -> None:
    engine = Engine()
    children: list[int] = []

    @engine.hook("pre_tool_use", timeout_ms=200)
    def forker(event: Any) -> None:
        pid = os.fork()
        if pid == 0:  # pragma: no cover - the child, inside the hook
            code = 1
            try:
                time.sleep(5)
                code = 2
            except BaseException:
                code = 0  # the child's own watchdog interrupted the hook's call
            finally:
                os._exit(code)
        children.append(pid)

    engine.fire_sync("pre_tool_use", {"tool_name": "x"})
    assert os.waitstatus_to_exitcode(os.waitpid(children[0], 0)[1]) == 0
    engine.close()


async def test_await_fire_on_the_main_thread_uses_the_alarm_too(release: threading.Event) -> None:
    engine = Engine()

    @engine.hook("pre_tool_use", timeout_ms=150, on_timeout="allow")
    def stall(event: Any) -> None:
        release.wait(30)

    @engine.hook("pre_tool_use", name="after", priority=-1)
    def after(event: Any) -> dict[str, Any]:
        return {"additional_context": threading.current_thread().name}

    outcome = await engine.fire("pre_tool_use", {"tool_name": "x"})
    assert outcome.additional_context == [threading.main_thread().name]
    assert engine.stats.hook_threads_stuck == 0
    await engine.aclose()


def test_a_chain_fired_from_inside_a_hook_goes_to_the_worker_threads() -> None:
    inner = Engine()
    inner.hook("pre_tool_use")(
        lambda event: {"additional_context": threading.current_thread().name}
    )
    outer = Engine()

    @outer.hook("pre_tool_use")
    def nested(event: Any) -> dict[str, Any]:
        seen = inner.fire_sync("pre_tool_use", {"tool_name": "y"}).additional_context
        return {"additional_context": [threading.current_thread().name, *seen]}

    outcome = outer.fire_sync("pre_tool_use", {"tool_name": "x"})
    assert outcome.additional_context[0] == threading.main_thread().name
    assert outcome.additional_context[1].startswith("hookgate-hook-")
    inner.close()
    outer.close()


def test_the_applications_own_alarm_handler_is_left_alone(release: threading.Event) -> None:
    rang: list[int] = []
    previous = signal.signal(signal.SIGALRM, lambda signum, frame: rang.append(signum))
    try:
        engine = Engine()
        engine.hook("pre_tool_use", timeout_ms=150)(lambda event: release.wait(30))
        outcome = engine.fire_sync("pre_tool_use", {"tool_name": "x"})
        assert outcome.decision == "block" and "timed out" in str(outcome.reason)
        assert engine.stats.hook_threads_stuck == 1  # the worker thread took it instead
        assert rang == [] and signal.getsignal(signal.SIGALRM) is not hook_alarm._on_alarm
        release.set()
        engine.close()
    finally:
        signal.signal(signal.SIGALRM, previous)


@pytest.mark.parametrize("linger_s", [0, 0.3])
def test_the_process_exits_cleanly_with_the_watchdog_running(linger_s: float) -> None:
    # The watchdog is a daemon thread: exiting right after an interrupted hook, or while it
    # sleeps until its next look, neither hangs nor prints an error from the thread.
    script = textwrap.dedent(f"""
        import time
        from hookgate import Engine
        engine = Engine()
        engine.hook("pre_tool_use", timeout_ms=50)(lambda event: time.sleep(5))
        outcome = engine.fire_sync("pre_tool_use", {{"tool_name": "x"}})
        assert outcome.decision == "block", outcome
        time.sleep({linger_s})
        print("done")
    """)
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout == "done\n" and "Traceback" not in result.stderr


def test_a_running_timer_of_someone_else_is_left_running() -> None:
    # An interval timer with the default action is meant to end the process: the engine does
    # not borrow SIGALRM then (its handler would catch that alarm) and uses a worker.
    previous = signal.signal(signal.SIGALRM, signal.SIG_DFL)
    engine = Engine()
    engine.hook("pre_tool_use")(
        lambda event: {"additional_context": threading.current_thread().name}
    )
    signal.setitimer(signal.ITIMER_REAL, 1000.0)
    try:
        outcome = engine.fire_sync("pre_tool_use", {"tool_name": "x"})
        remaining = signal.getitimer(signal.ITIMER_REAL)[0]
        handler = signal.getsignal(signal.SIGALRM)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    assert outcome.additional_context[0].startswith("hookgate-hook-")
    assert 900 < remaining <= 1000 and handler == signal.SIG_DFL  # untouched
    engine.close()


def test_other_threads_use_the_workers() -> None:
    engine = Engine()
    engine.hook("pre_tool_use")(
        lambda event: {"additional_context": threading.current_thread().name}
    )
    seen: list[Any] = []
    caller = threading.Thread(
        target=lambda: seen.append(engine.fire_sync("pre_tool_use", {"tool_name": "x"})),
        name="agent-thread",
    )
    caller.start()
    caller.join()
    assert seen[0].additional_context[0].startswith("hookgate-hook-")
    engine.close()


def test_settings_can_send_main_thread_hooks_to_the_workers() -> None:
    engine = Engine(settings=Settings(interrupt_plain_hooks=False))
    engine.hook("pre_tool_use")(
        lambda event: {"additional_context": threading.current_thread().name}
    )
    outcome = engine.fire_sync("pre_tool_use", {"tool_name": "x"})
    assert outcome.additional_context[0].startswith("hookgate-hook-")
    engine.close()
