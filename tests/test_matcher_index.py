"""Matchers indexed (issue 26): the registry's selection by matcher gives RE2's answers, and a
hook whose matcher rejects the event never reaches the chain."""

from __future__ import annotations

import asyncio
from typing import Any

import re2
from hypothesis import given, settings
from hypothesis import strategies as st

from hookgate import Engine
from hookgate.definition import HookDefinition
from hookgate.events import get_event
from hookgate.matcher_index import MAX_CACHED_SUBJECT, MatcherIndex
from hookgate.matching import compile_matcher
from hookgate.registry import HookRegistry, compile_hook

_WORD = st.text(alphabet="abcAB_-:/ 0", min_size=1, max_size=4)
_SUBJECT = st.text(alphabet="abcAB_-:/ 0.|^$()x\n", max_size=10)
#: Patterns RE2 must answer (not literal), mixed into the hook lists.
_OTHER = ["^a(b)?$", "(?i)ab", "a.c", "^$", "^.*b", "a.*$", "a+", "[ab]c"]


@st.composite
def _term(draw: st.DrawFn) -> str:
    word = draw(_WORD)
    caret, dollar = draw(st.booleans()), draw(st.booleans())
    lead, trail = draw(st.booleans()), draw(st.booleans())
    return f"{'^' if caret else ''}{'.*' if lead else ''}{word}{'.*' if trail else ''}" \
        f"{'$' if dollar else ''}"


@st.composite
def _pattern(draw: st.DrawFn) -> str:
    """A literal name, an alternation of decorated names, a group of names, or a pattern
    RE2 must answer."""
    kind = draw(st.sampled_from(["terms", "group", "other"]))
    if kind == "other":
        return draw(st.sampled_from(_OTHER))
    if kind == "terms":
        return "|".join(draw(st.lists(_term(), min_size=1, max_size=3)))
    words = "|".join(draw(st.lists(_WORD, min_size=1, max_size=3)))
    shape = draw(st.sampled_from(["^({})$", "^(?:{})", "({})$", "({})", "^({}).*", ".*({})$",
                                  "^.*({})", "({}).*$"]))
    return shape.format(words)


def _hook(index: int, pattern: str | None) -> HookDefinition:
    return HookDefinition(id=f"h{index}", name=f"h{index}", event="pre_tool_use",
                          handler_type="callable", matcher=pattern, order=index,
                          config={"callable": "builtins:print"})


def _select(source: HookRegistry, tool: str, event: str = "pre_tool_use") -> tuple[Any, ...]:
    return source.select(get_event(event), {"tool_name": tool})


@settings(max_examples=400, deadline=None)
@given(pattern=_pattern(), subject=_SUBJECT)
def test_a_matcher_answers_as_re2_searches(pattern: str, subject: str) -> None:
    """Literal or not, a matcher's answer is RE2's unanchored search (NotebookEdit for
    ``Edit|Write``, a trailing newline for ``^Bash$``)."""
    matcher = compile_matcher(pattern)
    assert matcher is not None
    reference = re2.compile(pattern)
    words = [t.word for t in matcher.literal or ()]
    for candidate in (subject, *words, *(f"x{w}x" for w in words), *(f"{w}\n" for w in words)):
        assert matcher.matches(candidate) == (reference.search(candidate) is not None), (
            pattern, candidate)


@settings(max_examples=300, deadline=None)
@given(patterns=st.lists(st.one_of(st.none(), _pattern()), min_size=1, max_size=8),
       subjects=st.lists(_SUBJECT, min_size=1, max_size=4))
def test_the_index_selects_the_hooks_re2_accepts_in_order(
    patterns: list[str | None], subjects: list[str]
) -> None:
    """Property: the index's selection is the list filtered by RE2, in the list's order."""
    hooks = tuple(compile_hook(_hook(i, p)) for i, p in enumerate(patterns))
    index = MatcherIndex(hooks)
    words = [t.word for h in hooks if h.matcher and h.matcher.literal for t in h.matcher.literal]
    for subject in [*subjects, *words, *(w + "_" for w in words), *("_" + w for w in words)]:
        expected = [h.definition.id for h, p in zip(hooks, patterns, strict=True)
                    if p in (None, "", "*") or re2.compile(p).search(subject) is not None]
        selected = index.select(subject)
        assert [h.definition.id for h in selected] == expected, (patterns, subject)
        assert all(h.matcher is None for h in selected)


def test_a_selected_hook_is_its_matched_twin_and_the_same_selection_is_one_tuple() -> None:
    """What the chain gets has no matcher left to test; subjects that select the same hooks
    share one tuple (the engine keeps an executor per tuple)."""
    registry = HookRegistry([_hook(0, "^(exec|shell)$"), _hook(1, None), _hook(2, "Edit|Write")])
    exec_hooks = _select(registry, "exec", "pre_tool_use")
    assert [h.definition.id for h in exec_hooks] == ["h0", "h1"]
    assert exec_hooks[0].matcher is None and exec_hooks[0].unconditional
    assert exec_hooks[0] is registry.resolve("pre_tool_use", None, None)[0].when_matched
    assert _select(registry, "shell", "pre_tool_use") is exec_hooks
    notebook = _select(registry, "NotebookEdit", "pre_tool_use")
    assert [h.definition.id for h in notebook] == ["h1", "h2"]
    assert _select(registry, "", "stop") == ()


def test_a_change_to_the_registry_is_seen_by_the_next_selection() -> None:
    registry = HookRegistry([_hook(0, "^exec$")])
    assert len(_select(registry, "exec", "pre_tool_use")) == 1
    registry.put(_hook(1, "exec"))
    assert len(_select(registry, "exec", "pre_tool_use")) == 2
    registry.remove("h0")
    assert [h.definition.id for h in _select(registry, "exec", "pre_tool_use")] == ["h1"]


