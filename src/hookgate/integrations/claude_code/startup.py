"""What ``hookgate claude-code`` needs before anything else, shared by :mod:`.relay` and
:mod:`.main` (which must not import the rest: a failure may happen before it could) and
:mod:`.contract`: its command line, which events fail closed, and where the hooks file is.

It imports nothing but ``os`` (``typing`` and ``collections.abc`` cost a third of a Python
start, and the per-event relay must not pay it): the type names below are for mypy only.
"""

from __future__ import annotations

import os

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence
    from typing import Any, Final

__all__ = [
    "CONFIG_NAMES",
    "FAIL_CLOSED_EVENTS",
    "BridgeArgs",
    "default_config_path",
    "is_bridge_call",
    "parse_args",
]

#: Claude Code events where our own failure must stop the action (exit 2; elsewhere exit 1).
FAIL_CLOSED_EVENTS: Final = frozenset({"PreToolUse", "PermissionRequest", "UserPromptSubmit"})
CONFIG_NAMES: Final = ("hookgate.yaml", "hookgate.yml", "hookgate.json")

_VALUE_OPTIONS: Final = {"-c": "config", "--config": "config", "--gateway": "gateway"}


class BridgeArgs:
    __slots__ = ("config", "gateway")

    def __init__(self, config: str | None = None, gateway: str | None = None) -> None:
        self.config = config
        self.gateway = gateway


def parse_args(args: Sequence[str]) -> BridgeArgs | None:
    """``[--config FILE] [--gateway URL]`` (also ``--opt=value``); ``None`` for anything else
    (a sub-command, ``--help``), which the full CLI then handles."""
    parsed = BridgeArgs()
    index = 0
    while index < len(args):
        arg = args[index]
        name, has_value, value = arg.partition("=")
        if not name.startswith("-") or name not in _VALUE_OPTIONS:
            return None
        if not has_value:
            index += 1
            if index >= len(args):
                return None
            value = args[index]
        setattr(parsed, _VALUE_OPTIONS[name], value)
        index += 1
    return parsed


def is_bridge_call(argv: Sequence[str]) -> bool:
    """``hookgate claude-code [--config FILE] [--gateway URL]``: the per-event hook call."""
    return len(argv) >= 1 and argv[0] == "claude-code" and parse_args(argv[1:]) is not None


def default_config_path(
    data: Mapping[str, Any],
    environ: Mapping[str, str] | None = None,
    home: str | os.PathLike[str] | None = None,
) -> str | None:
    """The hooks file for ``hookgate claude-code`` when ``--config`` is not given.

    In order: ``$HOOKGATE_CLAUDE_CODE_CONFIG``; ``.claude/hookgate.yaml`` (or ``.yml``,
    ``.json``) in ``$CLAUDE_PROJECT_DIR`` or the session's ``cwd``; the same in Claude Code's
    user folder (``$CLAUDE_CONFIG_DIR``, else ``~/.claude/``). (``os.path``, not pathlib:
    this runs once per hook event, and pathlib's import costs more than the lookup.)
    """
    env = os.environ if environ is None else environ
    explicit = env.get("HOOKGATE_CLAUDE_CODE_CONFIG")
    if explicit:
        return explicit
    roots: list[str] = []
    project = env.get("CLAUDE_PROJECT_DIR") or data.get("cwd")
    if isinstance(project, str) and project:
        roots.append(os.path.join(project, ".claude"))
    user_dir = env.get("CLAUDE_CONFIG_DIR")  # Claude Code's own user folder, if moved
    if user_dir:
        roots.append(os.path.expanduser(user_dir))
    else:
        roots.append(os.path.join(os.fspath(home) if home else os.path.expanduser("~"),
                                  ".claude"))
    for root in roots:
        for name in CONFIG_NAMES:
            candidate = os.path.join(root, name)
            if os.path.isfile(candidate):
                return candidate
    return None
