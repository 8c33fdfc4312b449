"""Prompt-hook state shared by gateway replicas, in Redis.

The decision cache and the per-turn counters (:mod:`hookgate.handlers.prompt.state`) live in one
process by default. With several replicas behind a load balancer, a turn's calls land on
different processes: the cap must count them together, and a decision one replica paid for
should serve the others. ``hookgate serve --redis-url`` puts both here.

Keys: ``<prefix>decision:<key>`` (a JSON value with the cache TTL) and ``<prefix>turn:<key>``
(an integer whose expiry slides with each use). Increments are atomic (``INCR`` and
``EXPIRE`` in one MULTI/EXEC transaction).

The client fails fast (1 s to connect, 2 s per reply) and retries a command once on a fresh
connection, so the first command after a Redis restart succeeds instead of failing on a
pooled connection the server closed. A failure still raised is the gateway's, not the
hook's: callers turn it into :class:`~hookgate.outcome.InfrastructureError`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import orjson
from redis.asyncio import Redis
from redis.asyncio.retry import Retry
from redis.backoff import ExponentialBackoff

__all__ = ["RedisDecisionCache", "RedisTurnCounter", "connect"]


def connect(url: str) -> Redis:
    """A client for ``redis://host:port/db`` (it connects on first use)."""
    return Redis.from_url(
        url,
        socket_connect_timeout=1.0,
        socket_timeout=2.0,
        retry=Retry(ExponentialBackoff(cap=0.2, base=0.02), 1),
    )


class RedisDecisionCache:
    def __init__(self, client: Redis, *, prefix: str = "hookgate:") -> None:
        self.client = client
        self.prefix = prefix + "decision:"

    async def get(self, key: str) -> dict[str, Any] | None:
        raw = await self.client.get(self.prefix + key)
        if raw is None:
            return None
        value = orjson.loads(raw)
        return value if isinstance(value, dict) else None

    async def put(self, key: str, value: Mapping[str, Any], ttl_s: float) -> None:
        milliseconds = max(1, int(ttl_s * 1000))
        await self.client.set(self.prefix + key, orjson.dumps(dict(value)), px=milliseconds)


class RedisTurnCounter:
    def __init__(self, client: Redis, *, prefix: str = "hookgate:") -> None:
        self.client = client
        self.prefix = prefix + "turn:"

    async def increment(self, key: str, ttl_s: float) -> int:
        name = self.prefix + key
        async with self.client.pipeline(transaction=True) as pipe:
            pipe.incr(name)
            pipe.pexpire(name, max(1, int(ttl_s * 1000)))
            count, _ = await pipe.execute()
        return int(count)
