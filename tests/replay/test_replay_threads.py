"""Replay of ``isolate: thread`` callables: batches of records go to a loop thread of the
replay's own (one hop per batch), the calls run there watched against their deadlines: a call
past its time is a timeout at its deadline (its ``on_timeout``) as on a worker, the replay goes
on (each further isolated call on a worker, as live), and the verdicts come back in record
order."""

from __future__ import annotations

import asyncio
import importlib
import threading
import time
from types import ModuleType
from typing import Any

import pytest
from tests.support.waiting import wait_until_async

from hookgate.definition import HookDefinition
from hookgate.definition_model import validate_definition
from hookgate.replay.records import RecordedDispatch
from hookgate.replay.replayer import Replayer

RELEASE = threading.Event()
#: (command, thread name) of each call.
THREADS: list[tuple[str, str]] = []


def guard(event: Any) -> dict[str, Any] | None:
    cmd = event["tool_input"]["cmd"]
    THREADS.append((cmd, threading.current_thread().name))
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


def guard_hook(on_timeout: str, timeout_ms: int = 200) -> HookDefinition:
    config = {"callable": "tests.replay.test_replay_threads:guard", "isolate": "thread"}
    return validate_definition(
        {
            "event": "pre_tool_use",
            "scope": "global",
            "handler_type": "callable",
            "name": "guard",
            "timeout_ms": timeout_ms,
            "on_timeout": on_timeout,
            "config": config,
        }
    )


def candidate(on_timeout: str) -> Replayer:
    return Replayer([guard_hook(on_timeout)])


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
    # Every call ran on the replay's own thread, none on the caller's.
    assert {name for _, name in threads} == {"hookgate-loop"}


async def test_a_call_past_its_deadline_is_a_timeout_and_the_replay_goes_on() -> None:
    release, threads = hook_module().RELEASE, hook_module().THREADS
    release.clear()
    try:
        for on_timeout, expected in (("block", "block"), ("allow", "allow")):
            replayer = candidate(on_timeout)
            threads.clear()
            try:
                records = [recorded(0, "ls"), recorded(1, "hang"), recorded(2, "rm -rf x")]
                started = time.perf_counter()
                verdicts = await replayer.replay_many(records)
                later = await replayer.replay_many([recorded(3, "rm -rf y"), recorded(4, "ls -a")])
                waited = time.perf_counter() - started
            finally:
                await replayer.aclose()
            assert [v.decision for v in verdicts] == ["allow", expected, "block"]
            assert [v.decision for v in later] == ["block", "allow"]
            # In place until the hang; after it, each call on a worker with its deadline.
            ran = dict(threads)
            assert ran["ls"] == ran["hang"] == "hookgate-loop"
            assert ran["rm -rf x"].startswith("hookgate-hook")
            assert ran["rm -rf y"].startswith("hookgate-hook")
            assert ran["ls -a"].startswith("hookgate-hook")
            if on_timeout == "block":
                assert "timed out" in (verdicts[1].reason or "")
            assert waited < 10  # the deadline, not the hung call (held 30 s)
    finally:
        release.set()


async def test_a_record_finished_by_the_caller_keeps_what_its_chain_already_did() -> None:
    """The rule before the hung call admitted it on the replay thread: finishing the record
    gives the chain that reply back instead of counting the call again."""
    release = hook_module().RELEASE
    release.clear()
    budget = validate_definition(
        {
            "event": "pre_tool_use",
            "scope": "global",
            "handler_type": "rule",
            "name": "budget",
            "priority": 10,
            "config": {"limit": {"count": 2, "per": "session", "window_s": 3600}},
        }
    )
    replayer = Replayer([budget, guard_hook("block")])
    try:
        records = [recorded(0, "ls"), recorded(1, "hang"), recorded(2, "ls"), recorded(3, "ls")]
        verdicts = await replayer.replay_many(records)
    finally:
        release.set()
        await replayer.aclose()
    assert [v.decision for v in verdicts] == ["allow", "block", "block", "block"]
    assert "timed out" in (verdicts[1].reason or "")  # not the limit: counted once
    assert "2 of 2" in (verdicts[2].reason or "")


async def test_a_replay_called_off_calls_off_its_thread_s_batch() -> None:
    module = hook_module()
    release, threads = module.RELEASE, module.THREADS
    release.clear()
    threads.clear()
    replayer = Replayer([guard_hook("block", timeout_ms=10_000)])
    records = [recorded(0, "hang"), *(recorded(n, "ls") for n in range(1, 50))]
    running = asyncio.ensure_future(replayer.replay_many(records))
    try:
        await wait_until_async(lambda: threads, "the hung call started")
        running.cancel()
        with pytest.raises(asyncio.CancelledError):
            await running
    finally:
        release.set()
        await replayer.aclose()
    # The batch stopped at the cancellation: the records after the hung one never ran.
    assert [cmd for cmd, _ in threads] == ["hang"]
