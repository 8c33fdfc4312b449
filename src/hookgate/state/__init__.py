"""Hook state: a small key-value map per session and per run, with a TTL.

See :mod:`hookgate.state.model` for how hooks use it. Stores: :class:`MemoryStateStore`
(default), :class:`FileStateStore` (the library, persisted), and for the gateway
:mod:`hookgate.state.shared` (its SQL store, or Redis).

    engine = Engine()
    use_state_store(engine, FileStateStore("hook-state.json"))
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from hookgate.state.model import (
    DEFAULT_TTL_S,
    HookStateView,
    ScopeKey,
    ScopeView,
    StateChange,
    StateError,
)

if TYPE_CHECKING:
    from hookgate.state.stores import FileStateStore, MemoryStateStore, StateStore

__all__ = [
    "DEFAULT_TTL_S",
    "FileStateStore",
    "HookStateView",
    "MemoryStateStore",
    "ScopeKey",
    "ScopeView",
    "StateChange",
    "StateError",
    "StateStore",
    "use_state_store",
]


def __getattr__(name: str) -> Any:
    # The stores are imported on first use: the definitions' validation imports this
    # package (for state.model), and hookgate claude-code should not pay for pathlib.
    if name in ("FileStateStore", "MemoryStateStore", "StateStore"):
        from hookgate.state import stores

        return getattr(stores, name)
    raise AttributeError(f"module 'hookgate.state' has no attribute {name!r}")


def use_state_store(engine: Any, store: StateStore) -> None:
    """Keep ``engine``'s hook state in ``store`` (set before the first event)."""
    engine.services.hook_state = store
