"""``hookgate claude-code``: the process Claude Code starts for every hook event.

It must start fast (Claude Code fires several hook events per tool-using turn) and it must
fail closed: whatever goes wrong in here (a hooks file that cannot be read, a hook module
that does not compile, a bug), Claude Code gets exit code 2 and a one-line reason on
stderr for the events where exit 2 stops the action, never a traceback with exit 1 (which
Claude Code treats as "go ahead").

Speed comes from importing only what this path needs: :mod:`hookgate.launcher` sends the
command line here before the click CLI (and every other command's module) is imported, and
this module parses its two options by hand.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, Sequence
from typing import IO, Final

__all__ = ["BridgeArgs", "is_bridge_call", "main", "parse_args"]

#: Claude Code events where our own failure must stop the action (exit 2). Keep in step with
#: :mod:`.contract` (not imported here: a failure may happen before it is).
FAIL_CLOSED_EVENTS: Final = frozenset({"PreToolUse", "PermissionRequest", "UserPromptSubmit"})
_VALUE_OPTIONS: Final = {"-c": "config", "--config": "config", "--gateway": "gateway"}
#: One line, so Claude Code's "hook error" notice and the model see all of it.
_MAX_REASON: Final = 500


class BridgeArgs:
    __slots__ = ("config", "gateway")

    def __init__(self, config: str | None = None, gateway: str | None = None) -> None:
        self.config = config
        self.gateway = gateway


def parse_args(args: Sequence[str]) -> BridgeArgs | None:
    """``[--config FILE] [--gateway URL]`` (also ``--opt=value``); ``None`` for anything else
    (a sub-command, ``--help``), which the full CLI then handles."""
    parsed = BridgeArgs()
    index = 0
    while index < len(args):
        arg = args[index]
        name, has_value, value = arg.partition("=")
        if not name.startswith("-") or name not in _VALUE_OPTIONS:
            return None
        if not has_value:
            index += 1
            if index >= len(args):
                return None
            value = args[index]
        setattr(parsed, _VALUE_OPTIONS[name], value)
        index += 1
    return parsed


def is_bridge_call(argv: Sequence[str]) -> bool:
    """``hookgate claude-code [--config FILE] [--gateway URL]``: the per-event hook call."""
    return len(argv) >= 1 and argv[0] == "claude-code" and parse_args(argv[1:]) is not None


def _one_line(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= _MAX_REASON else flat[: _MAX_REASON - 1] + "…"


def _peek_event(raw: bytes) -> str | None:
    """The event name, if the input is readable enough to tell; ``None`` otherwise."""
    import json

    try:
        data = json.loads(raw)
    except Exception:  # not JSON, too deep (RecursionError), …
        return None
    event = data.get("hook_event_name") if isinstance(data, dict) else None
    return event if isinstance(event, str) else None


def fail(event: str | None, reason: str, stderr: IO[str]) -> int:
    """Report hookgate's own failure: exit 2 stops the action where Claude Code can stop it
    (and when the event is unknown); elsewhere exit 1 reports it (exit 2 on ``Stop`` would
    make Claude keep going)."""
    stderr.write(f"hookgate: {_one_line(reason)}\n")
    stderr.flush()
    return 2 if event is None or event in FAIL_CLOSED_EVENTS else 1


def run(
    args: BridgeArgs,
    raw: bytes,
    *,
    stdout: IO[str],
    stderr: IO[str],
    environ: Mapping[str, str] | None = None,
) -> int:
    """Answer one hook event; returns the exit code. Never raises."""
    env = os.environ if environ is None else environ
    try:
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            return fail(None, f"stdin is not UTF-8 (byte {exc.start})", stderr)
        gateway = args.gateway or env.get("HOOKGATE_GATEWAY_URL")
        if gateway:
            # The gateway answers in Claude Code's JSON: only an HTTP request is needed here.
            from hookgate.integrations.claude_code.gateway_transport import ask_gateway

            reply = ask_gateway(raw, gateway, env.get("HOOKGATE_API_KEY"))
            if reply.error is not None:
                return fail(_peek_event(raw), reply.error, stderr)
            if reply.stdout:
                stdout.write(reply.stdout + "\n")
                stdout.flush()
            return 0
        import asyncio

        from hookgate.integrations.claude_code.contract import run_bridge
        from hookgate.settings import Settings

        answer = asyncio.run(run_bridge(text, args.config, settings=Settings.from_env()))
        if answer.stdout is not None:
            stdout.write(answer.stdout_text() + "\n")
            stdout.flush()
        if answer.stderr:
            stderr.write(_one_line(answer.stderr) + "\n")
            stderr.flush()
        return answer.exit_code
    except BaseException as exc:  # fail closed on anything, even an interrupt
        reason = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
        return fail(_peek_event(raw), f"internal error: {reason}", stderr)


def main(args: Sequence[str] | None = None) -> int:
    """``hookgate claude-code`` with ``args`` (default: ``sys.argv[2:]``)."""
    parsed = parse_args(sys.argv[2:] if args is None else args)
    if parsed is None:
        return fail(None, "usage: hookgate claude-code [--config FILE] [--gateway URL]",
                    sys.stderr)
    try:
        raw = sys.stdin.buffer.read()
    except BaseException as exc:
        return fail(None, f"cannot read stdin: {exc}", sys.stderr)
    return run(parsed, raw, stdout=sys.stdout, stderr=sys.stderr)