def test_long_subjects_are_selected_but_never_kept() -> None:
    """Tool names come from the agent: a made-up long one must not stay in memory."""
    registry = HookRegistry([_hook(0, "^x")])
    long = "x" * (MAX_CACHED_SUBJECT + 1)
    assert len(_select(registry, long, "pre_tool_use")) == 1
    assert all(key[3] != long for key in registry._selections.selected)


def _noop(event: Any) -> None:
    return None


def test_a_rejected_hook_leaves_no_trace_row_and_a_matched_one_its_usual_row() -> None:
    """The new rule: the trace says what ran; matcher misses are not rows."""
    engine = Engine()
    engine.hook("pre_tool_use", matcher="^(exec|shell)$", name="shell-guard")(_noop)
    engine.hook("pre_tool_use", matcher="Edit|Write", name="edit-guard")(
        lambda e: {"decision": "block", "reason": "no edits"})
    ran = engine.fire_sync("pre_tool_use", {"tool_name": "exec", "tool_input": {}})
    assert ran.decision == "allow"
    assert [(t.name, t.matched, t.skipped) for t in ran.trace] == [("shell-guard", True, None)]
    blocked = asyncio.run(engine.fire("pre_tool_use", tool_name="NotebookEdit", tool_input={}))
    assert blocked.decision == "block" and [t.name for t in blocked.trace] == ["edit-guard"]
    none = engine.fire_sync("pre_tool_use", {"tool_name": "read_file", "tool_input": {}})
    assert none.decision == "allow" and none.trace == []
    engine.close()


def test_with_no_hook_selected_the_loop_guard_still_blocks_a_deep_event() -> None:
    """Skipping the chain when nothing matched must not skip the depth limit."""
    engine = Engine()
    engine.hook("pre_tool_use", matcher="^exec$")(_noop)
    deep = {"tool_name": "read_file", "tool_input": {}, "depth": 9}
    assert engine.fire_sync("pre_tool_use", deep).decision == "block"
    assert asyncio.run(engine.fire("pre_tool_use", deep)).decision == "block"
    engine.close()


def test_a_dry_run_still_shows_why_a_hook_did_not_run() -> None:
    """``engine.test`` and ``simulate`` run the chain over every hook: a tester sees the
    matcher miss."""
    engine = Engine()
    engine.hook("pre_tool_use", matcher="^exec$", name="exec-only")(_noop)
    outcome = asyncio.run(engine.simulate("pre_tool_use", {"tool_name": "ls"}))
    assert [(t.name, t.skipped) for t in outcome.trace] == [
        ("exec-only", "matcher did not match")]
    engine.close()


def test_audit_records_still_say_the_matcher_matched() -> None:
    records: list[Any] = []
    engine = Engine()
    engine.listeners.append(records.extend)
    engine.hook("pre_tool_use", matcher="^exec$", name="m")(
        lambda e: {"decision": "block", "reason": "no"})
    engine.fire_sync("pre_tool_use", {"tool_name": "exec", "tool_input": {}})
    assert [r.metadata.get("matcher_matched") for r in records] == [True]
    engine.close()


def test_a_match_field_that_is_not_a_string_is_tested_as_empty() -> None:
    """As the chain always did: a tool name that is a number or a mapping (library callers)
    is matched as ``""``, never a crash of the cache."""
    engine = Engine()
    engine.hook("pre_tool_use", matcher="^(exec|shell)$", name="named")(_noop)
    engine.hook("pre_tool_use", matcher="^$", name="unnamed")(_noop)
    for tool in ({"name": "exec"}, ["exec"], 7, None):
        outcome = engine.fire_sync("pre_tool_use", {"tool_name": tool, "tool_input": {}})
        assert [t.name for t in outcome.trace] == ["unnamed"], tool
    engine.close()


def test_a_non_blocking_event_runs_only_the_selected_hooks() -> None:
    """Queued or waited for, an observing chain gets the selection too."""
    seen: list[str] = []
    engine = Engine()
    engine.hook("post_tool_use", matcher="^Bash$", name="bash")(
        lambda e: seen.append("bash") or {"additional_context": "bash ran"})
    engine.hook("post_tool_use", matcher="Edit", name="edit")(lambda e: seen.append("edit"))
    waited = engine.fire_sync("post_tool_use", {"tool_name": "Bash", "tool_response": "ok"},
                              wait=True)
    assert [t.name for t in waited.trace] == ["bash"]
    assert waited.additional_context == ["bash ran"] and seen == ["bash"]

    async def queued() -> None:
        await engine.fire("post_tool_use", {"tool_name": "MultiEdit", "tool_response": "x"})
        await engine.aclose()  # drains the queue

    asyncio.run(queued())
    assert seen == ["bash", "edit"]


def test_the_input_limits_hold_when_no_matcher_accepts_the_tool() -> None:
    """Nothing selected is answered at once, but only after the input limits: an oversized
    input on a blocking event still blocks (and leaves its audit row)."""
    records: list[Any] = []
    engine = Engine()
    engine.listeners.append(records.extend)
    engine.hook("pre_tool_use", matcher="^Bash$")(_noop)
    huge = {"tool_name": "Glob", "tool_input": {"pattern": "x" * (9 * 1024 * 1024)}}
    outcome = engine.fire_sync("pre_tool_use", huge)
    assert outcome.decision == "block" and "invalid input" in (outcome.reason or "")
    assert [r.hook_id for r in records] == ["hookgate:input-limits"]
    engine.close()
