"""hookgate: a lifecycle-hook engine for AI agents.

engine = hookgate.Engine()

@engine.hook("pre_tool_use", matcher="^exec$")
def no_rm(event):
    if "rm -rf" in event.tool_input.get("cmd", ""):
        return {"decision": "block", "reason": "destructive command"}

outcome = await engine.fire("pre_tool_use", tool_name="exec", tool_input={"cmd": "ls"})
"""

from __future__ import annotations

# Not ``typing``: the Claude Code bridge's per-event client imports this package and nothing
# heavy (importing typing costs more than a third of a Python start); mypy reads the name.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Final

    from hookgate.audit import AuditSink, ExecutionRecord, MemoryAudit
    from hookgate.definition import DefinitionError, HookDefinition, Problem
    from hookgate.definition_model import validate_definition
    from hookgate.engine import Engine
    from hookgate.errors import BudgetError, EngineClosed, HookgateError
    from hookgate.events import CATALOGUE, EventSpec, UnknownEventError, get_event
    from hookgate.hook_event import HookEvent
    from hookgate.outcome import HookError, HookResult, MalformedAnswer, Outcome, TraceEntry
    from hookgate.settings import Settings

__all__ = [
    "CATALOGUE",
    "AuditSink",
    "BudgetError",
    "DefinitionError",
    "Engine",
    "EngineClosed",
    "EventSpec",
    "ExecutionRecord",
    "HookDefinition",
    "HookError",
    "HookEvent",
    "HookgateError",
    "HookResult",
    "MalformedAnswer",
    "MemoryAudit",
    "Outcome",
    "Problem",
    "Settings",
    "TraceEntry",
    "UnknownEventError",
    "get_event",
    "validate_definition",
]
__version__ = "0.1.0"

# The public names are imported on first use: ``import hookgate.<anything>`` (the CLI, the
# Claude Code bridge that starts once per hook event) must not pay for the whole engine.
_HOMES: Final[dict[str, str]] = {
    "AuditSink": "hookgate.audit",
    "ExecutionRecord": "hookgate.audit",
    "MemoryAudit": "hookgate.audit",
    "DefinitionError": "hookgate.definition",
    "HookDefinition": "hookgate.definition",
    "Problem": "hookgate.definition",
    "validate_definition": "hookgate.definition_model",
    "Engine": "hookgate.engine",
    "BudgetError": "hookgate.errors",
    "EngineClosed": "hookgate.errors",
    "HookgateError": "hookgate.errors",
    "CATALOGUE": "hookgate.events",
    "EventSpec": "hookgate.events",
    "UnknownEventError": "hookgate.events",
    "get_event": "hookgate.events",
    "HookEvent": "hookgate.hook_event",
    "HookError": "hookgate.outcome",
    "HookResult": "hookgate.outcome",
    "MalformedAnswer": "hookgate.outcome",
    "Outcome": "hookgate.outcome",
    "TraceEntry": "hookgate.outcome",
    "Settings": "hookgate.settings",
}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'hookgate' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(home), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_HOMES])
