"""PicoClaw config files loaded as hookgate hooks: shape detection, defaults and caps,
failure policy, intercept families, builtins, and PicoClaw's ordering."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from tests.handlers.process_support import SCRIPT, read_log

from hookgate import Engine
from hookgate.cli import main
from hookgate.config import ConfigError, detect_format, load_hooks, parse_hooks
from hookgate.hook_event import HookEvent
from hookgate.integrations.picoclaw.config import register_builtin_hook, unregister_builtin_hook


def process(**fields: Any) -> dict[str, Any]:
    return {
        "enabled": True,
        "command": [sys.executable, SCRIPT],
        "intercept": ["before_tool"],
        **fields,
    }


def picoclaw(**hooks: Any) -> dict[str, Any]:
    return {"agents": {"defaults": {"model": "x"}}, "hooks": {"enabled": True, **hooks}}


def by_name(document: Mapping[str, Any]) -> dict[str, Any]:
    return {d.name: d for d in parse_hooks(document)}


@pytest.fixture
def recorder() -> Iterator[list[str]]:
    """A builtin named ``recorder`` whose before_tool/approve_tool record their calls."""
    calls: list[str] = []

    class Recorder:
        def __init__(self, config: Mapping[str, Any]) -> None:
            self.tag = config.get("tag", "builtin")

        def before_tool(self, event: HookEvent) -> None:
            calls.append(f"{self.tag}:before_tool")

        def approve_tool(self, event: HookEvent) -> dict[str, Any]:
            calls.append(f"{self.tag}:approve_tool")
            return {"decision": "allow"}

    register_builtin_hook("recorder", Recorder)
    yield calls
    unregister_builtin_hook("recorder")


def test_detected_by_shape() -> None:
    assert detect_format(picoclaw(processes={})).name == "picoclaw"
    assert detect_format({"hooks": {"processes": {}}}).name == "picoclaw"
    assert detect_format({"hooks": {"enabled": False}}).name == "picoclaw"
    assert detect_format({"hooks": []}).name == "hookgate"
    assert detect_format({"hooks": {"PreToolUse": []}}).name == "claude_code"


def test_a_process_becomes_one_hook_per_stage_with_picoclaw_policies() -> None:
    hooks = by_name(
        picoclaw(
            processes={
                "gate": process(
                    intercept=["before_tool", "approve_tool"], observe=["tool_exec_start"]
                )
            }
        )
    )
    assert set(hooks) == {
        "gate:before_tool",
        "gate:after_tool",
        "gate:approve_tool",
        "gate:observe",
    }
    before, after = hooks["gate:before_tool"], hooks["gate:after_tool"]
    approve, observe = hooks["gate:approve_tool"], hooks["gate:observe"]
    assert (before.event, after.event, approve.event, observe.event) == (
        "pre_tool_use",
        "post_tool_use",
        "approve_tool",
        "runtime_event",
    )
    # interceptors fail open, approvals fail closed
    assert (before.on_error, before.on_timeout) == ("allow", "allow")
    assert (approve.on_error, approve.on_timeout) == ("block", "block")
    # PicoClaw defaults: interceptor 5 s, observer 500 ms, approval 60 s (kept, not cut)
    assert before.timeout_ms == 5000
    assert observe.timeout_ms == 500
    assert approve.timeout_ms == 60000
    # all stages share one process
    assert {h.config["instance"] for h in hooks.values()} == {"picoclaw:gate"}
    assert before.config["name"] == "gate"


def test_llm_family_and_custom_defaults() -> None:
    hooks = by_name(
        picoclaw(
            defaults={
                "interceptor_timeout_ms": 2500,
                "approval_timeout_ms": 3000,
                "observer_timeout_ms": 0,
            },
            processes={"llm": process(intercept=["after_llm"], observe=["*"])},
        )
    )
    assert {h.event for h in hooks.values()} == {"before_llm", "after_llm", "runtime_event"}
    assert hooks["llm:before_llm"].timeout_ms == 2500
    assert hooks["llm:observe"].timeout_ms == 500  # <= 0 keeps the default


def test_disabled_entries_and_disabled_hooks_load_nothing() -> None:
    document = picoclaw(
        processes={
            "on": process(),
            "off": process(enabled=False),
            "unset": {"command": ["x"], "intercept": ["before_tool"]},
        }
    )
    assert set(by_name(document)) == {"on:before_tool", "on:after_tool"}
    assert parse_hooks({"hooks": {"enabled": False, "processes": {"on": process()}}}) == []


def test_ids_are_stable_across_loads() -> None:
    document = picoclaw(processes={"gate": process()})
    first = [d.id for d in parse_hooks(document)]
    assert first == [d.id for d in parse_hooks(document)]
    assert len(set(first)) == len(first)


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ({"intercept": ["not_supported"]}, "unknown stage 'not_supported'"),
        ({"intercept": [], "observe": []}, "no hook modes enabled"),
        ({"observe": ["tool_started"]}, "unknown runtime event kind"),
        ({"transport": "grpc"}, "only 'stdio' is supported"),
        ({"command": []}, "command: must be a non-empty list"),
        ({"command": "python3 gate.py"}, "command: must be a non-empty list"),
        ({"timeout_ms": 1000}, "PicoClaw timeouts are global"),
        ({"priority": "high"}, "priority: must be an integer"),
    ],
)
def test_bad_process_entries_name_the_field(entry: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_hooks(picoclaw(processes={"gate": process(**entry)}))
    assert any(
        p.startswith("hooks.processes.gate") and message in p for p in caught.value.problems
    ), caught.value.problems


def test_unknown_builtin_is_an_error() -> None:
    with pytest.raises(ConfigError, match="unknown builtin hook 'example_logger'"):
        parse_hooks(picoclaw(builtins={"example_logger": {"enabled": True}}))


def test_unknown_keys_in_hooks_and_defaults() -> None:
    with pytest.raises(ConfigError) as caught:
        parse_hooks(
            {"hooks": {"enabled": True, "proceses": {}, "defaults": {"observer_timeout": 5}}}
        )
    assert any("hooks.proceses" in p for p in caught.value.problems)
    assert any("hooks.defaults.observer_timeout" in p for p in caught.value.problems)


def test_builtins_become_callable_hooks(recorder: list[str]) -> None:
    hooks = by_name(picoclaw(builtins={"recorder": {"enabled": True, "config": {"tag": "r"}}}))
    assert set(hooks) == {"recorder:before_tool", "recorder:approve_tool"}
    assert hooks["recorder:before_tool"].handler_type == "callable"
    assert hooks["recorder:approve_tool"].on_error == "block"


def test_order_translation_matches_picoclaw(recorder: list[str]) -> None:
    document = picoclaw(
        builtins={"recorder": {"enabled": True, "priority": 100}},
        processes={
            "b": process(priority=-10),
            "a": process(priority=-10),
            "c": process(priority=-50),
        },
    )
    ordered = sorted(
        (d for d in parse_hooks(document) if d.event == "pre_tool_use"),
        key=lambda d: (-d.priority, d.order, d.id),
    )
    # builtins first whatever their priority; then lower priority first; then name
    assert [d.name for d in ordered] == [
        "recorder:before_tool",
        "c:before_tool",
        "a:before_tool",
        "b:before_tool",
    ]


async def test_chain_runs_in_picoclaw_order(tmp_path: Path, recorder: list[str]) -> None:
    log = tmp_path / "calls.jsonl"

    def tagged(tag: str, priority: int) -> dict[str, Any]:
        return process(priority=priority, env={"HOOK_LOG": str(log), "HOOK_TAG": tag})

    config = tmp_path / "config.json"
    config.write_text(
        json.dumps(
            picoclaw(
                builtins={"recorder": {"enabled": True, "priority": 100}},
                processes={
                    "zeta": tagged("zeta", 1),
                    "alpha": tagged("alpha", 1),
                    "first": tagged("first", -5),
                },
            )
        )
    )
    async with Engine() as engine:
        engine.load(config)
        outcome = await engine.fire("before_tool", tool_name="exec", tool_input={})
    assert outcome.decision == "allow"
    assert recorder == ["builtin:before_tool"]
    tools = [m["tag"] for m in read_log(log) if m["method"] == "hook.before_tool"]
    assert tools == ["first", "alpha", "zeta"]
    assert [e.name for e in outcome.trace] == [
        "recorder:before_tool",
        "first:before_tool",
        "alpha:before_tool",
        "zeta:before_tool",
    ]


async def test_interceptor_errors_fail_open_but_malformed_answers_block(tmp_path: Path) -> None:
    crash = process(env={"HOOK_ANSWERS": json.dumps({"hook.before_tool": {"__error__": "boom"}})})
    typo = process(env={"HOOK_ANSWERS": json.dumps({"hook.before_tool": {"action": "block"}})})
    async with Engine() as engine:
        engine.registry.put(parse_hooks(picoclaw(processes={"crash": crash}))[0])
        failing_open = await engine.fire("before_tool", tool_name="exec", tool_input={})
    assert failing_open.decision == "allow"
    assert failing_open.trace[0].decision == "error"
    async with Engine() as engine:
        engine.registry.put(parse_hooks(picoclaw(processes={"typo": typo}))[0])
        misspelled = await engine.fire("before_tool", tool_name="exec", tool_input={})
    assert misspelled.decision == "block"
    assert "unknown action 'block'" in (misspelled.reason or "")


async def test_approval_errors_fail_closed() -> None:
    answers = {"hook.approve_tool": {"__error__": "approver down"}}
    document = picoclaw(
        processes={
            "gate": process(intercept=["approve_tool"], env={"HOOK_ANSWERS": json.dumps(answers)})
        }
    )
    async with Engine(parse_hooks(document)) as engine:
        outcome = await engine.fire("approve_tool", tool_name="exec", tool_input={})
    assert outcome.decision == "block"
    assert "approver down" in (outcome.reason or "")


def test_relative_dir_is_resolved_against_the_config_file(tmp_path: Path) -> None:
    (tmp_path / "hooks").mkdir()
    config = tmp_path / "config.json"
    config.write_text(json.dumps(picoclaw(processes={"gate": process(dir="hooks")})))
    definition = load_hooks(config)[0]
    assert definition.config["dir"] == str(tmp_path / "hooks")


def test_check_and_fire_accept_a_picoclaw_file(tmp_path: Path) -> None:
    answers = {"hook.before_tool": {"action": "deny_tool", "reason": "no exec"}}
    config = tmp_path / "config.json"
    config.write_text(
        json.dumps(
            picoclaw(
                processes={
                    "gate": process(
                        intercept=["before_tool", "approve_tool"],
                        env={"HOOK_ANSWERS": json.dumps(answers)},
                    )
                }
            )
        )
    )
    runner = CliRunner()
    checked = runner.invoke(main, ["check", str(config)])
    assert checked.exit_code == 0, checked.output
    assert "3 hook(s) OK" in checked.output
    fired = runner.invoke(
        main,
        [
            "fire",
            "before_tool",
            "--config",
            str(config),
            "--compact",
            "--input",
            '{"tool_name": "exec", "tool_input": {}}',
        ],
    )
    assert fired.exit_code == 2, fired.output
    assert json.loads(fired.output)["reason"] == "no exec"
    approved = runner.invoke(
        main,
        [
            "fire",
            "approve_tool",
            "--config",
            str(config),
            "--input",
            '{"tool_name": "exec", "tool_input": {}}',
        ],
    )
    assert approved.exit_code == 0, approved.output


def test_check_reports_picoclaw_problems(tmp_path: Path) -> None:
    config = tmp_path / "config.json"
    config.write_text(json.dumps(picoclaw(processes={"gate": process(intercept=["x"])})))
    result = CliRunner().invoke(main, ["check", str(config)])
    assert result.exit_code == 1
    assert "hooks.processes.gate.intercept: unknown stage 'x'" in result.output


async def test_an_approval_hook_that_defers_hands_the_call_to_a_person() -> None:
    from hookgate.approvals import ApprovalRequest, CallbackApprover

    answers = {"hook.approve_tool": {"approved": False, "defer": True, "reason": "ask ops"}}
    document = picoclaw(
        processes={
            "gate": process(intercept=["approve_tool"], env={"HOOK_ANSWERS": json.dumps(answers)})
        }
    )
    asked: list[str | None] = []

    def person(request: ApprovalRequest) -> bool:
        asked.append(request.reason)
        return True

    async with Engine(parse_hooks(document), approver=CallbackApprover(person)) as engine:
        outcome = await engine.fire("approve_tool", tool_name="exec", tool_input={"cmd": "ls"})
    assert outcome.decision == "allow" and asked == ["ask ops"]
    async with Engine(parse_hooks(document)) as engine:  # nobody to ask: denied
        outcome = await engine.fire("approve_tool", tool_name="exec", tool_input={"cmd": "ls"})
    assert outcome.decision == "block" and "no approver" in (outcome.reason or "")
