"""What ``hookgate claude-code`` needs before anything else, shared by :mod:`.main` (which
must not import the rest: a failure may happen before it could) and :mod:`.contract`: which
events fail closed, and where the hooks file is."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any, Final

__all__ = ["CONFIG_NAMES", "FAIL_CLOSED_EVENTS", "default_config_path"]

#: Claude Code events where our own failure must stop the action (exit 2; elsewhere exit 1).
FAIL_CLOSED_EVENTS: Final = frozenset({"PreToolUse", "PermissionRequest", "UserPromptSubmit"})
CONFIG_NAMES: Final = ("hookgate.yaml", "hookgate.yml", "hookgate.json")


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
