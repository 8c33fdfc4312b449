"""A process hook's config, checked once: what to start and which calls it takes.

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
from hookgate.integrations.picoclaw.runtime_events import ObserveFilter, normalize_observe

__all__ = [
    "INTERCEPT_STAGES",
    "MODE_ORDER",
    "ProcessSpec",
    "config_problems",
    "event_mode",
    "missing_program",
    "parse_spec",
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
_KEYS: Final = frozenset(
    {
        "state",  # hook state (hookgate.state), validated with the definition
        "command",
        "dir",
        "env",
        "allowed_env_vars",
        "observe",
        "intercept",
        "transport",
        "name",
        "instance",
        "hello_timeout_ms",
    }
)
_ENV_NAME: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
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


def config_problems(config: Mapping[str, Any]) -> list[str]:
    problems: list[str] = []
    try:
        parse_spec(config)
    except ValueError as exc:
        problems.extend(str(arg) for arg in exc.args)
    return problems


def parse_spec(config: Mapping[str, Any]) -> ProcessSpec:
    """A :class:`ProcessSpec` from hook config; ValueError with one message per problem."""
    problems: list[str] = []
    unknown = sorted(set(config) - _KEYS)
    if unknown:
        problems.append(f"unknown process config key(s): {', '.join(unknown)}")
    command = config.get("command")
    if (
        not isinstance(command, list | tuple)
        or not command
        or not all(isinstance(part, str) for part in command)
        or not command[0]
    ):
        problems.append(
            "process hooks need config.command: a non-empty list such as "
            '["python3", "/path/hook.py"]'
        )
        command = ()
    transport = config.get("transport") or "stdio"
    if transport != "stdio":
        problems.append(f"transport must be 'stdio' (the only one supported), got {transport!r}")
    directory = config.get("dir")
    if directory is not None and (not isinstance(directory, str) or not directory):
        problems.append("dir must be a directory path")
    env = config.get("env") or {}
    if not isinstance(env, Mapping) or not all(
        isinstance(k, str) and _ENV_NAME.fullmatch(k) and isinstance(v, str) for k, v in env.items()
    ):
        problems.append("env must map variable names to string values")
        env = {}
    allowed = config.get("allowed_env_vars") or []
    if not isinstance(allowed, list | tuple) or not all(
        isinstance(name, str) and _ENV_NAME.fullmatch(name) for name in allowed
    ):
        problems.append("allowed_env_vars must be a list of environment variable names")
        allowed = []
    observe: ObserveFilter = None
    raw_observe = config.get("observe")
    if raw_observe is not None:
        if not isinstance(raw_observe, list | tuple):
            problems.append("observe must be a list of runtime event kinds")
        else:
            try:
                observe = normalize_observe(raw_observe)
            except ValueError as exc:
                problems.append(f"observe: {exc}")
    intercept = config.get("intercept") or []
    if not isinstance(intercept, list | tuple) or not all(isinstance(s, str) for s in intercept):
        problems.append("intercept must be a list of stage names")
        intercept = []
    for stage in intercept:
        if stage and stage not in INTERCEPT_STAGES:
            problems.append(
                f"intercept: unknown stage {stage!r}; expected "
                f"{', '.join(INTERCEPT_STAGES)}"
            )
    name = config.get("name")
    if name is not None and not isinstance(name, str):
        problems.append("name must be a string")
    instance = config.get("instance")
    if instance is not None and (not isinstance(instance, str) or not instance):
        problems.append("instance must be a non-empty string")
    hello = config.get("hello_timeout_ms", DEFAULT_HELLO_TIMEOUT_MS)
    if not isinstance(hello, int) or isinstance(hello, bool) or not 1 <= hello <= 60000:
        problems.append("hello_timeout_ms must be an integer between 1 and 60000")
        hello = DEFAULT_HELLO_TIMEOUT_MS
    if problems:
        raise ValueError(*problems)
    return ProcessSpec(
        command=tuple(command),
        dir=directory,
        env=tuple(sorted(env.items())),
        allowed_env_vars=tuple(allowed),
        observe=observe,
        intercept=tuple(intercept),
        name=name or None,
        instance=instance,
        hello_timeout_s=hello / 1000,
    )


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
