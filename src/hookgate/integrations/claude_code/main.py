"""``hookgate claude-code``: one hook event answered, in a worker of the warm process
(:mod:`.warm`) or, when none takes it, in the process Claude Code started (:mod:`.relay`).

It must start fast (Claude Code fires several hook events per tool-using turn) and it must
fail closed: whatever goes wrong in here (a hooks file that cannot be read, a hook module
that does not compile, a bug), Claude Code gets exit code 2 and a one-line reason on
stderr for the events where exit 2 stops the action, never a traceback with exit 1 (which
Claude Code treats as "go ahead").

Speed comes from importing only what this path needs: :mod:`hookgate.launcher` sends the
command line to the relay before the click CLI (and every other command's module) is
imported, the options are parsed by hand (:mod:`.startup`), and the event runs without an
event loop on cached definitions (:mod:`.local_run`, :mod:`.definition_cache`).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, Sequence
from typing import IO, Final

from hookgate.integrations.claude_code.in_place import NeedsFork
from hookgate.integrations.claude_code.startup import (
    CONFIG_NAMES,
    FAIL_CLOSED_EVENTS,
    BridgeArgs,
    default_config_path,
    is_bridge_call,
    parse_args,
)

__all__ = [
    "CONFIG_NAMES",
    "FAIL_CLOSED_EVENTS",
    "BridgeArgs",
    "default_config_path",
    "is_bridge_call",
    "main",
    "parse_args",
]

#: One line, so Claude Code's "hook error" notice and the model see all of it.
_MAX_REASON: Final = 500


def _one_line(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= _MAX_REASON else flat[: _MAX_REASON - 1] + "…"


def peek_event(raw: bytes) -> str | None:
    """The event name, if the input is readable enough to tell; ``None`` otherwise."""
    import json

    try:
        data = json.loads(raw)
    except Exception:  # not JSON, too deep (RecursionError), …
        return None
    event = data.get("hook_event_name") if isinstance(data, dict) else None
    return event if isinstance(event, str) else None


def _nothing_to_run(text: str, config: str | None, env: Mapping[str, str]) -> bool:
    """No hook of the cached hooks file applies to this event, so the engine would answer
    nothing: the file has no hook for the event, or none whose matcher names this tool
    (Claude Code fires several events per turn; most files have hooks for one or two).

    Decided from the cache entry of this exact file alone (see :mod:`.definition_cache`),
    importing nothing of the engine. Anything unusual (no entry, input the engine could
    refuse, a ``depth``, ``callable`` hooks, whose modules are re-checked on every run, an
    event name hookgate does not know, a matcher that is not a list of names) says no, and
    the event takes the full path.
    """
    import json

    try:
        data = json.loads(text)
    except Exception:  # the full path reports it
        return False
    if not isinstance(data, dict) or "depth" in data:
        return False
    event = data.get("hook_event_name")
    if not isinstance(event, str):
        return False
    path = config or default_config_path(data, env)
    if path is None:
        return True  # no hooks file anywhere: nothing to enforce
    from hookgate.integrations.claude_code.definition_cache import edition_of, read_entry

    entry = read_entry(path, edition=edition_of(env), environ=env)
    if entry is None or entry.has_callables:
        return False
    canonical = entry.events.get(event)
    if canonical is None:
        return False
    if canonical not in entry.hooked:
        return True  # the engine returns at once when an event has no hook
    names = entry.tool_names.get(canonical)
    if names is None or "agent_id" in data or not entry.known_fields.issuperset(data):
        return False
    # The engine checks the input's limits before the matchers: well within them here.
    if len(text) > _SMALL_INPUT or _nesting(data) > _SHALLOW:
        return False
    tool = data.get("tool_name")
    return (tool if isinstance(tool, str) else "") not in names


#: Inputs this small and shallow are far inside the engine's payload limits (8 MiB, 255
#: levels), whatever their JSON re-encodes to; larger ones take the full path.
_SMALL_INPUT: Final = 64 * 1024
_SHALLOW: Final = 64


def _nesting(value: object) -> int:
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, depth = stack.pop()
        deepest = max(deepest, depth)
        if depth > _SHALLOW:
            break
        if isinstance(item, dict):
            stack.extend((child, depth + 1) for child in item.values())
        elif isinstance(item, list):
            stack.extend((child, depth + 1) for child in item)
    return deepest


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
                return fail(peek_event(raw), reply.error, stderr)
            if reply.stdout:
                stdout.write(reply.stdout + "\n")
                stdout.flush()
            return 0
        if _nothing_to_run(text, args.config, env):
            return 0
        # No asyncio unless a hook needs the engine (see local_run).
        from hookgate.integrations.claude_code.local_run import answer_event
        from hookgate.settings import Settings

        answer = answer_event(text, args.config, settings=Settings.from_env(env), environ=env)
        if answer.stdout is not None:
            stdout.write(answer.stdout_text() + "\n")
            stdout.flush()
        if answer.stderr:
            stderr.write(_one_line(answer.stderr) + "\n")
            stderr.flush()
        return answer.exit_code
    except NeedsFork:
        raise  # nothing ran: the resident hands the event to a fork
    except BaseException as exc:  # fail closed on anything, even an interrupt
        reason = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
        return fail(peek_event(raw), f"internal error: {reason}", stderr)


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
