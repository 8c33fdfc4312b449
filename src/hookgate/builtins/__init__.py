"""Builtin hooks: shipped with hookgate, seeded into the gateway's store at start.

A builtin is a global hook with ``source: builtin``, one definition per event, with a stable
id (UUIDv5 of ``"<name>/<event>"``) and a ``version`` that is its release: a newer release
updates the stored row but keeps the operator's ``enabled`` toggle. Builtins are read-only
except for ``enabled``; they ship disabled unless said otherwise.
"""

from __future__ import annotations

import uuid
from typing import Final

from hookgate.definition import GLOBAL_TENANT, HookDefinition

__all__ = ["BUILTIN_NAMESPACE", "builtin_definitions", "builtin_description"]

BUILTIN_NAMESPACE: Final = uuid.UUID("6f1c2a4e-4b7d-5c3a-9e8f-2d1b0a9c8e7f")


#: What each builtin does, for people reading the hooks list (by name and event).
_DESCRIPTIONS: Final = {
    ("pii-redactor", "pre_tool_use"):
        "Masks e-mail addresses and phone numbers in a tool call's free-text fields "
        "(command, cmd, query, content) before the tool runs.",
    ("pii-redactor", "user_prompt_submit"):
        "Masks e-mail addresses and phone numbers in the user's prompt before the model "
        "sees it.",
    ("content-guard", "pre_tool_use"):
        "Blocks a tool call that would export a secret or internal detail it finds: network "
        "commands (curl, git push, scp, ...), tools that reach out, writes outside the "
        "workspace.",
    ("content-guard", "post_tool_use"):
        "Masks secrets and internal details found in a tool's output before the agent reads "
        "it.",
    ("content-guard", "tool_result_persist"):
        "Masks secrets and internal details in the tool result kept in the conversation, "
        "which later turns see.",
    ("content-guard", "message_sending"):
        "Never rewrites an outgoing message; appends a visible note naming what it found.",
}


def builtin_description(name: str, event: str) -> str | None:
    """The description of the builtin hook ``name`` on ``event`` (None for other hooks);
    ``name`` may carry the event suffix the non-``pre_tool_use`` builtins have."""
    return _DESCRIPTIONS.get((name.removesuffix(f" ({event})"), event))


def _builtin(name: str, event: str, **fields: object) -> HookDefinition:
    return HookDefinition(
        id=str(uuid.uuid5(BUILTIN_NAMESPACE, f"{name}/{event}")),
        name=name if event == "pre_tool_use" else f"{name} ({event})",
        event=event,
        scope="global",
        tenant_id=GLOBAL_TENANT,
        source="builtin",
        **fields,  # type: ignore[arg-type]
    )


def builtin_definitions() -> list[HookDefinition]:
    """Every builtin hook, one definition per event it handles."""
    pii = {
        "handler_type": "callable",
        "priority": 900,
        "timeout_ms": 2000,
        "on_timeout": "allow",
        "enabled": False,
        "version": 1,
    }
    # The boundary scanner in the loop (hookgate.builtins.content_guard); it runs before the
    # PII masker so it sees the input as the agent wrote it.
    guard = "hookgate.builtins.content_guard"
    content = {**pii, "priority": 950, "on_timeout": "block", "timeout_ms": 3000}
    return [
        _builtin("pii-redactor", "pre_tool_use",
                 config={"callable": "hookgate.builtins.pii_redactor:redact_tool_input"}, **pii),
        _builtin("pii-redactor", "user_prompt_submit",
                 config={"callable": "hookgate.builtins.pii_redactor:redact_prompt"}, **pii),
        *(_builtin("content-guard", event, config={"callable": f"{guard}:{function}"}, **content)
          for event, function in (("pre_tool_use", "guard_tool_input"),
                                  ("post_tool_use", "redact_tool_output"),
                                  ("tool_result_persist", "redact_persisted"),
                                  ("message_sending", "annotate_message"))),
    ]
