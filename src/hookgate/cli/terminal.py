"""Text from the gateway or the store, made safe to print on a terminal.

Agent ids, reasons, comments, key names, tenant ids and hook names reach the CLI's tables
from whoever wrote them (an agent, a tool's output, a tenant). A terminal obeys control
characters in them: an ANSI escape can recolour, move the cursor or clear lines, a carriage
return can overwrite the line it is on, and Unicode direction overrides can reorder what is
shown. :func:`printable` shows every such character as an escape (``\\x1b``, ``\\r``,
``\\u202e``) instead; every table line the CLI prints goes through :func:`echo_line`.
"""

from __future__ import annotations

import re
from typing import Final

import click

__all__ = ["echo_line", "printable"]

#: C0 controls, DEL, C1 controls, and the Unicode marks that change text direction.
_UNSAFE: Final = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")
_NAMED: Final = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escape(match: re.Match[str]) -> str:
    char = match.group()
    named = _NAMED.get(char)
    if named is not None:
        return named
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def printable(text: str) -> str:
    """``text`` with every control and direction character written as an escape."""
    return _UNSAFE.sub(_escape, text)


def echo_line(line: str) -> None:
    """Print one line of a table or listing, its control characters escaped."""
    click.echo(printable(line))
