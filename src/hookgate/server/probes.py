"""Health probes: ``/healthz`` (liveness) and ``/readyz`` (readiness), both without a key.

Liveness answers 200 as long as the process serves HTTP, draining included: a replica that is
draining must not be killed for it. Readiness answers 200 only when this replica should get
new work: the database answers, its schema is at the version this code needs, Redis answers
(when configured) and no drain has begun; else 503, with a JSON body naming each check. The
body names exception types, never their text (no host, user or password leaves).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Final, Literal

from starlette.requests import Request
from starlette.responses import Response

from hookgate.server.rest import json_response
from hookgate.store.migrations import load_migrations

if TYPE_CHECKING:
    from hookgate.server.gateway import Gateway

__all__ = ["HEALTH_PATH", "READY_PATH", "Readiness", "check_readiness", "healthz", "readyz"]

HEALTH_PATH: Final = "/healthz"
READY_PATH: Final = "/readyz"
#: A dependency slower than this to answer counts as down (probes must answer quickly).
CHECK_TIMEOUT_S: Final = 2.0

CheckResult = str  # "ok", "not configured", or what is wrong


@dataclass(slots=True)
class Readiness:
    checks: dict[str, CheckResult] = field(default_factory=dict)

    @property
    def ready(self) -> bool:
        return all(result in ("ok", "not configured") for result in self.checks.values())

    def to_dict(self) -> dict[str, object]:
        status: Literal["ready", "not ready"] = "ready" if self.ready else "not ready"
        return {"status": status, "checks": self.checks}


def _failure(exc: BaseException) -> str:
    if isinstance(exc, TimeoutError):
        return f"no answer within {CHECK_TIMEOUT_S:g} s"
    return f"unreachable ({type(exc).__name__})"


async def _database(gateway: Gateway, readiness: Readiness) -> None:
    store = gateway.store
    try:
        version = await asyncio.wait_for(store.schema_version(), CHECK_TIMEOUT_S)
    except Exception as exc:
        readiness.checks["database"] = _failure(exc)
        readiness.checks["migrations"] = "unknown (database unreachable)"
        return
    readiness.checks["database"] = "ok"
    backend = getattr(store, "backend", None)
    if backend not in ("sqlite", "postgres"):
        readiness.checks["migrations"] = "not configured"
        return
    needed = load_migrations(backend)[-1].version
    readiness.checks["migrations"] = (
        "ok" if version >= needed else f"schema at version {version}, this code needs {needed}"
    )


async def _redis(gateway: Gateway, readiness: Readiness) -> None:
    if gateway.redis is None:
        readiness.checks["redis"] = "not configured"
        return
    try:
        await asyncio.wait_for(gateway.redis.ping(), CHECK_TIMEOUT_S)
    except Exception as exc:
        readiness.checks["redis"] = _failure(exc)
    else:
        readiness.checks["redis"] = "ok"


async def check_readiness(gateway: Gateway) -> Readiness:
    readiness = Readiness()
    readiness.checks["draining"] = "draining: no new work" if gateway.draining else "ok"
    await asyncio.gather(_database(gateway, readiness), _redis(gateway, readiness))
    return readiness


async def healthz(request: Request) -> Response:
    gateway: Gateway = request.app.state.gateway
    status = "draining" if gateway.draining else "ok"
    return json_response({"status": status, "edition": gateway.edition})


async def readyz(request: Request) -> Response:
    readiness = await check_readiness(request.app.state.gateway)
    return json_response(readiness.to_dict(), 200 if readiness.ready else 503)
