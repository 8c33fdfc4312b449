"""Hook state in the library: callables, command and http hooks, the file store, TTLs."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest
from tests.handlers.process_support import process_hook, read_log
from tests.support.webhook_server import Reply, WebhookServer

from hookgate import Engine
from hookgate.definition import DefinitionError
from hookgate.state import FileStateStore, MemoryStateStore, ScopeKey, StateChange, use_state_store

FNS = "tests.state.statefns"


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


def callable_hook(fn: str, event: str = "pre_tool_use", **state: Any) -> dict[str, Any]:
    return {"event": event, "handler_type": "callable", "name": fn,
            "config": {"callable": f"{FNS}:{fn}", "state": state or True}}


async def test_callable_state_is_per_session_and_kept_between_events() -> None:
    engine = Engine([callable_hook("remember")])
    try:
        first = await engine.fire("pre_tool_use", {"tool_name": "x", "session_id": "s1",
                                                   "tool_input": {"remember": "blue"}})
        assert first.additional_context == ["note=blue"]
        again = await engine.fire("pre_tool_use", {"tool_name": "x", "session_id": "s1",
                                                   "tool_input": {}})
        assert again.additional_context == ["note=blue"]
        other = await engine.fire("pre_tool_use", {"tool_name": "x", "session_id": "s2",
                                                   "tool_input": {}})
        assert other.additional_context == []
    finally:
        await engine.aclose()


async def test_run_scope_follows_turn_id_and_fire_sync_works() -> None:
    engine = Engine([callable_hook("count_run")])
    try:
        for expected in (1, 2):
            outcome = engine.fire_sync("pre_tool_use", {"tool_name": "x", "turn_id": "r1"})
            assert outcome.additional_context == [f"calls={expected}"]
        outcome = await engine.fire("pre_tool_use", {"tool_name": "x", "run_id": "r2"})
        assert outcome.additional_context == ["calls=1"]
    finally:
        await engine.aclose()


async def test_ttl_expires_entries() -> None:
    clock = Clock()
    engine = Engine([callable_hook("remember", ttl_s=60)])
    use_state_store(engine, MemoryStateStore(clock=clock))
    event = {"tool_name": "x", "session_id": "s"}
    try:
        await engine.fire("pre_tool_use", {**event, "tool_input": {"remember": "v"}})
        clock.now += 59
        assert (await engine.fire("pre_tool_use", {**event, "tool_input": {}})
                ).additional_context == ["note=v"]
        clock.now += 2
        assert (await engine.fire("pre_tool_use", {**event, "tool_input": {}})
                ).additional_context == []
    finally:
        await engine.aclose()


async def test_file_store_survives_a_restart_and_drops_expired_entries(tmp_path: Path) -> None:
    path = tmp_path / "state" / "hooks.json"
    clock = Clock()
    engine = Engine([callable_hook("remember", ttl_s=600)])
    use_state_store(engine, FileStateStore(path, clock=clock))
    try:
        await engine.fire("pre_tool_use", {"tool_name": "x", "session_id": "keep",
                                           "tool_input": {"remember": "kept"}})
        clock.now += 500
        await engine.fire("pre_tool_use", {"tool_name": "x", "session_id": "late",
                                           "tool_input": {"remember": "later"}})
    finally:
        await engine.aclose()
    document = json.loads(path.read_text())
    assert {entry["scope_id"] for entry in document["entries"]} == {"keep", "late"}
    # The temporary files were renamed; the lock file processes share the store by stays.
    assert sorted(os.listdir(path.parent)) == ["hooks.json", "hooks.json.lock"]

    clock.now += 200  # "keep" (600 s from t0) has expired, "late" (t0+500+600) has not
    restarted = Engine([callable_hook("remember", ttl_s=600)])
    store = FileStateStore(path, clock=clock)
    use_state_store(restarted, store)
    try:
        keep = await restarted.fire("pre_tool_use", {"tool_name": "x", "session_id": "keep",
                                                     "tool_input": {}})
        late = await restarted.fire("pre_tool_use", {"tool_name": "x", "session_id": "late",
                                                     "tool_input": {}})
    finally:
        await restarted.aclose()
    assert keep.additional_context == [] and late.additional_context == ["note=later"]
    key = ScopeKey("", "remember", "session", "keep")
    assert await store.load([key]) == {key: {}}


async def test_file_store_rejects_a_corrupt_file_with_its_path(tmp_path: Path) -> None:
    path = tmp_path / "s.json"
    path.write_text("{not json")
    with pytest.raises(ValueError, match="s.json is unreadable"):
        FileStateStore(path)


async def test_state_in_and_changes_out_for_a_command_hook(tmp_path: Path) -> None:
    script = tmp_path / "hook.py"
    script.write_text(
        "import json, sys\n"
        "event = json.load(sys.stdin)\n"
        "seen = event['state']['session'].get('seen', [])\n"
        "print(json.dumps({'additional_context': 'seen=' + ','.join(seen),\n"
        "                  'state': {'session': {'seen': seen + [event['tool_name']],\n"
        "                                        'drop': None}}}))\n"
    )
    engine = Engine([{"event": "pre_tool_use", "handler_type": "command", "name": "cmd",
                      "config": {"command": f"{sys.executable} {script}",
                                 "state": {"namespace": "seen"}}}])
    store = MemoryStateStore()
    use_state_store(engine, store)
    await store.apply([StateChange(ScopeKey("", "seen", "session", "s"), "drop", 1, 60)])
    try:
        for tool, context in (("a", "seen="), ("b", "seen=a"), ("c", "seen=a,b")):
            outcome = await engine.fire("pre_tool_use", {"tool_name": tool, "session_id": "s"})
            assert outcome.allowed and outcome.additional_context == [context]
            # What the hook wrote into state is not part of the trace.
            assert "state_changes" not in json.dumps(outcome.to_dict())
    finally:
        await engine.aclose()
    key = ScopeKey("", "seen", "session", "s")
    assert (await store.load([key]))[key] == {"seen": ["a", "b", "c"]}


async def test_state_in_and_changes_out_for_an_http_hook() -> None:
    with WebhookServer() as server:
        server.script(Reply(200, {"decision": "allow", "state": {"run": {"n": 1}}}),
                      Reply(200, {"decision": "allow"}))
        engine = Engine(settings=None)
        engine.settings.ssrf_allowlist = ("127.0.0.1/32",)
        engine.add({"event": "pre_tool_use", "handler_type": "http", "name": "web",
                    "config": {"url": server.url(), "state": True}})
        try:
            await engine.fire("pre_tool_use", {"tool_name": "x", "turn_id": "t"})
            await engine.fire("pre_tool_use", {"tool_name": "x", "turn_id": "t"})
        finally:
            await engine.aclose()
        assert server.requests[0].json["state"] == {"run": {}}
        assert server.requests[1].json["state"] == {"run": {"n": 1}}


async def test_a_bad_state_answer_fails_the_hook_and_changes_nothing() -> None:
    engine = Engine([callable_hook("too_big")])
    store = MemoryStateStore()
    use_state_store(engine, store)
    try:
        outcome = await engine.fire("pre_tool_use", {"tool_name": "x", "session_id": "s"})
    finally:
        await engine.aclose()
    assert not outcome.allowed  # fail-closed on a blocking event
    assert "16384" in (outcome.trace[0].error or "")
    key = ScopeKey("", "too_big", "session", "s")
    assert (await store.load([key]))[key] == {}


async def test_scope_the_event_lacks_is_an_error_for_json_hooks(tmp_path: Path) -> None:
    script = tmp_path / "hook.sh"
    script.write_text("cat >/dev/null; echo '{\"state\": {\"session\": {\"k\": 1}}}'\n")
    engine = Engine([{"event": "pre_tool_use", "handler_type": "command", "name": "c",
                      "config": {"command": f"sh {script}", "state": True}}])
    try:
        outcome = await engine.fire("pre_tool_use", {"tool_name": "x"})  # no session_id
    finally:
        await engine.aclose()
    assert not outcome.allowed and "no session id" in (outcome.trace[0].error or "")


async def test_state_answer_from_a_hook_without_state_is_noted_not_kept(tmp_path: Path) -> None:
    script = tmp_path / "hook.sh"
    script.write_text("cat >/dev/null; echo '{\"state\": {\"session\": {\"k\": \"v\"}}}'\n")
    engine = Engine([{"event": "pre_tool_use", "handler_type": "command", "name": "c",
                      "config": {"command": f"sh {script}"}}])
    try:
        outcome = await engine.fire("pre_tool_use", {"tool_name": "x", "session_id": "s"})
    finally:
        await engine.aclose()
    assert outcome.allowed
    assert outcome.trace[0].details["state_ignored"] == "the hook has no config.state"
    assert "state_changes" not in outcome.trace[0].details


@pytest.mark.parametrize(("state", "message"), [
    ({"namespace": ""}, "state.namespace must be a non-empty string"),
    ({"ttl_s": 0}, "state.ttl_s must be a number of seconds"),
    ({"scope": "x"}, "state: unknown key 'scope'"),
    ("yes", "state must be true, false or {namespace, ttl_s}"),
])
def test_bad_state_config_is_rejected_naming_the_field(state: Any, message: str) -> None:
    with pytest.raises(DefinitionError) as caught:
        Engine([{"event": "pre_tool_use", "handler_type": "callable", "name": "h",
                 "config": {"callable": f"{FNS}:remember", "state": state}}])
    assert message in str(caught.value) and "config" in str(caught.value)


async def test_state_in_and_changes_out_for_a_process_hook(tmp_path: Path) -> None:
    log = tmp_path / "messages.jsonl"
    answers = {"hook.before_tool": {"action": "continue", "state": {"session": {"k": "v"}}}}
    engine = Engine([process_hook(log=log, answers=answers, config={"state": True})])
    try:
        for _ in range(2):
            outcome = await engine.fire("pre_tool_use", {"tool_name": "x", "session_id": "s"})
            assert outcome.allowed, outcome.to_dict()
    finally:
        await engine.aclose()
    calls = [m["params"] for m in read_log(log) if m.get("method") == "hook.before_tool"]
    assert [call["state"] for call in calls] == [{"session": {}}, {"session": {"k": "v"}}]
