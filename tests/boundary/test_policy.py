"""Policy parsing and allow-list globs."""

from __future__ import annotations

import pytest

from hookgate.boundary import PolicyError, Scanner, parse_policy
from hookgate.boundary.globs import compile_glob


@pytest.mark.parametrize(("glob", "path", "matches"), [
    ("*.lock", "poetry.lock", True),
    ("*.lock", "deep/dir/yarn.lock", True),          # no slash: the name at any depth
    ("*.lock", "lock.txt", False),
    ("tests/**", "tests/a/b.py", True),
    ("tests/**", "src/tests/b.py", False),            # a slash anchors at the root
    ("docs/*.md", "docs/a.md", True),
    ("docs/*.md", "docs/sub/a.md", False),            # * stays in one segment
    ("**/fixtures/*", "a/b/fixtures/x.json", True),
    ("build/", "build/out/app.js", True),             # a directory: everything under it
    ("/README.md", "README.md", True),
])
def test_globs(glob: str, path: str, matches: bool) -> None:
    assert (compile_glob(glob).match(path) is not None) is matches


def test_scoped_path_allow_keeps_other_rules() -> None:
    policy = parse_policy({
        "rules": [{"id": "ip", "detector": "private-ipv4"}, {"id": "mail", "detector": "email"}],
        "allow": ["vendor/**", {"path": "docs/**", "rules": ["mail"]}],
    })
    scanner = Scanner(policy)
    text = "ops@acme.io at 10.1.1.1"
    assert [f.rule_id for f in scanner.scan_text(text, "docs/x.md")] == ["ip"]
    assert scanner.scan_text(text, "vendor/lib.py") == []
    assert policy.path_fully_allowed("vendor/lib.py")
    assert not policy.path_fully_allowed("docs/x.md")


def test_every_problem_is_reported_at_once() -> None:
    with pytest.raises(PolicyError) as caught:
        parse_policy({"rules": [{"id": "a", "detector": "private-ipv4",
                                 "options": {"classes": ["nope"]}},
                                {"id": "a", "pattern": "x(y)", "group": 2},
                                {"detector": "email"}],
                      "allow": [{"reason": "no target"}], "extra": 1})
    problems = caught.value.problems
    assert "rules[0] (a).options: unknown address class(es) ['nope']; known: rfc1918, cgnat, "\
           "link-local, loopback" in problems
    assert "rules[1] (a).group: the pattern has 1 group(s)" in problems
    assert "rules[2].id: required, a non-empty string" in problems
    assert "allow[0]: needs 'path' or 'fingerprint'" in problems
    assert "extra: unknown field" in problems


def test_pattern_group_selects_the_value_and_replace_is_kept() -> None:
    policy = parse_policy({"rules": [{"id": "pin", "pattern": r"pin=(\d{4})", "group": 1,
                                      "severity": "high", "replace": "0000"}]})
    (finding,) = Scanner(policy).scan_text("door pin=4821 ok")
    assert (finding.value, finding.column, finding.severity) == (b"4821", 10, "high")
    assert policy.by_id["pin"].replace == "0000"
