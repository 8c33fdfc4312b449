"""A process hook's config as the handler runs it (:class:`ProcessSpec`), built by the
type's config model (:func:`hookgate.handlers.process.config.parse_spec`).

Config keys (PicoClaw's ``hooks.processes.<name>`` fields plus hookgate's)::

    command: ["python3", "/abs/path/review_gate.py"]   # required, an argv list (no shell)
    dir: /work/hooks                                   # working directory
    env: {PICOCLAW_HOOK_LOG_FILE: /tmp/gate.log}       # set for the process
    allowed_env_vars: [OPENAI_API_KEY]                 # passed from hookgate's environment
    observe: [tool_exec_start, agent.tool.exec_end]    # runtime events it is notified of
    intercept: [before_tool, approve_tool]             # stages it declares (hello modes)
    transport: stdio                                   # the only transport
    name: py_review_gate                               # sent in hook.hello (default: hook name)
    instance: picoclaw:py_review_gate                  # same instance: one shared process
    hello_timeout_ms: 5000                             # deadline for the hook.hello answer
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from hookgate.handlers.subprocess.runner import base_environment
from hookgate.runtime_kinds import ObserveFilter

__all__ = [
    "DEFAULT_HELLO_TIMEOUT_MS",
    "INTERCEPT_STAGES",
    "MODE_ORDER",
    "ProcessSpec",
    "event_mode",
    "missing_program",
]

#: PicoClaw's interceptable stages and the hello mode each one enables.
INTERCEPT_STAGES: Final[Mapping[str, str]] = {
    "before_llm": "llm",
    "after_llm": "llm",
    "before_tool": "tool",
    "after_tool": "tool",
    "approve_tool": "approve",
}
MODE_ORDER: Final = ("observe", "llm", "tool", "approve")
_EVENT_MODES: Final[Mapping[str, str]] = {
    "pre_tool_use": "tool",
    "post_tool_use": "tool",
    "before_llm": "llm",
    "after_llm": "llm",
    "approve_tool": "approve",
    "runtime_event": "observe",
}
DEFAULT_HELLO_TIMEOUT_MS: Final = 5000


def event_mode(event: str) -> str | None:
    """The hello mode a hookgate event needs (``tool`` for pre_tool_use, …)."""
    return _EVENT_MODES.get(event)


@dataclass(frozen=True, slots=True)
class ProcessSpec:
    command: tuple[str, ...]
    dir: str | None = None
    env: tuple[tuple[str, str], ...] = ()
    allowed_env_vars: tuple[str, ...] = ()
    observe: ObserveFilter = None
    intercept: tuple[str, ...] = ()
    name: str | None = None
    instance: str | None = None
    hello_timeout_s: float = DEFAULT_HELLO_TIMEOUT_MS / 1000

    def modes(self, event: str | None = None) -> tuple[str, ...]:
        """Hello modes, in PicoClaw's order: declared ones, else the mode ``event`` needs."""
        wanted = {INTERCEPT_STAGES[stage] for stage in self.intercept if stage}
        if self.observe is not None:
            wanted.add("observe")
        if not wanted and event is not None:
            mode = event_mode(event)
            if mode is not None:
                wanted.add(mode)
        return tuple(mode for mode in MODE_ORDER if mode in wanted)

    @property
    def process_identity(self) -> tuple[Any, ...]:
        """What must be equal for two hooks to share one process."""
        return (self.command, self.dir, self.env, self.allowed_env_vars, self.name)


#: Interpreters whose first argument is the hook's script: a missing script is as fatal as a
#: missing program (``python3 /tmp/review_gate.py``).
_INTERPRETER: Final = re.compile(r"(python[0-9.]*|node|nodejs|deno|bun|bash|sh|zsh|ruby|perl|php)")
_SCRIPT_SUFFIXES: Final = frozenset(
    {".py", ".js", ".mjs", ".cjs", ".ts", ".sh", ".bash", ".rb", ".pl", ".php"}
)


def missing_program(spec: ProcessSpec) -> str | None:
    """What of the hook's command does not exist on this host (``None`` when all is there).

    Checked where a hook file is loaded or checked, because at run time a process hook that
    cannot start fails by its policy, and PicoClaw's interceptors fail open.
    """
    where = Path(spec.dir) if spec.dir else Path.cwd()
    if spec.dir and not where.is_dir():
        return f"dir {spec.dir!r} is not a directory"
    program = spec.command[0]
    if "/" in program:
        path = where / program
        if not path.is_file():
            return f"command {program!r} does not exist" + (
                f" (relative to {str(where)!r})" if not Path(program).is_absolute() else ""
            )
        if not os.access(path, os.X_OK):
            return f"command {program!r} is not executable"
    else:
        search = base_environment(spec.allowed_env_vars, dict(spec.env)).get("PATH")
        if shutil.which(program, path=search) is None:
            return f"command {program!r} is not on the hook's PATH ({search})"
    if _INTERPRETER.fullmatch(Path(program).name) and len(spec.command) > 1:
        script = spec.command[1]
        looks_like_file = "/" in script or Path(script).suffix in _SCRIPT_SUFFIXES
        if not script.startswith("-") and looks_like_file and not (where / script).is_file():
            return f"script {script!r} of command {program!r} does not exist"
    return None
