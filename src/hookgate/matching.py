"""Pre-filters that decide whether a hook sees an event: ``matcher`` and ``if_expr``.

Matchers are user-supplied regular expressions, so they run on RE2 (linear time, no
catastrophic backtracking; backreferences and lookaround are refused at validation).
``if_expr`` is CEL, type-checked at compile time against the event fields, compiled once
per hook version.

CEL runs inside the interpreter lock and its Python binding offers no evaluation budget, so
its cost is bounded by what it may be given instead: an expression of at most
:data:`MAX_IF_EXPR_CHARS` characters with at most :data:`MAX_COMPREHENSIONS` comprehension
macros (``all``, ``exists``, ``exists_one``, ``map``, ``filter``), none inside another; and an
event input of at most :data:`MAX_CEL_INPUT_BYTES` (larger input raises
:class:`FilterBudgetError`, which the chain treats as the hook failing). The chain also
counts the evaluation's time against the hook's timeout.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from typing import Any, Final

import re2

from hookgate.errors import HookgateError

__all__ = [
    "MAX_PATTERN_LENGTH",
    "CelFilter",
    "FilterBudgetError",
    "FilterError",
    "Matcher",
    "cel_activation",
    "compile_if_expr",
    "compile_matcher",
]

MAX_PATTERN_LENGTH: Final = 1024
MAX_IF_EXPR_CHARS: Final = 2048
MAX_COMPREHENSIONS: Final = 2
#: The event input an if_expr may be evaluated over (bytes of its JSON form).
MAX_CEL_INPUT_BYTES: Final = 1 << 20
_STRING_LITERAL: Final = re.compile(r"'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"")
_MACRO: Final = re.compile(r"\.\s*(?:all|exists_one|exists|map|filter)\s*\(")


class FilterError(HookgateError, ValueError):
    """A matcher or if_expr that does not compile, or an if_expr that is not boolean."""


class FilterBudgetError(FilterError):
    """An event input too large for an if_expr to be evaluated over."""


def _comprehension_problem(source: str) -> str | None:
    """Too many comprehension macros, or one inside another (quadratic or worse)."""
    # Blank out string literals first, so text inside quotes is not taken for a macro.
    code = _STRING_LITERAL.sub(lambda m: " " * len(m.group(0)), source)
    starts = [m.end() - 1 for m in _MACRO.finditer(code)]
    if len(starts) > MAX_COMPREHENSIONS:
        return f"if_expr may use at most {MAX_COMPREHENSIONS} comprehension macros"
    for index, start in enumerate(starts):
        depth, end = 0, len(code)
        for position in range(start, len(code)):
            if code[position] == "(":
                depth += 1
            elif code[position] == ")":
                depth -= 1
                if depth == 0:
                    end = position
                    break
        if any(start < other < end for other in starts[index + 1 :]):
            return "if_expr may not nest one comprehension macro inside another"
    return None


_RE2_OPTIONS = re2.Options()
_RE2_OPTIONS.log_errors = False  # errors are reported to the user, not to stderr


# Characters that stand for themselves in a pattern (no RE2 meaning anywhere).
_LITERAL = re.compile(r"[A-Za-z0-9_\-:/@ ]+")
_ALTERNATIVES = re.compile(r"\^\(([^()]*)\)\$|\^([^()|]*)\$|([^()^$]*)")


def _literal_form(pattern: str) -> tuple[bool, tuple[str, ...]] | None:
    """``(whole, words)`` when the pattern is only literal alternatives: ``^(a|b)$`` or
    ``^a$`` (the subject must be one of the words) or ``a|b`` (it must contain one)."""
    shape = _ALTERNATIVES.fullmatch(pattern)
    if shape is None:
        return None
    anchored, single, unanchored = shape.groups()
    body = anchored if anchored is not None else single if single is not None else unanchored
    words = tuple(body.split("|"))
    if not all(_LITERAL.fullmatch(word) for word in words):
        return None
    return unanchored is None, words


class Matcher:
    """An unanchored RE2 search over one event field (the tool name for tool events).

    Most matchers name tools (``^(Bash|Write)$``, ``Edit|Write``): those are answered with
    string comparisons, which give the same answer without entering RE2 (whose first search
    on each new thread costs tens of µs, and some frameworks run each tool on a new thread).
    """

    __slots__ = ("_anchor", "_contains", "_native", "_search", "_whole", "pattern")

    def __init__(self, pattern: str) -> None:
        if len(pattern) > MAX_PATTERN_LENGTH:
            raise FilterError(f"matcher is longer than {MAX_PATTERN_LENGTH} characters")
        literal = _literal_form(pattern)
        self._whole: frozenset[str] | None = None
        self._contains: tuple[str, ...] | None = None
        if literal is not None:
            whole, words = literal
            if whole:
                self._whole = frozenset(words)
            else:
                self._contains = words
        try:
            compiled = re2.compile(pattern, _RE2_OPTIONS)
        except re2.error as exc:
            message = exc.args[0] if exc.args else str(exc)
            if isinstance(message, bytes):
                message = message.decode("utf-8", "replace")
            raise FilterError(f"matcher does not compile: {message}") from None
        self.pattern = pattern
        self._search = compiled.search
        # google-re2's search() wraps the C matcher in Python that maps byte offsets back to
        # characters and builds a match object; a yes/no answer needs only the C call.
        native = getattr(getattr(compiled, "_regexp", None), "Match", None)
        anchor = getattr(getattr(re2, "_Anchor", None), "UNANCHORED", None)
        self._native = native if anchor is not None else None
        self._anchor = anchor

    def matches(self, subject: str) -> bool:
        if self._whole is not None:
            return subject in self._whole
        if self._contains is not None:
            return any(word in subject for word in self._contains)
        if self._native is not None:
            encoded = subject.encode()
            spans = self._native(self._anchor, encoded, 0, len(encoded))
            return bool(spans[0][0] != -1)
        return self._search(subject) is not None


def compile_matcher(pattern: str | None) -> Matcher | None:
    if pattern is None or pattern in ("", "*"):
        return None  # empty or "*" matches everything, as in Claude Code
    return Matcher(pattern)


# Variables an if_expr may use. Fields an event does not carry read as their zero value.
_CEL_NAMES: Final[tuple[str, ...]] = (
    "tool_name",
    "tool_input",
    "depth",
    "event",
    "prompt",
    "session_id",
    "tenant_id",
    "agent_id",
    "user_id",
    "turn_id",
    "tool_response",
    "tool_use_id",
    "run_id",
    "kind",
    "task",
    "output",
    "source_agent",
    "target_agent",
    "request",
    "response",
    "content",
    "message",
    "source",
    "model",
    "channel",
    "error",
    "payload",
)


@functools.cache
def _cel() -> Any:
    """The CEL module and its environment, loaded when the first if_expr compiles: most
    hooks have none, and every Claude Code hook call starts a fresh process."""
    from cel_expr_python import cel

    T = cel.Type
    variables = {
        "tool_name": T.STRING,
        "tool_input": T.Map(T.STRING, T.DYN),
        "depth": T.INT,
        "event": T.STRING,
        "prompt": T.DYN,
        "session_id": T.DYN,
        "tenant_id": T.DYN,
        "agent_id": T.DYN,
        "user_id": T.DYN,
        "turn_id": T.DYN,
        "tool_response": T.DYN,
        "tool_use_id": T.DYN,
        "run_id": T.DYN,
        "kind": T.DYN,
        "task": T.DYN,
        "output": T.DYN,
        "source_agent": T.DYN,
        "target_agent": T.DYN,
        "request": T.DYN,
        "response": T.DYN,
        "content": T.DYN,
        "message": T.DYN,
        "source": T.DYN,
        "model": T.DYN,
        "channel": T.DYN,
        "error": T.DYN,
        "payload": T.Map(T.STRING, T.DYN),
    }
    return cel, cel.NewEnv(variables=variables)


_ZERO: Final[dict[str, Any]] = {"tool_name": "", "tool_input": {}, "depth": 0, "event": ""}


def cel_activation(event: str, payload: Mapping[str, Any]) -> dict[str, Any]:
    """The variables an if_expr sees for one event; built once per fire and shared. Raise
    :class:`FilterBudgetError` when the input is over :data:`MAX_CEL_INPUT_BYTES`."""
    import orjson  # here: only if_expr filters need it (hookgate claude-code starts faster)

    try:
        size = len(orjson.dumps(payload))
    except TypeError:  # values that are not JSON (library callers): not measured
        size = 0
    if size > MAX_CEL_INPUT_BYTES:
        raise FilterBudgetError(
            f"the event input ({size} bytes) is over the {MAX_CEL_INPUT_BYTES} bytes an "
            "if_expr may be evaluated over"
        )
    data: dict[str, Any] = {name: payload.get(name) for name in _CEL_NAMES}
    for name, zero in _ZERO.items():
        if data[name] is None:
            data[name] = zero
    if not isinstance(data["tool_input"], Mapping):
        data["tool_input"] = {"value": data["tool_input"]}
    if not isinstance(data["depth"], int) or isinstance(data["depth"], bool):
        data["depth"] = 0
    data["event"] = event
    data["payload"] = dict(payload)
    return data


class CelFilter:
    """A compiled, boolean CEL expression."""

    __slots__ = ("_bool", "_error", "_expression", "source")

    def __init__(self, source: str) -> None:
        if len(source) > MAX_IF_EXPR_CHARS:
            raise FilterError(f"if_expr is longer than {MAX_IF_EXPR_CHARS} characters")
        problem = _comprehension_problem(source)
        if problem is not None:
            raise FilterError(problem)
        cel, env = _cel()
        try:
            expression = env.compile(source)
        except RuntimeError as exc:
            raise FilterError(f"if_expr does not compile: {_tidy(str(exc))}") from None
        result_type = expression.return_type()
        if result_type != cel.Type.BOOL and result_type != cel.Type.DYN:
            raise FilterError(
                f"if_expr must be a boolean expression; it returns {result_type.name()}"
            )
        self.source = source
        self._expression = expression
        self._bool = cel.Type.BOOL
        self._error = cel.Type.ERROR

    def evaluate(self, activation: Mapping[str, Any]) -> bool:
        """True or False; raise :class:`FilterError` when evaluation fails or is not boolean."""
        value = self._expression.eval(data=activation)
        kind = value.type()
        if kind == self._bool:
            return bool(value.value())
        if kind == self._error:
            raise FilterError(f"if_expr failed: {value.value()}")
        raise FilterError(f"if_expr returned {kind.name()}, not a boolean")


def compile_if_expr(source: str | None) -> CelFilter | None:
    if source is None or not source.strip():
        return None
    return CelFilter(source)


def _tidy(message: str) -> str:
    # cel-cpp messages start with a status code and end with one; keep the readable part.
    for prefix in ("INVALID_ARGUMENT: ", "ERROR: "):
        message = message.removeprefix(prefix)
    return message.replace(" [INVALID_ARGUMENT]", "").strip()
