"""``hookgate.cli.terminal``: what the CLI's tables print instead of control characters."""

from __future__ import annotations

import pytest

from hookgate.cli.terminal import printable


@pytest.mark.parametrize(
    ("raw", "shown"),
    [
        ("plain text, ünïcode and emoji 🚀", "plain text, ünïcode and emoji 🚀"),
        ("a\x1b[2Kb", "a\\x1b[2Kb"),
        ("line\rover", "line\\rover"),
        ("two\nlines\ttab", "two\\nlines\\ttab"),
        ("bell\x07 del\x7f c1\x9b", "bell\\x07 del\\x7f c1\\x9b"),
        ("\u202eevil\u2066", "\\u202eevil\\u2066"),
    ],
)
def test_control_characters_are_shown_as_escapes(raw: str, shown: str) -> None:
    assert printable(raw) == shown


def test_a_megabyte_of_escapes_is_linear() -> None:
    text = "\x1b[0m" * 250_000
    assert printable(text).count("\\x1b") == 250_000
