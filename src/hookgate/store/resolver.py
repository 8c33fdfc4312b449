"""Hook resolution from memory, kept in step with the store.

:class:`StoreHookSource` is the gateway's :class:`hookgate.registry.HookSource`. It holds a
snapshot of every enabled hook, compiled once per (id, version), indexed by event, and
answers ``resolve``/``has_event`` without touching the database. It follows the store's hook
changes:

* a change made through the same store object, or heard from another process on PostgreSQL
  (``LISTEN``/``NOTIFY``), names the hook: when it is the next version, only that hook is
  read again and only its event's list rebuilt (an import of N hooks costs N row reads on
  every replica, not N reloads of the whole table);
* a gap in the versions (a missed notification), a change naming no hook (builtin seeding)
  or a LISTEN connection that came back reloads everything;
* otherwise within ``poll_interval_s`` (SQLite shared by several processes, or a missed
  notification): one indexed single-row read, off the hot path.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Sequence
from typing import Final

from hookgate.compiled_hook import HookList
from hookgate.log import log_event
from hookgate.matcher_index import SelectingSource, Selections, keep_for
from hookgate.registry import CompiledHook, applies_to, compile_hook
from hookgate.store.base import Caller, HookChange, HookFilter, HookRecord, NotFound, Store

__all__ = ["StoreHookSource"]

_Key = tuple[str, str | None, str | None]
_NO_HOOKS: Final[tuple[CompiledHook, ...]] = ()
#: More changes than this waiting at once: one full reload is cheaper than row reads.
MAX_INCREMENTAL: Final = 64


class StoreHookSource(SelectingSource):
    """A :class:`~hookgate.registry.HookSource` over a store; ``await start()`` first."""

    def __init__(self, store: Store, *, poll_interval_s: float = 1.0) -> None:
        self.store = store
        self.poll_interval_s = poll_interval_s
        self.version = -1
        #: Snapshot changes applied (a full reload or one incremental step).
        self.reloads = 0
        #: Of those, reloads of every hook.
        self.full_reloads = 0
        # Enabled hooks by event, then by id: what a change edits.
        self._events: dict[str, dict[str, CompiledHook]] = {}
        self._by_event: dict[str, tuple[CompiledHook, ...]] = {}
        #: The handler types of the hooks served (the engine records rule history only while
        #: a ``rule`` hook is among them).
        self.handler_types: frozenset[str] = frozenset()
        self._cache: dict[_Key, HookList] = {}
        self._selections = Selections()
        self._pending: dict[int, HookChange] = {}
        self._wanted = -1
        self._full_wanted = False
        self._reloading: asyncio.Task[None] | None = None
        self._poller: asyncio.Task[None] | None = None
        self._lock = asyncio.Lock()

    # -- HookSource -------------------------------------------------------------------------

    def has_event(self, event: str) -> bool:
        return event in self._by_event

    def resolve(self, event: str, tenant_id: str | None, agent_id: str | None) -> HookList:
        key = (event, tenant_id, agent_id)
        cache = self._cache
        hooks = cache.get(key)
        if hooks is None:
            candidates = self._by_event.get(event, _NO_HOOKS)
            hooks = HookList(
                c for c in candidates if applies_to(c.definition, tenant_id, agent_id)
            )
            if keep_for(cache, tenant_id, agent_id):  # agents pick their ids: bounded
                cache[key] = hooks
        return hooks

    # -- lifecycle --------------------------------------------------------------------------

    async def start(self) -> None:
        """Load the hooks, then follow changes (listener, NOTIFY, polling)."""
        await self.refresh()
        self.store.add_change_listener(self._on_change)
        self.store.add_resync_listener(self._on_resync)
        await self.store.watch_changes()
        if self._poller is None and self.poll_interval_s > 0:
            self._poller = asyncio.get_running_loop().create_task(
                self._poll(), name="hookgate-hook-poller"
            )

    async def close(self) -> None:
        self.store.remove_change_listener(self._on_change)
        self.store.remove_resync_listener(self._on_resync)
        for task in (self._poller, self._reloading):
            if task is not None:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
        self._poller = self._reloading = None

    async def refresh(self) -> None:
        """Reload every hook now."""
        async with self._lock:
            await self._reload_all()

    async def catch_up(self) -> None:
        """Return once every change heard so far is served (read-your-writes for a caller
        that just changed a hook through this store)."""
        if self._behind():
            await self._catch_up()

    def snapshot(self) -> Sequence[CompiledHook]:
        """Every enabled hook currently served (for diagnostics)."""
        return [hook for hooks in self._by_event.values() for hook in hooks]

    # -- loading ----------------------------------------------------------------------------

    async def _reload_all(self) -> None:
        self._full_wanted = False
        version = await self.store.hooks_version()
        records = await self.store.list_hooks(Caller.system(), HookFilter(enabled=True))
        events: dict[str, dict[str, CompiledHook]] = {}
        for record in records:
            events.setdefault(record.definition.event, {})[record.id] = self._compiled(record)
        self._events = events
        # Swap whole objects: a resolve() running meanwhile sees the old or the new set.
        by_event = {event: _ordered(hooks) for event, hooks in events.items()}
        self.handler_types = _handler_types(by_event)  # first: a new rule hook is seen at once
        self._by_event = by_event
        self._cache = {}
        self._selections = Selections()
        self.version = max(self.version, version)
        self.reloads += 1
        self.full_reloads += 1

    async def _apply(self, changes: Sequence[HookChange]) -> None:
        """Read again only the hooks these consecutive changes name."""
        ids = list(dict.fromkeys(change.hook_id for change in changes if change.hook_id))
        records: dict[str, HookRecord | None] = {}
        for hook_id in ids:
            try:
                records[hook_id] = await self.store.get_hook(Caller.system(), hook_id)
            except NotFound:  # deleted since
                records[hook_id] = None
        # Compiled first (compiling may fail): nothing is changed until all are ready.
        fresh: dict[str, CompiledHook | None] = {}
        for hook_id, record in records.items():
            enabled = record is not None and record.definition.enabled
            fresh[hook_id] = self._compiled(record) if record is not None and enabled else None
        touched: set[str] = set()
        for hook_id, hook in fresh.items():
            for event, hooks in self._events.items():
                if hooks.pop(hook_id, None) is not None:
                    touched.add(event)
                    break
            if hook is not None:
                self._events.setdefault(hook.definition.event, {})[hook_id] = hook
                touched.add(hook.definition.event)
        by_event = dict(self._by_event)
        for event in touched:
            if self._events.get(event):
                by_event[event] = _ordered(self._events[event])
            else:
                self._events.pop(event, None)
                by_event.pop(event, None)
        # Swapped whole: a resolve() running meanwhile sees the old or the new lists.
        self.handler_types = _handler_types(by_event)  # first: a new rule hook is seen at once
        self._by_event = by_event
        self._cache = {}
        self._selections = Selections()
        self.version = max(self.version, changes[-1].version)
        self.reloads += 1

    def _compiled(self, record: HookRecord) -> CompiledHook:
        """The compiled hook for this record, reused while its version is unchanged."""
        current = next((h[record.id] for h in self._events.values() if record.id in h), None)
        if current is not None and current.definition.version == record.version:
            return current
        return compile_hook(record.definition)

    # -- change following -------------------------------------------------------------------

    def _behind(self) -> bool:
        return self._full_wanted or self._wanted > self.version

    def _on_change(self, change: HookChange) -> None:
        if change.version <= self.version:
            return
        self._pending[change.version] = change
        self._wanted = max(self._wanted, change.version)
        self._schedule()

    def _on_resync(self) -> None:
        # The LISTEN connection came back: whatever was announced meanwhile went unheard.
        self._full_wanted = True
        self._schedule()

    def _schedule(self) -> None:
        if self._reloading is None or self._reloading.done():
            with contextlib.suppress(RuntimeError):  # no running loop: the poller catches up
                self._reloading = asyncio.get_running_loop().create_task(self._catch_up())

    async def _catch_up(self) -> None:
        # Coalesces bursts: one step covers every change announced before it started.
        while self._behind():
            before = self.version
            try:
                async with self._lock:
                    await self._step()
            except Exception as exc:
                log_event("hookgate.store.reload_failed", error=str(exc))
                return
            if self.version <= before and not self._full_wanted:
                return  # not visible yet: the poller will catch up

    async def _step(self) -> None:
        if not self._behind():
            return
        changes = [self._pending[v] for v in sorted(self._pending) if v > self.version]
        self._pending.clear()
        consecutive = [c.version for c in changes] == list(
            range(self.version + 1, self.version + 1 + len(changes))
        )
        if (
            changes
            and consecutive
            and not self._full_wanted
            and len(changes) <= MAX_INCREMENTAL
            and all(change.hook_id for change in changes)
        ):
            await self._apply(changes)
        else:
            await self._reload_all()

    async def _poll(self) -> None:
        while True:
            await asyncio.sleep(self.poll_interval_s)
            try:
                stored = await self.store.hooks_version()
                catching_up = self._reloading is not None and not self._reloading.done()
                # A change nobody announced, or one announced that no step is applying.
                if stored > self._wanted or (stored != self.version and not catching_up):
                    await self.refresh()
            except Exception as exc:  # keep serving the last snapshot; try again next tick
                log_event("hookgate.store.reload_failed", error=str(exc))


def _handler_types(by_event: dict[str, tuple[CompiledHook, ...]]) -> frozenset[str]:
    return frozenset(h.definition.handler_type for hooks in by_event.values() for h in hooks)


def _ordered(hooks: dict[str, CompiledHook]) -> tuple[CompiledHook, ...]:
    return tuple(sorted(hooks.values(), key=lambda c: c.sort_key))
