"""PicoClaw's ``hooks`` config, loaded as hookgate definitions.

Told apart by shape: a ``hooks`` object holding ``enabled``, ``defaults``, ``builtins`` or
``processes`` (a whole PicoClaw config file, or just its ``hooks`` section wrapped in one).

What each part becomes:

* ``hooks.processes.<name>`` (``enabled: true`` needed, as in PicoClaw): ``process`` hooks,
  one per stage it intercepts, all sharing one child process (``instance``). Intercept
  families follow PicoClaw: ``before_tool`` or ``after_tool`` enables both tool stages
  (``pre_tool_use``, ``post_tool_use``), ``before_llm``/``after_llm`` both LLM stages,
  ``approve_tool`` approval; a non-empty ``observe`` adds a ``runtime_event`` hook.
* ``hooks.builtins.<name>``: the hook object made by the factory registered under that
  name with :func:`register_builtin_hook` (PicoClaw's compiled-in builtins); each stage
  method it has (``before_tool``, ``after_tool``, ``before_llm``, ``after_llm``,
  ``approve_tool``, ``on_runtime_event``) becomes a ``callable`` hook.
* ``hooks.enabled: false`` loads nothing.

A process whose program (or, for an interpreter such as ``python3``, its script) does not
exist is a load error, as a failed spawn is a mount error in PicoClaw; otherwise PicoClaw's
fail-open interceptors would let every call through unchecked. ``env`` sets variables for the
process; ``allowed_env_vars`` (hookgate's addition) passes chosen ones from hookgate's own
environment, since only ``PATH``, ``HOME`` and ``LANG`` pass otherwise.

Failure policy, as in PicoClaw: interceptors fail open (``on_error``/``on_timeout: allow``),
approvals fail closed (``block``). A malformed answer (an unknown action) still blocks.

Timeouts come from ``hooks.defaults``: observer 500 ms, interceptor 5 s, approval 60 s (kept:
``approve_tool`` allows long waits, up to 24 h; interceptors are capped at hookgate's 10 s).

Order: PicoClaw runs in-process (builtin) hooks first, then process hooks, each by
*ascending* priority, then name. hookgate runs *descending* priority, then ``order``, so the
loader negates priorities, lifts builtins above every process when needed, and sets
``order`` to the PicoClaw position.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Final

from hookgate.config.formats import ConfigError, ConfigFormat
from hookgate.definition import DefinitionError, HookDefinition
from hookgate.definition_model import validate_definition
from hookgate.events import get_event
from hookgate.handlers.process.config import parse_spec
from hookgate.handlers.process.spec import INTERCEPT_STAGES, missing_program
from hookgate.runtime_kinds import normalize_observe

__all__ = [
    "DEFAULTS",
    "PICOCLAW",
    "BuiltinFactory",
    "is_picoclaw",
    "load_picoclaw",
    "register_builtin_hook",
    "unregister_builtin_hook",
]

#: PicoClaw's global timeout defaults (``hooks.defaults``), in ms.
DEFAULTS: Final[Mapping[str, int]] = {
    "observer_timeout_ms": 500,
    "interceptor_timeout_ms": 5000,
    "approval_timeout_ms": 60000,
}
_HOOKS_KEYS: Final = frozenset({"enabled", "defaults", "builtins", "processes"})
_PROCESS_KEYS: Final = frozenset(
    {
        "enabled",
        "priority",
        "transport",
        "command",
        "dir",
        "env",
        "observe",
        "intercept",
        # hookgate's addition: variables passed from the parent environment by name
        # (PicoClaw passes all of it; hookgate passes only PATH, HOME, LANG and these).
        "allowed_env_vars",
    }
)
_BUILTIN_KEYS: Final = frozenset({"enabled", "priority", "config"})
#: Stage families: any stage of a family enables all its hookgate events.
_FAMILY_EVENTS: Final[Mapping[str, tuple[str, ...]]] = {
    "llm": ("before_llm", "after_llm"),
    "tool": ("pre_tool_use", "post_tool_use"),
    "approve": ("approve_tool",),
}
_STAGE_OF_EVENT: Final[Mapping[str, str]] = {
    "before_llm": "before_llm",
    "after_llm": "after_llm",
    "pre_tool_use": "before_tool",
    "post_tool_use": "after_tool",
    "approve_tool": "approve_tool",
    "runtime_event": "observe",
}
#: Builtin hook object methods, and the events they serve.
_BUILTIN_METHODS: Final[Mapping[str, str]] = {
    "before_tool": "pre_tool_use",
    "after_tool": "post_tool_use",
    "before_llm": "before_llm",
    "after_llm": "after_llm",
    "approve_tool": "approve_tool",
    "on_runtime_event": "runtime_event",
}
_ID_NAMESPACE: Final = uuid.UUID("6b1f3c52-4d0e-5b7a-9c1e-2f7d8a9b0c3d")

BuiltinFactory = Callable[[Mapping[str, Any]], object]
_builtins: dict[str, BuiltinFactory] = {}


def register_builtin_hook(name: str, factory: BuiltinFactory) -> None:
    """Make ``hooks.builtins.<name>`` loadable: ``factory(config)`` returns the hook object."""
    if not name:
        raise ValueError("a builtin hook needs a name")
    if not callable(factory):
        raise ValueError("a builtin hook needs a factory function")
    if name in _builtins:
        raise ValueError(f"builtin hook {name!r} is already registered")
    _builtins[name] = factory


def unregister_builtin_hook(name: str) -> None:
    _builtins.pop(name, None)


def is_picoclaw(document: Any) -> bool:
    if not isinstance(document, Mapping):
        return False
    hooks = document.get("hooks")
    return isinstance(hooks, Mapping) and bool(_HOOKS_KEYS & set(hooks))


def _timeouts(defaults: Any, problems: list[str]) -> dict[str, int]:
    values = dict(DEFAULTS)
    if defaults is None:
        return values
    if not isinstance(defaults, Mapping):
        problems.append("hooks.defaults: must be an object")
        return values
    for key, value in defaults.items():
        if key not in DEFAULTS:
            problems.append(f"hooks.defaults.{key}: unknown field; expected {', '.join(DEFAULTS)}")
        elif not isinstance(value, int) or isinstance(value, bool):
            problems.append(f"hooks.defaults.{key}: must be an integer number of milliseconds")
        elif value > 0:  # PicoClaw keeps the default for values <= 0
            values[key] = value
    return values


def _policy(event: str, timeouts: Mapping[str, int]) -> dict[str, Any]:
    if event == "runtime_event":
        timeout, policy = timeouts["observer_timeout_ms"], "allow"
    elif event == "approve_tool":
        timeout, policy = timeouts["approval_timeout_ms"], "block"
    else:
        timeout, policy = timeouts["interceptor_timeout_ms"], "allow"
    # PicoClaw's values are kept up to the longest the event allows (approvals: hours).
    longest = get_event(event).max_timeout_ms
    return {"timeout_ms": min(timeout, longest), "on_error": policy, "on_timeout": policy}


def _entries(
    hooks: Mapping[str, Any], section: str, allowed: frozenset[str], problems: list[str]
) -> list[tuple[str, Mapping[str, Any]]]:
    """Enabled entries of ``hooks.<section>``, sorted by name, with unknown keys reported."""
    raw = hooks.get(section)
    if raw is None:
        return []
    if not isinstance(raw, Mapping):
        problems.append(f"hooks.{section}: must be an object of named entries")
        return []
    out = []
    for name in sorted(raw):
        entry = raw[name]
        where = f"hooks.{section}.{name}"
        if not isinstance(entry, Mapping):
            problems.append(f"{where}: must be an object")
            continue
        for key in sorted(set(entry) - allowed):
            hint = (
                " (PicoClaw timeouts are global: set hooks.defaults.*_timeout_ms)"
                if "timeout" in key
                else ""
            )
            problems.append(f"{where}.{key}: unknown field{hint}")
        enabled = entry.get("enabled", False)
        if not isinstance(enabled, bool):
            problems.append(f"{where}.enabled: must be true or false")
            continue
        priority = entry.get("priority", 0)
        if not isinstance(priority, int) or isinstance(priority, bool):
            problems.append(f"{where}.priority: must be an integer")
            continue
        if enabled:  # as in PicoClaw, an entry is mounted only when enabled is true
            out.append((str(name), entry))
    return out


def _process_events(
    where: str, entry: Mapping[str, Any], problems: list[str]
) -> tuple[list[str], dict[str, Any]]:
    """The events a process entry serves and its ``process`` handler config."""
    before = len(problems)
    transport = entry.get("transport") or "stdio"
    if transport != "stdio":
        problems.append(f"{where}.transport: only 'stdio' is supported, got {transport!r}")
    command = entry.get("command")
    if not isinstance(command, list) or not command or not all(
        isinstance(part, str) and part for part in command
    ):
        problems.append(f"{where}.command: must be a non-empty list of strings")
    intercept = entry.get("intercept") or []
    if not isinstance(intercept, list) or not all(isinstance(s, str) for s in intercept):
        problems.append(f"{where}.intercept: must be a list of stage names")
        intercept = []
    families = _intercepted_families(where, intercept, problems)
    observe = entry.get("observe") or []
    observing = _observing(where, observe, problems)
    if len(problems) == before and not families and not observing:
        problems.append(f"{where}: no hook modes enabled (set intercept and/or observe)")
    events = [event for family in ("llm", "tool", "approve") if family in families
              for event in _FAMILY_EVENTS[family]]
    if observing:
        events.append("runtime_event")
    config: dict[str, Any] = {
        "command": command,
        "observe": observe,
        "intercept": intercept,
        "instance": "",  # filled in by the caller
    }
    for key in ("dir", "env", "allowed_env_vars"):
        if entry.get(key) is not None:
            config[key] = entry[key]
    return events, config


def _intercepted_families(where: str, intercept: list[str], problems: list[str]) -> list[str]:
    """The event families a process entry's ``intercept`` stages name (unknown ones are
    problems)."""
    families = []
    for stage in intercept:
        if stage and stage not in INTERCEPT_STAGES:
            problems.append(
                f"{where}.intercept: unknown stage {stage!r}; expected "
                f"{', '.join(INTERCEPT_STAGES)}"
            )
        elif stage:
            families.append(INTERCEPT_STAGES[stage])
    return families


def _observing(where: str, observe: Any, problems: list[str]) -> bool:
    """Whether a process entry's ``observe`` list names runtime events to observe."""
    if not isinstance(observe, list):
        problems.append(f"{where}.observe: must be a list of event kinds")
        return False
    try:
        return normalize_observe(observe) is not None
    except ValueError as exc:
        problems.append(f"{where}.observe: {exc}")
        return False


