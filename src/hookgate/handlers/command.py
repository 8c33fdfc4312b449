"""The ``command`` handler: a shell command gets the event on stdin and answers by exit code.

Config (GoClaw's contract)::

    {"command": "bash /path/to/script.sh", "allowed_env_vars": ["MY_VAR"], "cwd": "/workspace",
     "format": "goclaw"}            # or "claude_code"

* The command runs through ``/bin/sh -c`` in its own process group, in ``cwd`` when set.
* Environment: only ``PATH``, ``HOME`` and ``LANG`` (see
  :mod:`hookgate.handlers.subprocess.runner`), the names listed in ``allowed_env_vars``, and
  ``HOOKGATE_EVENT`` / ``HOOKGATE_HOOK_ID``. An empty list passes none of hookgate's own
  secrets.
* Output is capped: stdout at 1 MiB (more is an error and the process group is killed at
  once), stderr at 64 KiB (the rest is discarded). The trace keeps 4 KiB of each.
* On a timeout or a cancel, and when the command exits, the whole process group is killed,
  so nothing it started is left running.

``format: goclaw`` (default): stdin is ``{"hook_event": <event>, …event fields…}``. Exit 0
allows; stdout that is a JSON object may carry ``decision``, ``reason``,
``updated_input``/``updatedInput``, ``additional_context``/``additionalContext``, ``result``,
``abort`` and ``continue`` (``false`` blocks); other stdout is kept in the trace. Exit 2
blocks with stderr as the reason. Any other exit is an error (fail-closed on blocking events).

``format: claude_code``: stdin, exit codes and JSON output follow Claude Code's hook contract
(see :mod:`hookgate.integrations.claude_code.contract`), so its hook scripts run unchanged.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, ClassVar, Final, Protocol

from hookgate.handlers.base import Capabilities, Handler, Invocation
from hookgate.handlers.subprocess.output import failure_message, json_object
from hookgate.handlers.subprocess.runner import base_environment, run_shell, shorten
from hookgate.outcome import HookError, HookResult, coerce_result
from hookgate.settings import LITE

if TYPE_CHECKING:
    from hookgate.definition import HookDefinition
    from hookgate.events import EventSpec

__all__ = [
    "NATIVE_FORMAT",
    "CommandFormat",
    "STDERR_CAP",
    "STDOUT_CAP",
    "CommandHandler",
    "command_answer",
    "command_formats",
    "is_command_format",
    "command_input",
    "parse_goclaw_answer",
]

STDOUT_CAP: Final = 1024 * 1024
STDERR_CAP: Final = 64 * 1024
#: How much of stdout/stderr the trace (and ``hooks.test``) shows.
DETAIL_CHARS: Final = 4096
#: The ``format`` of a command that speaks GoClaw's contract (the default); the others are
#: the integrations' (their records' ``command_formats``).
NATIVE_FORMAT: Final = "goclaw"
_ANSWER_KEYS: Final = frozenset(
    {
        "decision",
        "reason",
        "updated_input",
        "updatedInput",
        "additional_context",
        "additionalContext",
        "result",
        "abort",
        "continue",
        "state",  # hook state changes, for hooks with config.state
    }
)


class CommandHandler(Handler):
    handler_type: ClassVar[str] = "command"
    capabilities: ClassVar[Capabilities] = Capabilities(host_code=True, editions=(LITE,))
    config_model: ClassVar[str] = "hookgate.handlers.command_config:CommandConfig"

    async def run(self, call: Invocation) -> HookResult | Mapping[str, Any] | None:
        stdin, env, cwd = command_input(call.hook, call.event, call.payload)
        code, stdout, stderr, stdout_len = await run_shell(
            call.hook.config["command"],
            stdin,
            cwd,
            env,
            stdout_cap=STDOUT_CAP,
            stderr_cap=STDERR_CAP,
            sandbox=self.services.settings.sandbox(),
        )
        return command_answer(call.hook, call.event, code, stdout, stderr, stdout_len)


class CommandFormat(Protocol):
    """Another system's hook-script contract (a module of its integration): what the
    command reads on stdin, and how its exit code and output answer."""

    def command_document(
        self, spec: EventSpec, payload: Mapping[str, Any], cwd: str | None
    ) -> tuple[dict[str, Any], dict[str, str]]:
        """The stdin document, and the environment variables the script expects."""
        ...

    def parse_command_answer(
        self, spec: EventSpec, code: int, stdout: str, stderr: str, details: dict[str, Any]
    ) -> HookResult:
        """The script's exit code and output as a hookgate answer."""
        ...


