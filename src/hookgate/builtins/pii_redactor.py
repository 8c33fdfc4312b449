"""The ``pii-redactor`` builtin: masks e-mail addresses and phone numbers before they reach
a tool or the model.

On ``user_prompt_submit`` it rewrites the prompt; on ``pre_tool_use`` it rewrites the
``command``, ``cmd``, ``query`` and ``content`` fields of the tool input (the fields that carry
free text into shells, searches and files). It abstains when there is nothing to mask.
"""

from __future__ import annotations

import re
from typing import Any, Final

from hookgate.hook_event import HookEvent

__all__ = ["mask", "redact_prompt", "redact_tool_input"]

_EMAIL: Final = re.compile(r"\b[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}\b")
# International or national numbers of 9+ digits with the usual separators; short numbers
# (ports, counts, years) stay as they are.
_PHONE: Final = re.compile(r"(?<![\w.])\+?\d(?:[\s().-]?\d){8,14}(?![\w.])")
_TEXT_FIELDS: Final = ("command", "cmd", "query", "content")


def mask(text: str) -> str:
    return _PHONE.sub("[PHONE]", _EMAIL.sub("[EMAIL]", text))


def redact_prompt(event: HookEvent) -> dict[str, Any] | None:
    prompt = event.prompt
    if not isinstance(prompt, str):
        return None
    masked = mask(prompt)
    return None if masked == prompt else {"updated_input": masked, "reason": "PII masked"}


def redact_tool_input(event: HookEvent) -> dict[str, Any] | None:
    tool_input = event.tool_input
    if not isinstance(tool_input, dict):
        return None
    changed = dict(tool_input)
    for key in _TEXT_FIELDS:
        value = changed.get(key)
        if isinstance(value, str):
            changed[key] = mask(value)
    if changed == tool_input:
        return None
    return {"updated_input": changed, "reason": "PII masked"}
