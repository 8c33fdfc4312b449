"""Shared circuit breakers in Redis (:class:`~hookgate.store.breakers.BreakerBackend`).

Keys (prefix ``hookgate:``): ``breaker-faults:<hook>`` a sorted set of fault times (the
window, trimmed on each fault and expiring with it), ``breaker:<hook>`` a hash (``state``,
``opened_at``, ``last_fault``) and ``breakers-open`` the set of hooks whose breaker is open.
A fault is one Lua script, so the step that reaches the threshold is exactly one, whichever
replica runs it.
"""

from __future__ import annotations

import uuid
from typing import Any, Final

from redis.asyncio import Redis

from hookgate.store.breakers import SharedBreaker

__all__ = ["RedisBreakerBackend"]

_FAULT: Final = """
local now = tonumber(ARGV[1])
local window = tonumber(ARGV[2])
local threshold = tonumber(ARGV[3])
redis.call('ZADD', KEYS[1], now, ARGV[4])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - window)
redis.call('PEXPIRE', KEYS[1], math.ceil(window * 1000))
local count = redis.call('ZCARD', KEYS[1])
if ARGV[5] ~= '' then redis.call('HSET', KEYS[2], 'last_fault', ARGV[5]) end
local state = redis.call('HGET', KEYS[2], 'state')
if state ~= 'open' and count >= threshold then
  redis.call('HSET', KEYS[2], 'state', 'open', 'opened_at', ARGV[1])
  redis.call('SADD', KEYS[3], ARGV[6])
  state = 'open'
end
return {state or 'closed', redis.call('HGET', KEYS[2], 'opened_at') or '',
        redis.call('HGET', KEYS[2], 'last_fault') or '', count}
"""


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


class RedisBreakerBackend:
    def __init__(self, client: Redis, *, prefix: str = "hookgate:") -> None:
        self.client = client
        self.prefix = prefix
        self._open_set = prefix + "breakers-open"
        self._fault_script = client.register_script(_FAULT)

    def _keys(self, hook_id: str) -> tuple[str, str]:
        return self.prefix + "breaker-faults:" + hook_id, self.prefix + "breaker:" + hook_id

    async def fault(
        self, hook_id: str, message: str | None, *, now: float, window_s: float, threshold: int
    ) -> SharedBreaker:
        faults, state = self._keys(hook_id)
        member = f"{now:.6f}:{uuid.uuid4().hex[:12]}"
        raw = await self._fault_script(
            keys=[faults, state, self._open_set],
            args=[repr(now), repr(window_s), threshold, member, message or "", hook_id],
        )
        status, opened_at, last_fault, count = (_text(v) for v in raw)
        return SharedBreaker(
            state="open" if status == "open" else "closed",
            opened_at=float(opened_at) if opened_at else None,
            last_fault=last_fault or None,
            recent_faults=int(count),
        )

    async def reopen(self, hook_id: str, *, now: float) -> None:
        _, state = self._keys(hook_id)
        async with self.client.pipeline(transaction=True) as pipe:
            pipe.hset(state, mapping={"state": "open", "opened_at": repr(now)})
            pipe.sadd(self._open_set, hook_id)
            await pipe.execute()

    async def close(self, hook_id: str) -> None:
        faults, state = self._keys(hook_id)
        async with self.client.pipeline(transaction=True) as pipe:
            pipe.delete(faults, state)
            pipe.srem(self._open_set, hook_id)
            await pipe.execute()

    async def open_breakers(self) -> dict[str, SharedBreaker]:
        hooks = [_text(h) for h in await self.client.smembers(self._open_set)]
        if not hooks:
            return {}
        async with self.client.pipeline(transaction=False) as pipe:
            for hook_id in hooks:
                pipe.hgetall(self._keys(hook_id)[1])
            rows = await pipe.execute()
        found: dict[str, SharedBreaker] = {}
        for hook_id, row in zip(hooks, rows, strict=True):
            fields = {_text(k): _text(v) for k, v in row.items()}
            if fields.get("state") == "open" and fields.get("opened_at"):
                found[hook_id] = SharedBreaker(
                    "open", float(fields["opened_at"]), fields.get("last_fault") or None
                )
        return found
