"""The gateway's hook source: every stored hook, compiled, held in memory.

The engine asks :meth:`StoreHookSource.resolve` on every event, so it never touches the
database. The cache is rebuilt from the store when this gateway changes a hook, and when the
store's change counter (``hooks_version``) moves because another process changed one; a hook
whose version did not change keeps its compiled matcher and CEL program.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Final

from hookgate.log import log_event
from hookgate.registry import CompiledHook, applies_to, compile_hook
from hookgate.store import Caller, Store

__all__ = ["StoreHookSource"]

POLL_INTERVAL_S: Final = 1.0


class StoreHookSource:
    """A :class:`hookgate.registry.HookSource` over a :class:`hookgate.store.Store`."""

    def __init__(self, store: Store, *, poll_interval_s: float = POLL_INTERVAL_S) -> None:
        self._store = store
        self._poll_interval_s = poll_interval_s
        self._hooks: dict[str, CompiledHook] = {}
        self._by_event: dict[str, tuple[CompiledHook, ...]] = {}
        self._cache: dict[tuple[str, str | None, str | None], tuple[CompiledHook, ...]] = {}
        self._seen_version: int | None = None
        self._lock = asyncio.Lock()
        self._poller: asyncio.Task[None] | None = None

    # -- HookSource ---------------------------------------------------------------------------

    def has_event(self, event: str) -> bool:
        return event in self._by_event

    def resolve(
        self, event: str, tenant_id: str | None, agent_id: str | None
    ) -> tuple[CompiledHook, ...]:
        key = (event, tenant_id, agent_id)
        cached = self._cache.get(key)
        if cached is not None:
            return cached
        hooks = tuple(
            c
            for c in self._by_event.get(event, ())
            if applies_to(c.definition, tenant_id, agent_id)
        )
        if len(self._cache) > 50_000:
            self._cache = {}
        self._cache[key] = hooks
        return hooks

    def get(self, hook_id: str) -> CompiledHook | None:
        return self._hooks.get(hook_id)

    def hook_ids(self) -> list[str]:
        return list(self._hooks)

    # -- loading ------------------------------------------------------------------------------

    async def reload(self) -> None:
        """Load every hook from the store (serialised: one reload at a time)."""
        async with self._lock:
            version = await self._store.hooks_version()
            records = await self._store.list_hooks(Caller.system())
            fresh: dict[str, CompiledHook] = {}
            for record in records:
                definition = record.definition
                old = self._hooks.get(definition.id)
                if old is not None and old.definition == definition:
                    fresh[definition.id] = old
                    continue
                try:
                    fresh[definition.id] = compile_hook(definition)
                except Exception as exc:  # a stored hook that no longer compiles stays out
                    log_event("hookgate.hook_compile_failed", hook_id=definition.id, error=str(exc))
            by_event: dict[str, list[CompiledHook]] = {}
            for compiled in fresh.values():
                by_event.setdefault(compiled.definition.event, []).append(compiled)
            self._hooks = fresh
            self._by_event = {
                event: tuple(sorted(hooks, key=lambda c: c.sort_key))
                for event, hooks in by_event.items()
            }
            self._cache = {}
            self._seen_version = version

    async def refresh_if_changed(self) -> bool:
        version = await self._store.hooks_version()
        if version == self._seen_version:
            return False
        await self.reload()
        return True

    def start_polling(self) -> None:
        if self._poller is None:
            self._poller = asyncio.get_running_loop().create_task(
                self._poll(), name="hookgate-hook-poll"
            )

    async def stop_polling(self) -> None:
        if self._poller is not None:
            self._poller.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._poller
            self._poller = None

    async def _poll(self) -> None:
        while True:
            await asyncio.sleep(self._poll_interval_s)
            try:
                await self.refresh_if_changed()
            except Exception as exc:  # keep serving the last good set of hooks
                log_event("hookgate.hook_reload_failed", error=str(exc))
