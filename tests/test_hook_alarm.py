"""Plain-function hooks on the main thread run right there, and an alarm interrupts one that
overruns its timeout: no thread hop, and the timeout still holds whatever the hook does."""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from hookgate import Engine, hook_alarm
from hookgate.settings import Settings


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


def test_each_call_gets_its_own_deadline(release: threading.Event) -> None:
    # The first hook's long timeout arms the timer far ahead; the second, shorter one must
    # move it earlier, or the stall would run on to the first hook's limit. The stall reads
    # the timer as it starts: what is left on it is what it was allowed.
    engine = Engine()
    engine.hook("pre_tool_use", name="patient", timeout_ms=10_000, priority=2)(lambda e: None)
    left_on_timer: list[float] = []

    @engine.hook("pre_tool_use", name="stall", timeout_ms=150, priority=1)
    def stall(event: Any) -> None:
        left_on_timer.append(signal.getitimer(signal.ITIMER_REAL)[0])
        release.wait(30)

    outcome = engine.fire_sync("pre_tool_use", {"tool_name": "x"})
    assert outcome.decision == "block" and "'stall'" in str(outcome.reason)
    assert 0 < left_on_timer[0] <= 0.15
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


def test_a_running_timer_of_someone_else_is_left_running() -> None:
    engine = Engine()
    engine.hook("pre_tool_use")(lambda event: {"additional_context": "ran"})
    signal.setitimer(signal.ITIMER_REAL, 1000.0)
    try:
        outcome = engine.fire_sync("pre_tool_use", {"tool_name": "x"})
        remaining = signal.getitimer(signal.ITIMER_REAL)[0]
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
    assert outcome.additional_context == ["ran"]
    assert 900 < remaining <= 1000  # not disarmed, not re-armed for the hook
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