def _builtin_events(
    where: str, name: str, entry: Mapping[str, Any], problems: list[str]
) -> list[tuple[str, Callable[..., Any]]]:
    factory = _builtins.get(name)
    if factory is None:
        known = ", ".join(sorted(_builtins)) or "none"
        problems.append(
            f"{where}: unknown builtin hook {name!r} (registered: {known}); register it with "
            "hookgate.integrations.picoclaw.config.register_builtin_hook"
        )
        return []
    config = entry.get("config") or {}
    if not isinstance(config, Mapping):
        problems.append(f"{where}.config: must be an object")
        return []
    try:
        hook = factory(config)
    except Exception as exc:
        problems.append(f"{where}: builtin factory failed: {exc}")
        return []
    stages = []
    for method, event in _BUILTIN_METHODS.items():
        function = getattr(hook, method, None)
        if callable(function):
            stages.append((event, function))
    if not stages:
        problems.append(
            f"{where}: no hook modes enabled (the object has none of "
            f"{', '.join(_BUILTIN_METHODS)})"
        )
    return stages


def load_picoclaw(document: Any, *, edition: str, base_dir: Path) -> list[HookDefinition]:
    hooks = document["hooks"]
    problems: list[str] = []
    for key in sorted(set(hooks) - _HOOKS_KEYS):
        problems.append(f"hooks.{key}: unknown field; expected {', '.join(sorted(_HOOKS_KEYS))}")
    enabled = hooks.get("enabled", True)
    if not isinstance(enabled, bool):
        problems.append("hooks.enabled: must be true or false")
    timeouts = _timeouts(hooks.get("defaults"), problems)
    builtins = _entries(hooks, "builtins", _BUILTIN_KEYS, problems)
    processes = _entries(hooks, "processes", _PROCESS_KEYS, problems)

    lift, ranked = _ranked(builtins, processes)
    raws: list[tuple[str, dict[str, Any]]] = []
    for order, (kind, name, entry) in enumerate(ranked, start=1):
        where = f"hooks.{kind}s.{name}" if kind == "builtin" else f"hooks.processes.{name}"
        priority = -entry.get("priority", 0) + (lift if kind == "builtin" else 0)
        base = {"scope": "global", "priority": priority, "order": order, "enabled": enabled}
        if kind == "process":
            before = len(problems)
            events, config = _process_events(where, entry, problems)
            config["instance"] = f"picoclaw:{name}"
            config["name"] = name
            if isinstance(config.get("dir"), str) and config["dir"]:
                config["dir"] = str((base_dir / config["dir"]).resolve())
            if enabled and len(problems) == before:
                problems.extend(f"{where}.{p}" for p in _unstartable(config))
            for event in events:
                raw = {**base, **_policy(event, timeouts), "event": event,
                       "handler_type": "process", "config": config}
                raws.append((where, _identify(raw, kind, name, event)))
        else:
            for event, function in _builtin_events(where, name, entry, problems):
                raw = {**base, **_policy(event, timeouts), "event": event,
                       "handler_type": "callable", "config": {"callable": function}}
                raws.append((where, _identify(raw, kind, name, event)))
    if problems:
        raise ConfigError(problems)
    if not enabled:
        return []  # hooks.enabled: false mounts nothing (the entries were still checked)
    return _validated(raws, edition)


