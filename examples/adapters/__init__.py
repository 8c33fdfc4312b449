"""One small agent per framework, guarded by the same ``examples/hooks.yaml``.

Each runs offline with the framework's own scripted model (swap in a real model to use it):
the model asks for ``rm -rf /`` (blocked by the hooks file), then ``ls`` (runs).
"""

from __future__ import annotations

from pathlib import Path

import hookgate

HOOKS = Path(__file__).resolve().parent.parent / "hooks.yaml"
DANGEROUS = "rm -rf / --no-preserve-root"


def engine() -> hookgate.Engine:
    """An engine with the example hooks (``examples/hooks.yaml``)."""
    engine = hookgate.Engine()
    engine.load(HOOKS)
    return engine


def shell(cmd: str) -> str:
    """The tool every example agent gets: reports what it would run."""
    print(f"tool ran: {cmd}")
    return f"ran {cmd}"
