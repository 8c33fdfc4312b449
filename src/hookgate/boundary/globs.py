"""Path globs for allow-lists, in the shape people know from .gitignore.

``*`` and ``?`` stay inside one path segment, ``**`` crosses segments, and a pattern with no
``/`` matches the file name at any depth (``*.lock`` matches ``a/b/c.lock``).
"""

from __future__ import annotations

import re

__all__ = ["compile_glob"]


def compile_glob(pattern: str) -> re.Pattern[str]:
    anchored = "/" in pattern.rstrip("/")
    pattern = pattern.lstrip("/") if anchored else pattern
    if pattern.endswith("/"):
        pattern += "**"
    parts: list[str] = []
    index = 0
    while index < len(pattern):
        char = pattern[index]
        if pattern.startswith("**/", index):
            parts.append("(?:.*/)?")
            index += 3
            continue
        if pattern.startswith("**", index):
            parts.append(".*")
            index += 2
            continue
        if char == "*":
            parts.append("[^/]*")
        elif char == "?":
            parts.append("[^/]")
        else:
            parts.append(re.escape(char))
        index += 1
    body = "".join(parts)
    return re.compile(body + r"\Z" if anchored else r"(?:.*/)?" + body + r"\Z")
