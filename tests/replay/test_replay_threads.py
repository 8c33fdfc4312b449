"""Replay of ``isolate: thread`` callables: batches of records go to the replay's own loop
thread (one hop per batch) and each call still runs on a worker with its hard deadline, as
live: a call past its time is a timeout at the deadline (its ``on_timeout``), the replay goes
on, and the verdicts come back in record order."""

from __future__ import annotations

import importlib
import threading
import time
from types import ModuleType
from typing import Any

from hookgate.definition_model import validate_definition
from hookgate.replay.records import RecordedDispatch
from hookgate.replay.replayer import Replayer

RELEASE = threading.Event()
THREADS: set[str] = set()


def guard(event: Any) -> dict[str, Any] | None:
    THREADS.add(threading.current_thread().name)
    cmd = event["tool_input"]["cmd"]
    if cmd == "hang":
        RELEASE.wait(30)  # held until the test ends: far past its 200 ms
        return None
    if cmd.startswith("rm"):
        return {"decision": "block", "reason": "no rm"}
    return None


def hook_module() -> ModuleType:
    """This module as the candidate imports it (pytest may have imported it by another name):
    its RELEASE and THREADS are the ones the hook sees."""
    return importlib.import_module("tests.replay.test_replay_threads")


def recorded(n: int, cmd: str) -> RecordedDispatch:
    payload = {"tool_name": "exec", "tool_input": {"cmd": cmd}, "session_id": "s1"}
    return RecordedDispatch(
        f"d{n}", "", "pre_tool_use", "exec", "allow", None, 1_700_000_000.0 + n, payload, True, {}
    )


def candidate(on_timeout: str) -> Replayer:
    return Replayer(
        [
            validate_definition(
                {
                    "event": "pre_tool_use",
                    "scope": "global",
                    "handler_type": "callable",
                    "name": "guard",
                    "timeout_ms": 200,
                    "on_timeout": on_timeout,
                    "config": {
                        "callable": "tests.replay.test_replay_threads:guard",
                        "isolate": "thread",
                    },
                }
            )
        ]
    )


async def test_isolated_callables_replay_in_batches_on_workers_in_order() -> None:
    replayer = candidate("block")
    threads = hook_module().THREADS
    threads.clear()
    try:
        records = [recorded(n, "rm -rf x" if n % 3 == 0 else "ls") for n in range(600)]
        verdicts = await replayer.replay_many(records)
    finally:
        await replayer.aclose()
    assert [v.decision for v in verdicts] == [
        "block" if n % 3 == 0 else "allow" for n in range(600)
    ]
    # Every call ran on a hook worker, none on the replay's thread or the caller's.
    assert threads and all(name.startswith("hookgate-hook") for name in threads)


async def test_a_call_past_its_deadline_is_a_timeout_and_the_replay_goes_on() -> None:
    release = hook_module().RELEASE
    release.clear()
    try:
        for on_timeout, expected in (("block", "block"), ("allow", "allow")):
            replayer = candidate(on_timeout)
            try:
                records = [recorded(0, "ls"), recorded(1, "hang"), recorded(2, "rm -rf x")]
                started = time.perf_counter()
                verdicts = await replayer.replay_many(records)
                waited = time.perf_counter() - started
            finally:
                await replayer.aclose()
            assert [v.decision for v in verdicts] == ["allow", expected, "block"]
            if on_timeout == "block":
                assert "timed out" in (verdicts[1].reason or "")
            assert waited < 10  # the deadline, not the hung call (held 30 s)
    finally:
        release.set()
