"""hookgate: a lifecycle-hook engine for AI agents.

engine = hookgate.Engine()

@engine.hook("pre_tool_use", matcher="^exec$")
def no_rm(event):
    if "rm -rf" in event.tool_input.get("cmd", ""):
        return {"decision": "block", "reason": "destructive command"}

outcome = await engine.fire("pre_tool_use", tool_name="exec", tool_input={"cmd": "ls"})
"""

from hookgate.audit import AuditSink, ExecutionRecord, MemoryAudit
from hookgate.definition import DefinitionError, HookDefinition, Problem, validate_definition
from hookgate.engine import Engine
from hookgate.events import CATALOGUE, EventSpec, UnknownEventError, get_event
from hookgate.hook_event import HookEvent
from hookgate.outcome import HookError, HookResult, MalformedAnswer, Outcome, TraceEntry
from hookgate.settings import Settings

__all__ = [
    "CATALOGUE",
    "AuditSink",
    "DefinitionError",
    "Engine",
    "EventSpec",
    "ExecutionRecord",
    "HookDefinition",
    "HookError",
    "HookEvent",
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