def command_formats() -> list[str]:
    """Every ``format`` a command hook may name: GoClaw's, then the integrations'."""
    from hookgate.integration_registry import integrations

    return [NATIVE_FORMAT, *(name for record in integrations() for name in record.command_formats)]


def _command_format(name: object) -> CommandFormat | None:
    """The integration's contract for ``name``; None for GoClaw's own. An integration named
    like the format is asked first, so only its record is imported."""
    if name is None or name == NATIVE_FORMAT:
        return None
    if not isinstance(name, str):
        raise HookError(f"unknown command format {name!r}")
    # Imported here: a command speaking GoClaw's contract never reads the records.
    from hookgate.integration_registry import integration, integrations, resolve

    try:
        owner = integration(name)
    except KeyError:
        owner = None
    records = (owner,) if owner is not None and name in owner.command_formats else integrations()
    for record in records:
        path = record.command_formats.get(name)
        if path is not None:
            return resolve(path)  # type: ignore[no-any-return]
    raise HookError(f"unknown command format {name!r}")


def is_command_format(name: object) -> bool:
    """Is ``name`` a ``format`` a command hook may name?"""
    try:
        _command_format(name)
    except HookError:
        return False
    return True


def command_input(
    hook: HookDefinition, event: EventSpec, payload: Mapping[str, Any], *,
    environ: Mapping[str, str] | None = None,
) -> tuple[bytes, dict[str, str], str | None]:
    """What the command gets: (stdin, environment, working directory). Shared by the handler
    and the Claude Code bridge's loop-free runner, so both run a command alike. ``environ``:
    the environment the command's own is drawn from (default: this process's)."""
    config = hook.config
    cwd = config.get("cwd")
    extra = {"HOOKGATE_EVENT": event.name, "HOOKGATE_HOOK_ID": hook.id}
    command_format = _command_format(config.get("format"))
    if command_format is None:
        document: dict[str, Any] = {"hook_event": event.name, **payload}
    else:
        document, more = command_format.command_document(event, payload, cwd)
        extra.update(more)
    env = base_environment(config.get("allowed_env_vars", ()), extra, environ)
    return json.dumps(document, default=str).encode(), env, cwd


def command_answer(
    hook: HookDefinition, event: EventSpec, code: int, stdout: bytes, stderr: bytes,
    stdout_len: int,
) -> HookResult:
    """The command's exit code and output read as its answer (per its ``format``)."""
    out_text = stdout.decode("utf-8", "replace")
    err_text = stderr.decode("utf-8", "replace")
    details: dict[str, Any] = {
        "exit_code": code,
        "stdout": shorten(out_text, DETAIL_CHARS),
        "stderr": shorten(err_text, DETAIL_CHARS),
        "stdout_len": stdout_len,
    }
    if stdout_len > STDOUT_CAP:
        raise HookError(
            f"command wrote more than {STDOUT_CAP} bytes to stdout; it was stopped and its "
            "answer cannot be read",
            details=details,
        )
    command_format = _command_format(hook.config.get("format"))
    if command_format is not None:
        return command_format.parse_command_answer(event, code, out_text, err_text, details)
    return parse_goclaw_answer(code, out_text, err_text, details)


def parse_goclaw_answer(
    code: int, stdout: str, stderr: str, details: dict[str, Any]
) -> HookResult:
    """GoClaw's exit-code contract (see the module docstring)."""
    if code == 2:
        reason = stderr.strip()
        if not reason:
            document = json_object(stdout, details)
            if document is not None and isinstance(document.get("reason"), str):
                reason = document["reason"]
        return HookResult(
            decision="block", reason=reason or "blocked by command hook (exit 2)", details=details
        )
    if code != 0:
        raise HookError(failure_message(code, stderr), details=details)
    document = json_object(stdout, details)
    if document is None:
        return HookResult(details=details)
    ignored = sorted(set(document) - _ANSWER_KEYS)
    if ignored:
        details["ignored_keys"] = ignored
    result = coerce_result({k: v for k, v in document.items() if k in _ANSWER_KEYS})
    if result is None:  # pragma: no cover - a mapping always coerces
        return HookResult(details=details)
    result.details.update(details)
    return result
