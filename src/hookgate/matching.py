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
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final

import re2

from hookgate.errors import HookgateError

__all__ = [
    "MAX_PATTERN_LENGTH",
    "CelFilter",
    "FilterBudgetError",
    "FilterError",
    "LiteralTerm",
    "Matcher",
    "cel_activation",
    "compile_if_expr",
    "compile_matcher",
    "literal_terms",
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


# Characters that stand for themselves anywhere in an RE2 pattern (no meaning of their own).
_WORD: Final = re.compile(r"[A-Za-z0-9_\-:/@ ]+")
# One group of alternatives with optional anchors: ``^(a|b)$``, ``(?:a|b)``, ``^(a|b).*``.
_GROUP: Final = re.compile(r"(\^?)(\.\*)?\((?:\?:)?([^()]*)\)(\.\*)?(\$?)")
# One alternative outside any group: ``^a$``, ``a``, ``^a.*``, ``.*a$``.
_TERM: Final = re.compile(r"(\^?)(\.\*)?([^()|^$]*?)(\.\*)?(\$?)")


@dataclass(frozen=True, slots=True)
class LiteralTerm:
    """One literal alternative of a matcher and where it must sit in the subject."""

    word: str
    at_start: bool
    at_end: bool


def _term(word: str, caret: str, lead: str | None, trail: str | None, dollar: str
          ) -> LiteralTerm | None:
    if not _WORD.fullmatch(word):
        return None
    # ``.`` does not match a newline, so ``.*`` next to an anchor (``^.*a``, ``a.*$``) says
    # something about newlines: only a ``.*`` that may match nothing is dropped.
    if (lead and caret) or (trail and dollar):
        return None
    return LiteralTerm(word, bool(caret), bool(dollar))


def literal_terms(pattern: str) -> tuple[LiteralTerm, ...] | None:
    """The pattern as literal alternatives, or ``None`` when it is anything else.

    RE2's ``search`` is unanchored: ``Edit|Write`` accepts ``NotebookEdit``, ``^Bash$`` only
    ``Bash``, ``^mcp__github__`` and ``mcp__github__.*`` every name starting with / containing
    it, ``a$`` every name ending with it (``$`` is the end of the text, ``^`` its start:
    no multi-line mode). A subject matches when any term does:
    ``subject == word``, ``startswith``, ``endswith`` or ``word in subject``.
    """
    group = _GROUP.fullmatch(pattern)
    if group is not None:
        caret, lead, body, trail, dollar = group.groups()
        terms = [_term(word, caret, lead, trail, dollar) for word in body.split("|")]
    else:
        terms = []
        for alternative in pattern.split("|"):
            shape = _TERM.fullmatch(alternative)
            if shape is None:
                return None
            caret, lead, word, trail, dollar = shape.groups()
            terms.append(_term(word, caret, lead, trail, dollar))
    if not all(terms):
        return None
    return tuple(term for term in terms if term is not None)


def _literal_test(terms: tuple[LiteralTerm, ...]) -> Callable[[str], bool]:
    """A yes/no answer from string comparisons, the same as RE2's for these terms."""
    exact = frozenset(t.word for t in terms if t.at_start and t.at_end)
    prefixes = tuple(t.word for t in terms if t.at_start and not t.at_end)
    suffixes = tuple(t.word for t in terms if t.at_end and not t.at_start)
    contained = tuple(t.word for t in terms if not t.at_start and not t.at_end)
    if exact and not (prefixes or suffixes or contained):
        return exact.__contains__

    def test(subject: str) -> bool:
        return (
            subject in exact
            or (bool(prefixes) and subject.startswith(prefixes))
            or (bool(suffixes) and subject.endswith(suffixes))
            or any(word in subject for word in contained)
        )

    return test


class Matcher:
    """An unanchored RE2 search over one event field (the tool name for tool events).

    Most matchers name tools (``^(Bash|Write)$``, ``Edit|Write``, ``mcp__github__.*``): those
    are :attr:`literal` and answered with string comparisons, which give the same answer
    without entering RE2 (whose first search on each new thread costs tens of µs, and some
    frameworks run each tool on a new thread); a registry indexes them
    (:mod:`hookgate.matcher_index`).
    """

    __slots__ = ("_anchor", "_literal_test", "_native", "_search", "literal", "pattern")

    def __init__(self, pattern: str) -> None:
        if len(pattern) > MAX_PATTERN_LENGTH:
            raise FilterError(f"matcher is longer than {MAX_PATTERN_LENGTH} characters")
        try:
            compiled = re2.compile(pattern, _RE2_OPTIONS)
        except re2.error as exc:
            message = exc.args[0] if exc.args else str(exc)
            if isinstance(message, bytes):
                message = message.decode("utf-8", "replace")
            raise FilterError(f"matcher does not compile: {message}") from None
        self.pattern = pattern
        #: The literal alternatives of the pattern, when it is only those.
        self.literal = literal_terms(pattern)
        self._literal_test = _literal_test(self.literal) if self.literal is not None else None
        self._search = compiled.search
        # google-re2's search() wraps the C matcher in Python that maps byte offsets back to
        # characters and builds a match object; a yes/no answer needs only the C call.
        native = getattr(getattr(compiled, "_regexp", None), "Match", None)
        anchor = getattr(getattr(re2, "_Anchor", None), "UNANCHORED", None)
        self._native = native if anchor is not None else None
        self._anchor = anchor

    def matches(self, subject: str) -> bool:
        if self._literal_test is not None:
            return self._literal_test(subject)
        return self.searches(subject)

    def searches(self, subject: str) -> bool:
        """RE2's answer, whatever the pattern (what :meth:`matches` must agree with)."""
        if self._native is not None:
            encoded = subject.encode()
            spans = self._native(self._anchor, encoded, 0, len(encoded))
            return bool(spans[0][0] != -1)
        return self._search(subject) is not None


def compile_matcher(pattern: str | None) -> Matcher | None:
    if pattern is None or pattern in ("", "*"):
        return None  # empty or "*" matches everything, as in Claude Code
    return _matcher(pattern)


#: How many compiled matchers and conditions are kept, by their source text.
_COMPILED_KEPT: Final = 4096


@functools.lru_cache(maxsize=_COMPILED_KEPT)
def _matcher(pattern: str) -> Matcher:
    """One compile per pattern: a registry built again from the same hooks (the warm
    resident builds one per event, the gateway on every reload) reuses it. A pattern that
    does not compile raises each time (errors are not kept)."""
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
    return _cel_filter(source)


@functools.lru_cache(maxsize=_COMPILED_KEPT)
def _cel_filter(source: str) -> CelFilter:
    """One compile per condition, as :func:`_matcher` (a compiled CEL program is evaluated
    with each event's own activation: it holds nothing of an event)."""
    return CelFilter(source)


def _tidy(message: str) -> str:
    # cel-cpp messages start with a status code and end with one; keep the readable part.
    for prefix in ("INVALID_ARGUMENT: ", "ERROR: "):
        message = message.removeprefix(prefix)
    return message.replace(" [INVALID_ARGUMENT]", "").strip()