def _ranked(
    builtins: list[tuple[str, Mapping[str, Any]]], processes: list[tuple[str, Mapping[str, Any]]]
) -> tuple[int, list[tuple[str, str, Mapping[str, Any]]]]:
    """The entries in PicoClaw's order (builtins first, then priority ascending) and how far
    builtins' priorities are lifted: hookgate sorts priority descending, so priorities are
    negated, and builtins lifted above the highest process hook when their ranges overlap."""
    lift = 0
    if builtins and processes:
        highest_builtin = max(entry.get("priority", 0) for _, entry in builtins)
        lowest_process = min(entry.get("priority", 0) for _, entry in processes)
        lift = max(0, highest_builtin - lowest_process + 1)
    ranked = sorted(
        [("builtin", name, entry) for name, entry in builtins]
        + [("process", name, entry) for name, entry in processes],
        key=lambda item: (item[0] != "builtin", item[2].get("priority", 0), item[1]),
    )
    return lift, ranked


def _validated(raws: list[tuple[str, dict[str, Any]]], edition: str) -> list[HookDefinition]:
    """The definitions of the raw hooks; every problem of every hook in one ConfigError."""
    problems: list[str] = []
    definitions = []
    for where, raw in raws:
        try:
            definitions.append(validate_definition(raw, edition=edition, default_scope="global"))
        except DefinitionError as exc:
            problems.extend(f"{where} ({raw['name']}).{p.field}: {p.message}" for p in exc.problems)
    if problems:
        raise ConfigError(problems)
    return definitions


def _unstartable(config: Mapping[str, Any]) -> list[str]:
    """Why the process could not start here (PicoClaw refuses to mount such a hook)."""
    try:
        spec = parse_spec(config)
    except ValueError as exc:
        return [f"config: {arg}" for arg in exc.args]
    missing = missing_program(spec)
    return [] if missing is None else [f"command: {missing}"]


def _identify(raw: dict[str, Any], kind: str, name: str, event: str) -> dict[str, Any]:
    stage = _STAGE_OF_EVENT[event]
    raw["name"] = f"{name}:{stage}"
    # Stable ids: reloading the same file keeps each hook's id (and its breaker history).
    raw["id"] = str(uuid.uuid5(_ID_NAMESPACE, f"picoclaw/{kind}/{name}/{event}"))
    return raw


PICOCLAW: Final = ConfigFormat("picoclaw", is_picoclaw, load_picoclaw)
