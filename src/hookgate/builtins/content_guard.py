"""The ``content-guard`` builtin: the boundary scanner inside the agent loop.

* ``pre_tool_use``: blocks a tool call that would *export* a finding: a shell command that
  talks to the network or pushes, uploads or publishes (``curl`` and ``wget`` in any form, a
  GET's query string included, ``git push``, ``scp``, ``aws s3 cp``, ...), a tool whose name
  says it reaches out (fetch, browse, navigate, web, http, request, upload, send, post, ...),
  or a file write outside the workspace (the event's ``cwd``). Other calls pass: reading a
  secret into the workspace is not an export.
* ``post_tool_use`` and ``tool_result_persist``: masks findings in the tool's output, object
  keys included (the persisted message is what later turns see; see docs/boundary.md on
  which frameworks honour a rewritten ``post_tool_use`` result).
* ``message_sending``: never rewrites the message; appends a visible note naming what it
  found. Scrubbing outbound chat also scrubs the operator's own direct messages, where a
  real host name or port is often exactly what they need; put scrubbing at the stage
  boundary (``hookgate scrub``) instead.

Everything it scans was written by an agent or a tool, so a ``hookgate:allow`` comment in it
accepts nothing: only the policy's allow-list does. Work per event is bounded: at most
:data:`MAX_SCANNED_BYTES` of text is scanned; an export carrying more is blocked and output
beyond it is withheld, never passed on unscanned.

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
from hookgate.boundary.scrub import mask_bytes
from hookgate.hook_event import HookEvent

__all__ = [
    "MAX_SCANNED_BYTES",
    "annotate_message",
    "guard_tool_input",
    "redact_persisted",
    "redact_tool_output",
]

#: The most text one event may carry for the guard to scan it (keys and strings together).
#: Scanning is linear, and this keeps the worst case (a megabyte of nothing but findings)
#: within the hook's timeout on a busy host.
MAX_SCANNED_BYTES: Final = 1 << 20

# Shell commands that reach the network or send data off the host. A network client sends
# its arguments whatever its flags (a GET's query string, headers, --json, -sd), so any use
# of one counts; so do the language one-liners that make requests.
_EXPORT_COMMAND: Final = re.compile(
    # Program names stand alone: not part of a path component or file name (~/.ssh/config).
    r"(?<![\w.-])(?:curl|wget2?|curlie|xh|xhs|httpie|aria2c|lynx|links|w3m|nc|ncat|netcat|"
    r"socat|telnet|ssh|scp|sftp|rsync|ftp|lftp|tftp|sendmail|mutt|swaks)(?![\w.-])|"
    r"(?<![\w./-])https?\s|"  # HTTPie's `http` and `https` commands, not a URL's scheme
    r"\bgit\s+(?:push|send-email|request-pull)\b|\bgit\s+remote\s+(?:add|set-url)\b|"
    r"\baws\s+s3\s+(?:cp|sync|mv)\b|\baws\s+s3api\s+put|\bgsutil\s+(?:cp|rsync|mv)\b|"
    r"\bgcloud\s+storage\s+(?:cp|rsync|mv)\b|\baz\s+storage\s+blob\s+upload|"
    r"\bgh\s+(?:api|gist|issue|pr|release)\b|\b(?:npm|pnpm|yarn|twine|cargo|gem)\s+publish\b|"
    r"\b(?:docker|podman)\s+push\b|\bmail\s|/dev/(?:tcp|udp)/|"
    r"\brequests\.(?:get|post|put|patch|delete|head|request)\b|\burlopen\b|"
    r"\burllib\.request\b|\bhttp\.client\b|\bhttpx\.|\baiohttp\b|\bfetch\s*\(|\baxios\b|"
    r"\bInvoke-(?:WebRequest|RestMethod)\b|\b(?:iwr|irm)\s",
    re.IGNORECASE,
)
# Tools whose job is to reach out: a URL they fetch or a page they open goes to a server
# with everything in it (query strings included), a message or upload goes to its recipient.
_EXPORT_TOOL: Final = re.compile(
    r"fetch|brows|navigat|web|url|http|request|curl|wget|download|upload|send|post|publish|"
    r"webhook|email|mail|slack|discord|telegram|teams|sms|notify|gist|share|message|comment|"
    r"issue|pull_?request|tweet|api_?call",
    re.IGNORECASE,
)
_SHELL_TOOL: Final = re.compile(r"^(?:bash|exec|shell|sh|run_shell|terminal|command)$", re.I)
_WRITE_TOOL: Final = re.compile(r"^(?:write|edit|multiedit|write_file|edit_file|create_file|"
                                r"str_replace_based_edit_tool|notebookedit)$", re.IGNORECASE)
_PATH_FIELDS: Final = ("file_path", "path", "filename", "notebook_path")
_COMMAND_FIELDS: Final = ("command", "cmd", "script", "code")

_SCANNERS: dict[str, Scanner] = {}


def _scanner() -> Scanner:
    scanner = _SCANNERS.get("default")
    if scanner is None:
        # inline_allow stays off: a marker in an agent's or a tool's text accepts nothing.
        scanner = _SCANNERS["default"] = Scanner(default_policy(), inline_allow=False)
    return scanner


def _strings(value: Any) -> Iterator[str]:
    """Every string in ``value``: object keys as well as values (a key can carry a token)."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for key, item in value.items():
            if isinstance(key, str):
                yield key
            yield from _strings(item)
    elif isinstance(value, list | tuple):
        for item in value:
            yield from _strings(item)


