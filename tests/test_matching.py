
import pytest
import re2
from hypothesis import given, settings
from hypothesis import strategies as st

from hookgate.matching import FilterError, cel_activation, compile_if_expr, compile_matcher


def test_empty_and_star_match_everything() -> None:
    assert compile_matcher("") is None
    assert compile_matcher("*") is None


def test_matcher_is_an_unanchored_search() -> None:
    matcher = compile_matcher("exec")
    assert matcher is not None
    assert matcher.matches("my_exec_tool")
    anchored = compile_matcher("^(exec|shell)$")
    assert anchored is not None
    assert anchored.matches("shell") and not anchored.matches("shell2")


def test_catastrophic_pattern_runs_in_linear_time() -> None:
    """Python's re would backtrack for longer than the universe on this input (the test's
    timeout would fail it); RE2 answers in linear time."""
    matcher = compile_matcher("^(a+)+$")
    assert matcher is not None
    assert not matcher.matches("a" * 200_000 + "b")


def test_cel_filter_over_event_fields() -> None:
    condition = compile_if_expr('tool_name == "exec" && size(tool_input.cmd) > 80')
    assert condition is not None
    long = cel_activation("pre_tool_use", {"tool_name": "exec", "tool_input": {"cmd": "x" * 81}})
    short = cel_activation("pre_tool_use", {"tool_name": "exec", "tool_input": {"cmd": "ls"}})
    assert condition.evaluate(long) is True
    assert condition.evaluate(short) is False


def test_cel_missing_key_is_an_evaluation_error() -> None:
    condition = compile_if_expr("size(tool_input.cmd) > 1")
    assert condition is not None
    with pytest.raises(FilterError, match="if_expr failed"):
        condition.evaluate(cel_activation("pre_tool_use", {"tool_input": {}}))


def test_cel_sees_depth_and_other_fields() -> None:
    condition = compile_if_expr('depth >= 2 && prompt.contains("deploy")')
    assert condition is not None
    assert condition.evaluate(cel_activation("user_prompt_submit", {"depth": 2,
                                                                   "prompt": "deploy now"}))


@pytest.mark.parametrize(
    ("pattern", "subjects"),
    [
        ("^(exec|shell)$", ["exec", "shell", "shell2", "", "exe"]),
        ("mcp__.*__create", ["mcp__github__create_issue", "mcp_x", "create"]),
        ("(?i)^write", ["Write_file", "rewrite"]),
        ("é+x", ["caféx", "cafex", "ééx"]),
        ("^$", ["", "a"]),
    ],
)
def test_fast_path_agrees_with_the_public_search(pattern: str, subjects: list[str]) -> None:
    matcher = compile_matcher(pattern)
    assert matcher is not None
    for subject in subjects:
        assert matcher.matches(subject) == (matcher._search(subject) is not None), subject


# -- matchers that only name tools are answered without RE2, with RE2's answers ---------------

_WORD = st.text(alphabet="abcAB_-:/ 0", min_size=1, max_size=5)
_SUBJECT = st.text(alphabet="abcAB_-:/ 0.|^$()x\n", max_size=12)


@settings(max_examples=300, deadline=None)
@given(
    words=st.lists(_WORD, min_size=1, max_size=3),
    shape=st.sampled_from(["^({})$", "^{}$", "{}", "^({})", "({})$", "^(?:{}).*", ".*({})",
                           "^({}).*$", "^.*({})", "({}).*"]),
    subject=_SUBJECT,
    pick=st.integers(min_value=0, max_value=2),
)
def test_literal_matchers_answer_as_re2_does(
    words: list[str], shape: str, subject: str, pick: int
) -> None:
    body = "|".join(words)
    pattern = shape.format(body)
    matcher = compile_matcher(pattern)
    assert matcher is not None
    reference = re2.compile(pattern)
    for candidate in (subject, words[pick % len(words)], f"x{words[0]}x", f"{words[0]}\n"):
        assert matcher.matches(candidate) == (reference.search(candidate) is not None), (
            pattern,
            candidate,
        )


@pytest.mark.parametrize(
    ("pattern", "literal"),
    [
        ("^Bash$", True),
        ("^(Bash|Write)$", True),
        ("Edit|Write", True),
        ("mcp__github__create_issue", True),
        ("mcp__github__.*", True),
        ("^mcp__github__", True),
        ("^(?:Read|Grep).*", True),
        ("^mcp__.*$", False),  # .* before $ says "no newline after": RE2 answers it
        ("^.*Bash", False),
        ("^Bash(Output)?$", False),
        ("(?i)bash", False),
        ("^(a|b)", True),  # prefixes: literal since issue 26 (indexed by prefix lookup)
        ("a|b$", True),
        ("a||b", False),
        ("^a|b$", True),
    ],
)
def test_which_matchers_skip_re2(pattern: str, literal: bool) -> None:
    """Literal names, alternations of them and prefixes are answered without RE2."""
    matcher = compile_matcher(pattern)
    assert matcher is not None
    assert (matcher.literal is not None) is literal
