"""Where hook state lives: in memory, in a JSON file (the library), in the gateway's SQL
store or in Redis (gateway replicas). All of them drop expired entries on read, and all keep
the counters and stamps of rule hooks (:mod:`hookgate.state.rules`) beside the entries."""

from __future__ import annotations

import contextlib
import json
import os
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, Protocol

from hookgate.state.model import ScopeKey, StateChange
from hookgate.state.rules import Admission, RuleKey, Stamp

try:
    import fcntl
except ImportError:  # not on Windows: one process per state file there
    fcntl = None  # type: ignore[assignment]

__all__ = ["FileStateStore", "MemoryStateStore", "StateStore"]

Clock = Callable[[], float]


class StateStore(Protocol):
    async def load(self, keys: Sequence[ScopeKey]) -> dict[ScopeKey, dict[str, Any]]:
        """The live entries of each scope (absent scopes map to ``{}``)."""
        ...

    async def apply(self, changes: Sequence[StateChange]) -> None:
        """Set (value) or delete (``None``) each entry, with the change's TTL."""
        ...


class MemoryStateStore:
    """State in this process only (an engine's default when nothing else is configured)."""

    def __init__(self, *, clock: Clock = time.time) -> None:
        self.clock = clock
        self._lock = threading.Lock()
        self._scopes: dict[ScopeKey, dict[str, tuple[Any, float]]] = {}
        #: Rule counters and stamps: (value, expires_at).
        self._rules: dict[RuleKey, tuple[float, float]] = {}
        self._rules_swept_at = 0.0

    async def load(self, keys: Sequence[ScopeKey]) -> dict[ScopeKey, dict[str, Any]]:
        now = self.clock()
        with self._lock:
            return {key: {name: value for name, (value, expires) in
                          self._scopes.get(key, {}).items() if expires > now} for key in keys}

    async def apply(self, changes: Sequence[StateChange]) -> None:
        if changes:
            with self._lock:
                self._apply_locked(changes, self.clock())

    def _apply_locked(self, changes: Sequence[StateChange], now: float) -> None:
        for change in changes:
            entries = self._scopes.setdefault(change.key, {})
            if change.value is None:
                entries.pop(change.name, None)
            else:
                entries[change.name] = (change.value, now + change.ttl_s)
            live = {name: item for name, item in entries.items() if item[1] > now}
            if live:
                self._scopes[change.key] = live
            else:
                self._scopes.pop(change.key, None)

    # -- rule counters and stamps (hookgate.state.rules.RuleStateStore) ---------------------
    # The *_now methods answer without an event loop: a rule hook on this store is a plain
    # function (its fast path); the async ones are the protocol every store shares.

    def admit_now(self, key: RuleKey, limit: int, ttl_s: float) -> Admission:
        with self._lock:
            now = self.clock()
            held = self._rules.get(key)
            count = int(held[0]) if held is not None and held[1] > now else 0
            if count >= limit:
                return Admission(False, count)
            expires = held[1] if held is not None and count else now + ttl_s
            self._rules[key] = (count + 1, expires)
            self._rules_changed(now)
        return Admission(True, count + 1)

    def peek_now(self, key: RuleKey) -> int:
        held = self._rules.get(key)
        return int(held[0]) if held is not None and held[1] > self.clock() else 0

    def record_now(self, stamps: Sequence[Stamp]) -> None:
        if not stamps:
            return
        with self._lock:
            now = self.clock()
            for stamp in stamps:
                held = self._rules.get(stamp.key)
                expires = now + stamp.ttl_s
                if held is not None and held[1] > now:
                    self._rules[stamp.key] = (max(held[0], stamp.at), max(held[1], expires))
                else:
                    self._rules[stamp.key] = (stamp.at, expires)
            self._rules_changed(now)

    def recall_now(self, keys: Sequence[RuleKey]) -> dict[RuleKey, float]:
        now = self.clock()
        found = {}
        for key in keys:
            held = self._rules.get(key)
            if held is not None and held[1] > now:
                found[key] = held[0]
        return found

    def _rules_changed(self, now: float) -> None:
        """Drop expired counters and stamps about once a minute (sessions come and go)."""
        if now - self._rules_swept_at >= 60.0:
            self._rules_swept_at = now
            self._rules = {key: held for key, held in self._rules.items() if held[1] > now}

    async def admit(self, key: RuleKey, limit: int, ttl_s: float) -> Admission:
        return self.admit_now(key, limit, ttl_s)

    async def peek(self, key: RuleKey) -> int:
        return self.peek_now(key)

    async def record(self, stamps: Sequence[Stamp]) -> None:
        self.record_now(stamps)

    async def recall(self, keys: Sequence[RuleKey]) -> dict[RuleKey, float]:
        return self.recall_now(keys)


