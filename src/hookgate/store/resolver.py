"""Hook resolution from memory, kept in step with the store.

:class:`StoreHookSource` is the gateway's :class:`hookgate.registry.HookSource`. It holds a
snapshot of every enabled hook, compiled once per (id, version), indexed by event, and
answers ``resolve``/``has_event`` without touching the database. The snapshot is reloaded
when the store's hook version moves:

* at once after a change made through the same store object (a change listener);
* at once after a change made by another process on PostgreSQL (``LISTEN``/``NOTIFY``);
* otherwise within ``poll_interval_s`` (SQLite shared by several processes, or a missed
  notification): one indexed single-row read, off the hot path.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Sequence
from typing import Final

from hookgate.log import log_event
from hookgate.matcher_index import SelectingSource, Selections
from hookgate.registry import CompiledHook, applies_to, compile_hook
from hookgate.store.base import Caller, HookFilter, Store

__all__ = ["StoreHookSource"]

_Key = tuple[str, str | None, str | None]
_NO_HOOKS: Final[tuple[CompiledHook, ...]] = ()


class StoreHookSource(SelectingSource):
    """A :class:`~hookgate.registry.HookSource` over a store; ``await start()`` first."""

    def __init__(self, store: Store, *, poll_interval_s: float = 1.0) -> None:
        self.store = store
        self.poll_interval_s = poll_interval_s
        self.version = -1
        self.reloads = 0
        self._by_event: dict[str, tuple[CompiledHook, ...]] = {}
        self._cache: dict[_Key, tuple[CompiledHook, ...]] = {}
        self._selections = Selections()
        self._compiled: dict[tuple[str, int], CompiledHook] = {}
        self._wanted = -1
        self._reloading: asyncio.Task[None] | None = None
        self._poller: asyncio.Task[None] | None = None
        self._lock = asyncio.Lock()

    # -- HookSource -------------------------------------------------------------------------

    def has_event(self, event: str) -> bool:
        return event in self._by_event

    def resolve(
        self, event: str, tenant_id: str | None, agent_id: str | None
    ) -> tuple[CompiledHook, ...]:
        key = (event, tenant_id, agent_id)
        cache = self._cache
        hooks = cache.get(key)
        if hooks is None:
            candidates = self._by_event.get(event, _NO_HOOKS)
            hooks = tuple(c for c in candidates if applies_to(c.definition, tenant_id, agent_id))
            cache[key] = hooks
        return hooks

    # -- lifecycle --------------------------------------------------------------------------

    async def start(self) -> None:
        """Load the hooks, then follow changes (listener, NOTIFY, polling)."""
        await self.refresh()
        self.store.add_change_listener(self._on_change)
        await self.store.watch_changes()
        if self._poller is None and self.poll_interval_s > 0:
            self._poller = asyncio.get_running_loop().create_task(
                self._poll(), name="hookgate-hook-poller"
            )

    async def close(self) -> None:
        self.store.remove_change_listener(self._on_change)
        for task in (self._poller, self._reloading):
            if task is not None:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
        self._poller = self._reloading = None

    async def refresh(self) -> None:
        """Reload now (read-your-writes for a caller that just changed a hook)."""
        async with self._lock:
            version = await self.store.hooks_version()
            records = await self.store.list_hooks(Caller.system(), HookFilter(enabled=True))
            compiled: dict[tuple[str, int], CompiledHook] = {}
            by_event: dict[str, list[CompiledHook]] = {}
            for record in records:
                key = (record.id, record.version)
                hook = self._compiled.get(key) or compile_hook(record.definition)
                compiled[key] = hook
                by_event.setdefault(record.definition.event, []).append(hook)
            # Swap whole objects: a resolve() running meanwhile sees the old or the new set.
            self._by_event = {
                event: tuple(sorted(hooks, key=lambda c: c.sort_key))
                for event, hooks in by_event.items()
            }
            self._cache = {}
            self._selections = Selections()
            self._compiled = compiled
            self.version = max(self.version, version)
            self.reloads += 1

    def snapshot(self) -> Sequence[CompiledHook]:
        """Every enabled hook currently served (for diagnostics)."""
        return [hook for hooks in self._by_event.values() for hook in hooks]

    # -- change following -------------------------------------------------------------------

    def _on_change(self, version: int) -> None:
        if version <= self.version:
            return
        self._wanted = max(self._wanted, version)
        if self._reloading is None or self._reloading.done():
            with contextlib.suppress(RuntimeError):  # no running loop: the poller catches up
                self._reloading = asyncio.get_running_loop().create_task(self._catch_up())

    async def _catch_up(self) -> None:
        # Coalesces bursts: one reload covers every change announced before it started.
        while self._wanted > self.version:
            before = self.version
            try:
                await self.refresh()
            except Exception as exc:
                log_event("hookgate.store.reload_failed", error=str(exc))
                return
            if self.version <= before:  # not visible yet: the poller will catch up
                return

    async def _poll(self) -> None:
        while True:
            await asyncio.sleep(self.poll_interval_s)
            try:
                if await self.store.hooks_version() != self.version:
                    await self.refresh()
            except Exception as exc:  # keep serving the last snapshot; try again next tick
                log_event("hookgate.store.reload_failed", error=str(exc))
