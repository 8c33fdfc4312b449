"""The ``content-guard`` builtin: the boundary scanner inside the agent loop.

* ``pre_tool_use``: blocks a tool call that would *export* a finding: a shell command that
  pushes, uploads or posts (``git push``, ``curl -d``, ``scp``, ``aws s3 cp``, ...), a tool
  whose name says it sends data out (web requests, uploads, messages), or a file write
  outside the workspace (the event's ``cwd``). Other calls pass: reading a secret into the
  workspace is not an export.
* ``post_tool_use`` and ``tool_result_persist``: masks findings in the tool's output (the
  persisted message is what later turns see; see docs/boundary.md on which frameworks
  honour a rewritten ``post_tool_use`` result).
* ``message_sending``: never rewrites the message; appends a visible note naming what it
  found. Scrubbing outbound chat also scrubs the operator's own direct messages, where a
  real host name or port is often exactly what they need; put scrubbing at the stage
  boundary (``hookgate scrub``) instead.

It uses hookgate's shipped public-repo policy; findings at or above the policy's
``fail_on`` severity count. Nothing it reports carries a matched value.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from typing import Any, Final

from hookgate.boundary.policy import Policy, default_policy
from hookgate.boundary.scanner import Finding, Scanner
from hookgate.boundary.scrub import scrub_bytes
from hookgate.hook_event import HookEvent

__all__ = ["annotate_message", "guard_tool_input", "redact_persisted", "redact_tool_output"]

# Shell commands that send data off the host.
_EXPORT_COMMAND: Final = re.compile(
    r"\bgit\s+(?:push|send-email)\b|\bcurl\b[^|;&]*\s(?:-d|--data\S*|-F|--form|-T|"
    r"--upload-file|-X\s*(?:POST|PUT|PATCH))\b|\bwget\b[^|;&]*--post-(?:data|file)|"
    r"\b(?:scp|sftp|rsync|nc|ncat|netcat|ftp)\b|\baws\s+s3\s+(?:cp|sync|mv)\b|"
    r"\bgsutil\s+(?:cp|rsync|mv)\b|\bgh\s+(?:gist|issue|pr|release)\s+create\b|"
    r"\b(?:npm|twine|cargo|gem)\s+publish\b|\bdocker\s+push\b|\bsendmail\b|\bmail\s",
    re.IGNORECASE,
)
# Tools whose job is to send something out.
_EXPORT_TOOL: Final = re.compile(
    r"web_?fetch|http|request|upload|send|post|publish|webhook|email|mail|slack|discord|"
    r"telegram|gist|share|message",
    re.IGNORECASE,
)
_SHELL_TOOL: Final = re.compile(r"^(?:bash|exec|shell|sh|run_shell|terminal|command)$", re.I)
_WRITE_TOOL: Final = re.compile(r"^(?:write|edit|multiedit|write_file|edit_file|create_file|"
                                r"str_replace_based_edit_tool|notebookedit)$", re.IGNORECASE)
_PATH_FIELDS: Final = ("file_path", "path", "filename", "notebook_path")
_COMMAND_FIELDS: Final = ("command", "cmd", "script")

_SCANNERS: dict[str, Scanner] = {}


def _scanner() -> Scanner:
    scanner = _SCANNERS.get("default")
    if scanner is None:
        scanner = _SCANNERS["default"] = Scanner(default_policy())
    return scanner


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list | tuple):
        for item in value:
            yield from _strings(item)


def _findings(value: Any, policy: Policy, scanner: Scanner) -> list[Finding]:
    found: list[Finding] = []
    for text in _strings(value):
        found.extend(f for f in scanner.scan_text(text, "<tool>") if f.at_least(policy.fail_on))
    return found


def _summary(findings: list[Finding]) -> str:
    rules = sorted({finding.rule_id for finding in findings})
    excerpts = "; ".join(sorted({finding.excerpt for finding in findings})[:3])
    return f"{len(findings)} finding(s) ({', '.join(rules)}): {excerpts}"


def _export_reason(event: HookEvent, tool_input: dict[str, Any]) -> str | None:
    tool = str(event.tool_name or "")
    if _WRITE_TOOL.match(tool):
        workspace = event.cwd
        target = next((tool_input[f] for f in _PATH_FIELDS if isinstance(tool_input.get(f), str)),
                      None)
        if isinstance(workspace, str) and workspace and target:
            resolved = os.path.normpath(os.path.join(workspace, target))
            inside = os.path.normpath(workspace)
            if resolved != inside and not resolved.startswith(inside.rstrip("/") + "/"):
                return f"writes outside the workspace ({os.path.dirname(resolved)})"
        return None
    commands = [tool_input[f] for f in _COMMAND_FIELDS if isinstance(tool_input.get(f), str)]
    if commands or _SHELL_TOOL.match(tool):
        for command in commands:
            match = _EXPORT_COMMAND.search(command)
            if match:
                return f"runs {match.group(0).strip().split()[0]!r}, which sends data off the host"
        return None
    if _EXPORT_TOOL.search(tool):
        return f"calls {tool!r}, which sends data out"
    return None


def guard_tool_input(event: HookEvent) -> dict[str, Any] | None:
    """Block a tool call that would export a finding."""
    tool_input = event.tool_input
    if not isinstance(tool_input, dict):
        return None
    reason = _export_reason(event, tool_input)
    if reason is None:
        return None
    scanner = _scanner()
    findings = _findings(tool_input, scanner.policy, scanner)
    if not findings:
        return None
    return {"decision": "block",
            "reason": f"content-guard: this call {reason} and its input has {_summary(findings)}"}


def _masked(value: Any, scanner: Scanner) -> tuple[Any, int]:
    """``value`` with findings masked in every string, and how many were masked."""
    if isinstance(value, str):
        data = value.encode("utf-8", "surrogatepass")
        scrubbed, applied = scrub_bytes(scanner, data, "<tool>")
        return (scrubbed.decode("utf-8", "surrogatepass") if applied else value), len(applied)
    if isinstance(value, dict):
        total, out = 0, {}
        for key, item in value.items():
            out[key], count = _masked(item, scanner)
            total += count
        return (out if total else value), total
    if isinstance(value, list):
        pairs = [_masked(item, scanner) for item in value]
        total = sum(count for _, count in pairs)
        return ([item for item, _ in pairs] if total else value), total
    return value, 0


def redact_tool_output(event: HookEvent) -> dict[str, Any] | None:
    """Mask findings in a tool's output (``post_tool_use``)."""
    masked, count = _masked(event.tool_response, _scanner())
    if not count:
        return None
    return {"updated_input": masked, "reason": f"content-guard masked {count} finding(s)"}


def redact_persisted(event: HookEvent) -> dict[str, Any] | None:
    """Mask findings in the tool result about to be persisted (``tool_result_persist``)."""
    masked, count = _masked(event.message, _scanner())
    if not count:
        return None
    return {"updated_input": masked, "reason": f"content-guard masked {count} finding(s)"}


def annotate_message(event: HookEvent) -> dict[str, Any] | None:
    """Append a visible note to an outbound message with findings; never rewrite its text."""
    content = event.content
    scanner = _scanner()
    findings = _findings(content, scanner.policy, scanner)
    if not findings:
        return None
    rules = ", ".join(sorted({finding.rule_id for finding in findings}))
    note = (f"[content-guard: this message contains {len(findings)} possible secret(s) or "
            f"internal address(es): {rules}]")
    if isinstance(content, str):
        return {"updated_input": f"{content}\n\n{note}", "reason": note}
    if isinstance(content, list):  # content blocks: add one text block
        return {"updated_input": [*content, {"type": "text", "text": note}], "reason": note}
    return {"decision": "allow", "reason": note}
