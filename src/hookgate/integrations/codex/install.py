"""``hookgate codex install|uninstall``: hookgate in Codex CLI's ``hooks.json``, trusted.

Codex runs a hook only when it is trusted: ``config.toml`` holds, per handler,
``[hooks.state."<hooks.json path>:<event_snake>:<group>:<handler>"] trusted_hash =
"sha256:…"``, the SHA-256 of the compact, key-sorted JSON of the handler group. An untrusted
or edited hook is skipped without a word, so ``install`` writes those entries itself (the
same hash Codex computes) in a block of its own at the end of ``config.toml``, which
``uninstall`` takes out again byte for byte.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from hookgate.errors import HookgateError
from hookgate.integrations.hooks_json import HooksFile, HooksFileError

__all__ = [
    "DEFAULT_TIMEOUT_S",
    "CodexInstall",
    "InstallError",
    "bridge_command",
    "codex_home",
    "install",
    "trust_hash",
    "uninstall",
]

#: Seconds Codex gives hookgate per event (its own default is 600).
DEFAULT_TIMEOUT_S: Final = 30
_BEGIN: Final = "# >>> hookgate codex: trusted hooks (written by `hookgate codex install`)"
_END: Final = "# <<< hookgate codex"
_BLOCK: Final = re.compile(re.escape("\n" + _BEGIN) + r".*?" + re.escape(_END) + r"\n",
                           re.DOTALL)


class InstallError(HookgateError, ValueError):
    """hooks.json or config.toml cannot be read or does not have Codex's shape."""


@dataclass(slots=True)
class CodexInstall:
    hooks_json: Path
    config_toml: Path
    events: list[str] = field(default_factory=list)
    removed: int = 0


def codex_home(explicit: str | None = None, environ: Mapping[str, str] | None = None) -> Path:
    env = os.environ if environ is None else environ
    if explicit:
        return Path(explicit).expanduser()
    if env.get("CODEX_HOME"):
        return Path(env["CODEX_HOME"]).expanduser()
    return Path.home() / ".codex"


def bridge_command(executable: str, *, config: str | None, gateway: str | None,
                   agent: str = "codex", timeout_s: int = DEFAULT_TIMEOUT_S) -> str:
    """The hook command for ``hookgate <agent> --config ABS`` or ``--gateway URL``: the shell
    relay where it can serve, else that command line itself; quoted for a shell."""
    from hookgate.integrations.claude_code.shell_relay import hook_command

    options = (["--gateway", gateway] if gateway
               else ["--config", str(Path(config).resolve())] if config else [])
    return hook_command(executable, agent, options, timeout_s)


def _snake(event: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", event).lower()


def trust_hash(event: str, group: Mapping[str, Any]) -> str:
    """Codex's hash of one handler group: the compact, key-sorted JSON of the event's snake
    name, the matcher (when there is one) and the handlers with their defaults filled in."""
    handlers = []
    for handler in group.get("hooks", []):
        normal = {"type": handler.get("type", "command"), "command": handler.get("command"),
                  "timeout": handler.get("timeout", 600), "async": handler.get("async", False)}
        if handler.get("statusMessage"):
            normal["statusMessage"] = handler["statusMessage"]
        handlers.append(normal)
    document: dict[str, Any] = {"event_name": _snake(event), "hooks": handlers}
    if group.get("matcher") is not None:
        document["matcher"] = group["matcher"]
    text = json.dumps(document, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()


def _trust_block(hooks: HooksFile, document: Mapping[str, Any]) -> str:
    lines = ["", _BEGIN]
    for event, index, group in hooks.ours(document):
        key = f"{hooks.path}:{_snake(event)}:{index}:0"
        lines.append(f"[hooks.state.{json.dumps(key)}]")
        lines.append(f"trusted_hash = {json.dumps(trust_hash(event, group))}")
    lines.append(_END)
    return "\n".join(lines) + "\n"


def install(home: Path, command: str, events: Sequence[str], *,
            timeout_s: int = DEFAULT_TIMEOUT_S) -> CodexInstall:
    """Add one hookgate group per event (replacing an earlier install's) and trust them."""
    hooks = HooksFile((home / "hooks.json").resolve(), "codex")
    config_toml = home / "config.toml"
    try:
        document = hooks.install(events, {"hooks": [
            {"type": "command", "command": command, "timeout": timeout_s}]})
    except HooksFileError as exc:
        raise InstallError(str(exc)) from None
    config = config_toml.read_text(encoding="utf-8") if config_toml.exists() else ""
    config = _BLOCK.sub("", config)
    config_toml.write_text(config + _trust_block(hooks, document), encoding="utf-8")
    return CodexInstall(hooks.path, config_toml, list(events))


def uninstall(home: Path) -> CodexInstall:
    """Take out every group install wrote and its trust entries; files install created or
    changed come back as they were."""
    hooks = HooksFile((home / "hooks.json").resolve(), "codex")
    config_toml = home / "config.toml"
    try:
        removed = hooks.uninstall()
    except HooksFileError as exc:
        raise InstallError(str(exc)) from None
    if config_toml.exists():
        config = config_toml.read_text(encoding="utf-8")
        rest = _BLOCK.sub("", config)
        if rest != config:
            if rest:
                config_toml.write_text(rest, encoding="utf-8")
            else:
                config_toml.unlink()
    return CodexInstall(hooks.path, config_toml, removed=removed)