class FileStateStore(MemoryStateStore):
    """State kept in one JSON file: rewritten atomically after every change (temporary file,
    fsync, rename), read back at start with expired entries dropped. Survives restarts.

    Several processes may share the file (every ``hookgate claude-code`` call is one, and
    Claude Code runs the hooks of parallel tool calls at once): each change is made under an
    exclusive lock on ``<file>.lock`` on the file as it is then, so a rule's counter never
    loses a call to a concurrent process."""

    def __init__(self, path: str | Path, *, clock: Clock = time.time) -> None:
        super().__init__(clock=clock)
        # Re-entrant: a change holds it while the memory store's own step takes it again.
        self._lock = threading.RLock()  # type: ignore[assignment]
        self.path = Path(path)
        self._read()

    @contextlib.contextmanager
    def _exclusive(self) -> Iterator[None]:
        """This process's lock and the file's, with the file read again (another process
        may have changed it since)."""
        with self._lock:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            handle = os.open(f"{self.path}.lock", os.O_CREAT | os.O_RDWR, 0o600)
            try:
                if fcntl is not None:
                    fcntl.flock(handle, fcntl.LOCK_EX)
                self._scopes = {}
                self._rules = {}
                self._read()
                yield
            finally:
                os.close(handle)  # releases the file lock

    def _read(self) -> None:
        try:
            document = json.loads(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return
        except (OSError, ValueError) as exc:
            raise ValueError(f"hook state file {self.path} is unreadable: {exc}") from None
        now = self.clock()
        entries = document.get("entries") if isinstance(document, dict) else None
        if not isinstance(entries, list):
            raise ValueError(f"hook state file {self.path} has no 'entries' list")
        for item in entries:
            try:
                key = ScopeKey(str(item["tenant_id"]), str(item["namespace"]),
                               str(item["scope"]), str(item["scope_id"]))
                expires = float(item["expires_at"])
                name = str(item["key"])
                value = item["value"]
            except (KeyError, TypeError, ValueError):
                continue  # one bad entry does not cost the others
            if expires > now:
                self._scopes.setdefault(key, {})[name] = (value, expires)
        for item in document.get("rules", ()):
            try:
                tenant, parts, value, expires = item
                rule_key = RuleKey(str(tenant), tuple(parts))
                held = (float(value), float(expires))
            except (TypeError, ValueError):
                continue
            if held[1] > now:
                self._rules[rule_key] = held

    def _document(self) -> str:
        entries = [
            {"tenant_id": key.tenant_id, "namespace": key.namespace, "scope": key.scope,
             "scope_id": key.scope_id, "key": name, "value": value, "expires_at": expires}
            for key, scope in self._scopes.items() for name, (value, expires) in scope.items()
        ]
        rules = [[key.tenant_id, list(key.parts), value, expires]
                 for key, (value, expires) in self._rules.items()]
        return json.dumps({"version": 1, "entries": entries, "rules": rules},
                          separators=(",", ":"))

    def _write(self, text: str) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        import tempfile  # here: the engine (and each Claude Code hook call) imports this module

        handle, temporary = tempfile.mkstemp(prefix=f".{self.path.name}.", dir=self.path.parent)
        try:
            with os.fdopen(handle, "w", encoding="utf-8") as out:
                out.write(text)
                out.flush()
                os.fsync(out.fileno())
            os.replace(temporary, self.path)
        except BaseException:
            Path(temporary).unlink(missing_ok=True)
            raise

    async def apply(self, changes: Sequence[StateChange]) -> None:
        if not changes:
            return
        import asyncio  # here: hookgate claude-code imports this package but runs no loop

        await asyncio.to_thread(self.apply_sync, changes)

    def apply_sync(self, changes: Sequence[StateChange]) -> None:
        with self._exclusive():
            self._apply_locked(changes, self.clock())
            self._write(self._document())

    def admit_now(self, key: RuleKey, limit: int, ttl_s: float) -> Admission:
        with self._exclusive():
            return super().admit_now(key, limit, ttl_s)

    def record_now(self, stamps: Sequence[Stamp]) -> None:
        if stamps:
            with self._exclusive():
                super().record_now(stamps)

    def _rules_changed(self, now: float) -> None:
        # Called with the lock held, after every counter or stamp change: persist it.
        super()._rules_changed(now)
        self._write(self._document())