def _size(value: Any) -> int:
    """UTF-8 bytes of the text in ``value``, counted no further than just past the limit."""
    total = 0
    for text in _strings(value):
        total += len(text.encode("utf-8", "surrogatepass"))
        if total > MAX_SCANNED_BYTES:
            break
    return total


def _findings(value: Any, policy: Policy, scanner: Scanner) -> list[Finding]:
    found: list[Finding] = []
    for text in _strings(value):
        found.extend(f for f in scanner.scan_text(text, "<tool>") if f.at_least(policy.fail_on))
    return found


def _summary(findings: list[Finding]) -> str:
    rules = sorted({finding.rule_id for finding in findings})
    excerpts = "; ".join(sorted({finding.excerpt for finding in findings})[:3])
    return f"{len(findings)} finding(s) ({', '.join(rules)}): {excerpts}"


def _write_reason(event: HookEvent, tool_input: dict[str, Any]) -> str | None:
    workspace = event.cwd
    target = next((tool_input[f] for f in _PATH_FIELDS if isinstance(tool_input.get(f), str)),
                  None)
    if isinstance(workspace, str) and workspace and target:
        # Symbolic links are followed as far as they exist here: a link the agent made inside
        # the workspace does not make a write through it local (on a gateway, where the
        # agent's paths do not exist, this is the plain normalised path).
        resolved = os.path.realpath(os.path.join(workspace, target))
        inside = os.path.realpath(workspace)
        if resolved != inside and not resolved.startswith(inside.rstrip("/") + "/"):
            return f"writes outside the workspace ({os.path.dirname(resolved)})"
    return None


def _export_reason(event: HookEvent, tool_input: dict[str, Any]) -> str | None:
    """Why this call sends data off the host, or None. Every sign counts: a tool's name and
    the commands in its input are both looked at, so a fetch tool with a ``command`` field
    is still a fetch tool."""
    tool = str(event.tool_name or "")
    if _WRITE_TOOL.match(tool):
        return _write_reason(event, tool_input)
    for field in _COMMAND_FIELDS:
        command = tool_input.get(field)
        if isinstance(command, str):
            match = _EXPORT_COMMAND.search(command)
            if match:
                return f"runs {match.group(0).strip().split()[0]!r}, which sends data off the host"
    if not _SHELL_TOOL.match(tool) and _EXPORT_TOOL.search(tool):
        return f"calls {tool!r}, which sends data out"
    return None


def guard_tool_input(event: HookEvent) -> dict[str, Any] | None:
    """Block a tool call that would export a finding (or more text than it can scan)."""
    raw = event.tool_input
    tool_input = raw if isinstance(raw, dict) else {"input": raw}
    reason = _export_reason(event, tool_input)
    if reason is None:
        return None
    size = _size(tool_input)
    if size > MAX_SCANNED_BYTES:
        return {"decision": "block",
                "reason": f"content-guard: this call {reason} and its input is more than the "
                          f"{MAX_SCANNED_BYTES} bytes it scans; too large to check, so blocked"}
    scanner = _scanner()
    findings = _findings(tool_input, scanner.policy, scanner)
    if not findings:
        return None
    return {"decision": "block",
            "reason": f"content-guard: this call {reason} and its input has {_summary(findings)}"}


class _Masking:
    """Masks findings in a JSON-like value within a byte budget; text past it is withheld."""

    def __init__(self, scanner: Scanner) -> None:
        self.scanner = scanner
        self.budget = MAX_SCANNED_BYTES
        self.masked = 0
        self.withheld = 0

    def text(self, value: str) -> str:
        data = value.encode("utf-8", "surrogatepass")
        if len(data) > self.budget:  # smaller strings after it may still fit
            self.withheld += len(data)
            return f"[content-guard: {len(data)} bytes withheld, more than it scans per event]"
        self.budget -= len(data)
        masked, count = mask_bytes(self.scanner, data, "<tool>")
        self.masked += count
        return masked.decode("utf-8", "surrogatepass") if count else value

    def value(self, value: Any) -> Any:
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, dict):
            out: dict[Any, Any] = {}
            for key, item in value.items():
                new_key = self.text(key) if isinstance(key, str) else key
                while new_key in out:  # two keys masked alike both stay
                    new_key = f"{new_key}~"
                out[new_key] = self.value(item)
            return out
        if isinstance(value, list | tuple):
            return [self.value(item) for item in value]
        return value

    @property
    def changed(self) -> bool:
        return bool(self.masked or self.withheld)

    def reason(self) -> str:
        parts = [f"masked {self.masked} finding(s)"]
        if self.withheld:
            parts.append(f"withheld {self.withheld} byte(s) past its scan limit")
        return "content-guard " + " and ".join(parts)


def _mask(value: Any) -> dict[str, Any] | None:
    masking = _Masking(_scanner())
    masked = masking.value(value)
    if not masking.changed:
        return None
    return {"updated_input": masked, "reason": masking.reason()}


def redact_tool_output(event: HookEvent) -> dict[str, Any] | None:
    """Mask findings in a tool's output (``post_tool_use``)."""
    return _mask(event.tool_response)


def redact_persisted(event: HookEvent) -> dict[str, Any] | None:
    """Mask findings in the tool result about to be persisted (``tool_result_persist``)."""
    return _mask(event.message)


def annotate_message(event: HookEvent) -> dict[str, Any] | None:
    """Append a visible note to an outbound message with findings; never rewrite its text."""
    content = event.content
    scanner = _scanner()
    if _size(content) > MAX_SCANNED_BYTES:
        note = (f"[content-guard: this message is more than the {MAX_SCANNED_BYTES} bytes it "
                "scans and was not checked]")
    else:
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
