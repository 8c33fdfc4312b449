"""The one rule for a tool's output, for every surface that holds it until hooks decide (the
MCP proxy and every framework adapter).

A surface that holds the output fires ``post_tool_use`` under its synchronous-stage name,
:data:`POST_TOOL_STAGE` (PicoClaw's ``after_tool``): the chain then runs as a blocking one
(hooks in turn, each seeing the last rewrite; an input too large to evaluate blocks), so a
hook's block and abort reach the caller. :func:`output_check` maps that outcome:

* abort (or ``continue: false``): the run stops, and the output is withheld;
* block: the output is withheld; what the model reads instead is the reason;
* ``updated_input``: the output is replaced;
* otherwise the output passes; context is appended either way.

Every failure to get an outcome (a gateway that is down, an event too large for the
gateway's frame, a malformed answer) is a block: :func:`check_failed` makes it.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final, Literal

from hookgate.events import get_event
from hookgate.log import log_event
from hookgate.outcome import Outcome

__all__ = [
    "POST_TOOL_STAGE",
    "OutputCheck",
    "check_failed",
    "output_check",
    "withheld_like",
    "withheld_text",
]

#: The name ``post_tool_use`` is fired under when the caller holds the output for the hooks:
#: the event catalogue runs it as a blocking chain (``blocking_names``).
POST_TOOL_STAGE: Final = "after_tool"
if POST_TOOL_STAGE not in get_event("post_tool_use").blocking_names:  # pragma: no cover
    raise RuntimeError(f"{POST_TOOL_STAGE!r} no longer runs post_tool_use as a blocking chain")


@dataclass(frozen=True, slots=True)
class OutputCheck:
    """What happens to one tool output.

    ``pass``: it goes on unchanged. ``rewrite``: ``output`` replaces it. ``withhold``: it is
    not shown; ``reason`` says why. ``stop``: withheld, and the run stops (``hard`` for a hard
    abort). ``context`` is appended to whatever the model reads.
    """

    action: Literal["pass", "rewrite", "withhold", "stop"]
    output: Any = None
    reason: str = ""
    hard: bool = False
    context: list[str] = field(default_factory=list)

    @property
    def withheld(self) -> bool:
        return self.action in ("withhold", "stop")

    def text(self) -> str:
        """What the model reads instead of a withheld output."""
        return withheld_text(self.reason, stopped=self.action == "stop")


def withheld_text(reason: str, *, stopped: bool = False) -> str:
    if stopped:
        return f"Tool output withheld and the run stopped by hookgate: {reason}"
    return f"Tool output withheld by hookgate: {reason}"


def output_check(outcome: Outcome) -> OutputCheck:
    """Map a ``post_tool_use`` outcome fired as :data:`POST_TOOL_STAGE`."""
    context = list(outcome.additional_context)
    if outcome.abort is not None or not outcome.continue_:
        reason = outcome.reason or "stopped by a hook on post_tool_use"
        return OutputCheck("stop", None, reason, outcome.abort == "hard", context)
    if outcome.blocked:
        return OutputCheck("withhold", None, outcome.reason or "blocked by a hook", False, context)
    if outcome.updated_input is not None:
        return OutputCheck("rewrite", outcome.updated_input, context=context)
    return OutputCheck("pass", context=context)


def check_failed(exc: BaseException) -> Outcome:
    """The outcome when ``post_tool_use`` could not be evaluated at all: a block. The reason
    names the error's type only (its message may carry the output or a URL with a key)."""
    log_event(
        "hookgate.tool_output.unchecked",
        level=logging.ERROR,
        hook_event="post_tool_use",
        error=type(exc).__name__,
        enforced="withhold",
    )
    return Outcome(
        decision="block",
        reason=f"hookgate could not check this tool output ({type(exc).__name__}); withheld",
    )


def withheld_like(original: Any, text: str) -> Any:
    """``text`` in the shape of ``original``, with nothing of ``original`` kept: for a
    framework that checks an output's shape (Claude Code's Bash output is an object with
    ``stdout``, ``stderr``, …). The text goes in ``stdout``, else the first text field."""
    if not isinstance(original, Mapping):
        return text
    emptied: dict[str, Any] = {}
    for key, value in original.items():
        if isinstance(value, str):
            emptied[key] = ""
        elif isinstance(value, list):
            emptied[key] = []
        elif isinstance(value, Mapping):
            emptied[key] = {}
        else:
            emptied[key] = value  # flags and numbers carry no output
    slot = "stdout" if "stdout" in emptied else next(
        (key for key, value in original.items() if isinstance(value, str)), None
    )
    if slot is None:
        return text
    emptied[slot] = text
    return emptied
