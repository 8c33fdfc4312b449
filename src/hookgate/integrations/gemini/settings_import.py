"""A Gemini CLI ``settings.json``'s hooks, converted into hookgate hook definitions
(``hookgate import gemini``).

Gemini CLI's layout: ``hooks.<Event>: [{matcher, sequential?, hooks: [{type: "command",
command, timeout (ms), name?, description?, env?}]}]``, plus ``hooksConfig.enabled`` and
``hooksConfig.disabled`` (hook names or commands). Each command hook becomes a hookgate
``command`` hook with ``format: gemini`` (:mod:`.script_contract`: the script runs
unchanged, shown Gemini's input, read by Gemini's answer contract), on the hookgate event of
:data:`~.contract.GEMINI_EVENTS`.

Matchers keep Gemini's meaning:

* ``BeforeTool``/``AfterTool``: Gemini searches the regex in its own tool name; hookgate
  renames the tools it knows (:data:`~hookgate.integrations.agent_tools.GEMINI_TOOL_NAMES`:
  ``run_shell_command`` is ``Bash``), so the matcher names the hookgate tools whose Gemini
  names the regex matches, keeps the regex for every other tool (MCP tools keep their names),
  and where one hookgate name stands for several Gemini names of which the regex matches only
  some, an ``if_expr`` leaves the others out (on ``agent_tool_name``).
  (A Gemini tool named as one of hookgate's, ``Read``, would be taken for the renamed one:
  Gemini CLI has none.)
* ``SessionStart``/``SessionEnd``/``PreCompress``: Gemini compares the matcher with the
  source, reason or trigger for equality; so does the converted hook.
* The other events ignore a matcher in Gemini CLI; it is left out (with a note).

A matcher must be a regular expression RE2 runs (hookgate's matchers are RE2; lookaround and
back-references are not). Anything that cannot be converted is a problem, and the caller
writes nothing when there is one.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final

from hookgate.events import get_event
from hookgate.integrations.agent_tools import GEMINI_TOOL_NAMES
from hookgate.integrations.claude_code.settings_format import Conversion
from hookgate.integrations.gemini.contract import GEMINI_EVENTS
from hookgate.integrations.hook_import import read_hooks_json
from hookgate.integrations.hooks_json import HooksFile, strip_comments

__all__ = [
    "convert_gemini_settings",
    "quote_substitutions",
    "read_gemini_settings",
    "strip_comments",
    "tool_filter",
]

#: How long Gemini CLI waits for a command hook that sets no ``timeout`` (ms).
GEMINI_DEFAULT_TIMEOUT_MS: Final = 60_000
#: Keys of ``hooks`` that are settings, not events (Gemini CLI skips them there).
_SETTING_KEYS: Final = frozenset({"enabled", "disabled", "notifications"})
#: Events whose matcher Gemini compares with one input field for equality.
_TRIGGER_FIELDS: Final[Mapping[str, str]] = {
    "SessionStart": "source",
    "SessionEnd": "reason",
    "PreCompress": "trigger",
}
_TOOL_EVENTS: Final = frozenset({"BeforeTool", "AfterTool"})
#: Model events: a script's llm_request / llm_response / toolConfig rewrites are Gemini's own.
_MODEL_EVENTS: Final = frozenset({"BeforeModel", "AfterModel", "BeforeToolSelection"})
_ENV_NAME: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
#: The variables Gemini CLI writes into a hook's command text, quoted for its shell, before
#: running it (``$GEMINI_PLANS_DIR`` too, which hookgate cannot know: it stays a variable).
_SUBSTITUTED: Final = re.compile(
    r"\$(?:GEMINI_PROJECT_DIR|GEMINI_CWD|GEMINI_SESSION_ID|CLAUDE_PROJECT_DIR)"
)


def quote_substitutions(command: str) -> str:
    """``command`` with each variable Gemini CLI substitutes (a folder with spaces stays one
    word) quoted as the shell must see it: ``"$GEMINI_PROJECT_DIR"`` outside quotes, as it is
    inside double quotes, ``'"$GEMINI_PROJECT_DIR"'`` inside single quotes (where Gemini
    substitutes too). The ``format: gemini`` hook sets the variables."""
    out: list[str] = []
    quote = ""
    index = 0
    while index < len(command):
        char = command[index]
        found = _SUBSTITUTED.match(command, index) if char == "$" else None
        if found is not None:
            name = found.group(0)
            out.append({"": f'"{name}"', '"': name, "'": f"'\"{name}\"'"}[quote])
            index = found.end()
            continue
        if char == "\\" and quote != "'":
            out.append(command[index : index + 2])
            index += 2
            continue
        if char in "'\"" and quote in ("", char):
            quote = "" if quote else char
        out.append(char)
        index += 1
    return "".join(out)


def read_gemini_settings(path: str | Path) -> dict[str, Any]:
    """A Gemini CLI settings document (JSON with comments, as Gemini CLI reads it); raise
    :class:`~hookgate.integrations.hook_import.HooksImportError`."""
    return read_hooks_json(
        path, agent="Gemini CLI", comments=True, example='{"hooks": {"BeforeTool": […]}}'
    )


def tool_filter(pattern: str) -> tuple[str, str | None]:
    """A Gemini tool-event matcher as hookgate's (matcher, if_expr); raise ValueError when
    RE2 cannot run it. See the module docstring."""
    from hookgate.matching import FilterError, Matcher, literal_terms

    try:
        gemini = Matcher(pattern)
    except FilterError as exc:
        raise ValueError(f"{pattern!r} is not a regular expression RE2 runs: {exc}") from None
    ours = list(
        dict.fromkeys(name for theirs, name in GEMINI_TOOL_NAMES.items() if gemini.searches(theirs))
    )
    terms = literal_terms(pattern)
    only_known = terms is not None and all(
        term.at_start and term.at_end and term.word in GEMINI_TOOL_NAMES for term in terms
    )
    parts = [f"^(?:{'|'.join(ours)})$"] if ours else []
    if not only_known:
        # every other tool (MCP tools, ones hookgate does not rename) keeps Gemini's name
        parts.append(f"(?:{pattern})" if ours else pattern)
    matcher = "|".join(parts)
    accepts = Matcher(matcher)
    left_out = [
        theirs
        for theirs, name in GEMINI_TOOL_NAMES.items()
        if accepts.searches(name) and not gemini.searches(theirs)
    ]
    if not left_out:
        return matcher, None
    names = ", ".join(json.dumps(name) for name in left_out)
    return matcher, (f"!(has(payload.agent_tool_name) && payload.agent_tool_name in [{names}])")


def _cel_string(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)


class _Converter:
    def __init__(self, document: Mapping[str, Any], source: Path) -> None:
        self.document = document
        self.out = Conversion()
        self.bridge = HooksFile(source, "gemini")
        self.disabled: frozenset[str] = frozenset()
        self.all_disabled = False

    def settings(self) -> None:
        config = self.document.get("hooksConfig", {})
        if not isinstance(config, Mapping):
            self.out.problems.append("hooksConfig: must be an object")
            return
        enabled = config.get("enabled", True)
        if not isinstance(enabled, bool):
            self.out.problems.append("hooksConfig.enabled: must be true or false")
        elif not enabled:
            self.all_disabled = True
            self.out.notes.append("hooksConfig.enabled is false: every imported hook is disabled")
        disabled = config.get("disabled", [])
        if not isinstance(disabled, list) or not all(isinstance(n, str) for n in disabled):
            self.out.problems.append("hooksConfig.disabled: must be a list of hook names")
        else:
            self.disabled = frozenset(disabled)

    def run(self) -> Conversion:
        self.settings()
        for event, groups in self.document["hooks"].items():
            if event in _SETTING_KEYS:
                self.out.notes.append(
                    f"hooks.{event}: a setting, not an event (Gemini CLI "
                    "reads it from hooksConfig); left out"
                )
                continue
            if event not in GEMINI_EVENTS:
                self.out.problems.append(
                    f"hooks.{event}: Gemini CLI has no such event (it "
                    f"skips it); events: {', '.join(GEMINI_EVENTS)}"
                )
                continue
            if not isinstance(groups, list):
                self.out.problems.append(f"hooks.{event}: must be a list of hook groups")
                continue
            for index, group in enumerate(groups):
                self.group(event, index, group)
        return self.out

    def group(self, event: str, index: int, group: Any) -> None:
        where = f"hooks.{event}[{index}]"
        if not isinstance(group, Mapping) or not isinstance(group.get("hooks"), list):
            self.out.problems.append(f"{where}: must be an object with a 'hooks' list")
            return
        if not isinstance(group.get("sequential", False), bool):
            self.out.problems.append(f"{where}.sequential: must be true or false")
            return
        try:
            matcher, if_expr = self.filters(event, group.get("matcher"), where)
        except ValueError as exc:
            self.out.problems.append(f"{where}.matcher: {exc}")
            return
        handlers = group["hooks"]
        if len(handlers) > 1 and not group.get("sequential"):
            self.out.notes.append(
                f"{where}: Gemini CLI runs these {len(handlers)} hooks in "
                "parallel; hookgate runs them in order (a deny still wins)"
            )
        for number, handler in enumerate(handlers):
            raw = self.handler(event, f"{where}.hooks[{number}]", handler)
            if raw is not None:
                raw.update(matcher=matcher, if_expr=if_expr)
                self.out.hooks.append(raw)

    def filters(self, event: str, matcher: Any, where: str) -> tuple[str | None, str | None]:
        if matcher is None:
            return None, None
        if not isinstance(matcher, str):
            raise ValueError("must be a string")
        pattern = matcher.strip()
        if pattern in ("", "*"):
            return None, None
        if event in _TOOL_EVENTS:
            return tool_filter(pattern)
        field = _TRIGGER_FIELDS.get(event)
        if field is None:
            self.out.notes.append(
                f"{where}.matcher: Gemini CLI ignores a matcher on {event}; "
                "left out (the hooks run for every event)"
            )
            return None, None
        import re2

        if get_event(GEMINI_EVENTS[event]).match_field == field:
            return f"^{re2.escape(pattern)}$", None
        return None, f"has(payload.{field}) && payload.{field} == {_cel_string(pattern)}"

    def handler(self, event: str, where: str, handler: Any) -> dict[str, Any] | None:
        problems = self.out.problems
        if not isinstance(handler, Mapping):
            problems.append(f"{where}: must be an object")
            return None
        kind = handler.get("type")
        if kind != "command":
            problems.append(
                f"{where}.type: {kind!r} hooks are not imported (only 'command'; "
                "Gemini CLI itself discards a hook without a valid type)"
            )
            return None
        command = handler.get("command")
        if not isinstance(command, str) or not command.strip() or "\0" in command:
            problems.append(f"{where}.command: must be a non-empty string (no NUL)")
            return None
        if self.bridge.runs_bridge(command):
            self.out.notes.append(f"{where}: skipped, it runs hookgate itself (the bridge)")
            return None
        for key in ("name", "description"):
            if handler.get(key) is not None and not isinstance(handler[key], str):
                problems.append(f"{where}.{key}: must be a string")
                return None
        timeout_ms = self.timeout(event, where, handler.get("timeout"))
        prefix = self.environment(where, handler.get("env"))
        if timeout_ms is None or prefix is None:
            return None
        name = handler.get("name")
        raw: dict[str, Any] = {
            "event": GEMINI_EVENTS[event],
            "handler_type": "command",
            "name": f"gemini {where.removeprefix('hooks.')}" + (f" {name}" if name else ""),
            "description": handler.get("description"),
            "timeout_ms": timeout_ms,
            "config": {"command": prefix + quote_substitutions(command), "format": "gemini"},
            "scope": "global",
        }
        if self.all_disabled or (name or command) in self.disabled:
            raw["enabled"] = False
            if not self.all_disabled:
                self.out.notes.append(f"{where}: in hooksConfig.disabled; imported disabled")
        if event in _MODEL_EVENTS:
            self.out.notes.append(
                f"{where}: on {event} hookgate applies the hook's deny, stop "
                "and context; its llm_request, llm_response or toolConfig "
                "rewrites are Gemini CLI's own and are not applied"
            )
        return raw

    def timeout(self, event: str, where: str, timeout: Any) -> int | None:
        most = get_event(GEMINI_EVENTS[event]).max_timeout_ms
        if timeout is None:
            self.out.notes.append(
                f"{where}.timeout: not set, so Gemini CLI would wait "
                f"{GEMINI_DEFAULT_TIMEOUT_MS // 1000} s; imported as "
                f"hookgate's most, {most / 1000:g} s"
            )
            return most
        if (
            not isinstance(timeout, int | float)
            or isinstance(timeout, bool)
            or not math.isfinite(timeout)
            or timeout <= 0
        ):
            self.out.problems.append(f"{where}.timeout: must be a positive number of milliseconds")
            return None
        if timeout > most:
            self.out.notes.append(
                f"{where}.timeout: {timeout:g} ms capped at hookgate's most "
                f"for this event, {most} ms"
            )
        return max(1, min(most, math.ceil(timeout)))

    def environment(self, where: str, env: Any) -> str | None:
        """``env`` as ``export NAME='value';`` before the command (hookgate's command hooks
        pass only the variables they name)."""
        import shlex

        if env is None:
            return ""
        if not isinstance(env, Mapping):
            self.out.problems.append(f"{where}.env: must be an object of strings")
            return None
        exports = []
        for key, value in env.items():
            if not _ENV_NAME.fullmatch(key) or not isinstance(value, str) or "\0" in value:
                self.out.problems.append(
                    f"{where}.env: {key!r} must be a variable name with a string value"
                )
                return None
            exports.append(f"export {key}={shlex.quote(value)}; ")
        return "".join(exports)


def convert_gemini_settings(document: Mapping[str, Any], source: Path) -> Conversion:
    """Every hook of a Gemini CLI settings document (as :func:`read_gemini_settings` gives
    it), as raw hookgate definitions, with the problems and notes."""
    return _Converter(document, source).run()
