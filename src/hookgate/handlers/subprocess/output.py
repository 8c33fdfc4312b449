"""Reading a hook program's answer: the JSON object on its stdout, and the message for a
failed run. Shared by the ``command`` handler and the Claude Code contract, which differ only
in what the object means."""

from __future__ import annotations

import json
from typing import Any

from hookgate.handlers.subprocess.runner import shorten
from hookgate.outcome import MalformedAnswer

__all__ = ["failure_message", "json_object"]


def json_object(stdout: str, details: dict[str, Any]) -> dict[str, Any] | None:
    """The JSON object stdout holds, ``None`` for plain text (or JSON that is not an object).

    Text that starts like an object (``{``) but does not parse is a malformed answer: a
    broken or truncated ``{"decision": "block"`` must not read as plain text and allow.
    """
    text = stdout.strip()
    if not text.startswith("{"):
        return None
    try:
        document = json.loads(text)
    except json.JSONDecodeError as exc:
        raise MalformedAnswer(
            f"stdout is not valid JSON: {exc.msg} at position {exc.pos}"
        ) from None
    if not isinstance(document, dict):  # pragma: no cover - "{…" always decodes to a dict
        return None
    return document


def failure_message(code: int, stderr: str) -> str:
    """What a non-zero exit (or a signal) says, with the first line of stderr."""
    first = next((line.strip() for line in stderr.splitlines() if line.strip()), "")
    if code < 0:
        text = f"command was killed by signal {-code}"
    else:
        text = f"command exited with status {code}"
    return f"{text}: {shorten(first, 300)}" if first else text
