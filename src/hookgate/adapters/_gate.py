"""One way for every adapter to fire an event, at an :class:`~hookgate.Engine` or a gateway.

An adapter never calls the engine or a client directly: it asks a :class:`Gate`, which
turns every failure on a blocking event (an unreachable gateway, a malformed answer, a bug)
into a block, and on a non-blocking event into a logged, empty allow.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from typing import Any, TypeAlias

from hookgate.client import AsyncGatewayClient, GatewayClient, outcome_from_payload
from hookgate.engine import Engine
from hookgate.events import get_event
from hookgate.log import log_event
from hookgate.outcome import Outcome

__all__ = ["Gate", "Target", "failed_closed"]

#: What an adapter accepts: an in-process engine or a client of a shared gateway.
Target: TypeAlias = Engine | AsyncGatewayClient | GatewayClient


def failed_closed(event: str, exc: BaseException) -> Outcome:
    """The outcome of a failure: a block on a blocking event, an empty allow otherwise.

    The reason names the error's type only: its message may carry tool input or a URL with
    credentials, and the reason goes to the model.
    """
    spec = get_event(event)
    # A synchronous-stage name (post_tool_use as after_tool) runs, and so fails, as blocking.
    blocking = spec.run_as(event, False).blocking
    log_event(
        "hookgate.adapter.failure",
        level=logging.ERROR if blocking else logging.WARNING,
        hook_event=spec.name,
        error=type(exc).__name__,
        enforced="block" if blocking else "none",
    )
    if not blocking:
        return Outcome()
    return Outcome(
        decision="block",
        reason=f"hookgate could not decide on {spec.name} ({type(exc).__name__}); blocked",
    )


class Gate:
    """Fires events at an engine or a gateway client; never raises."""

    __slots__ = ("_engine", "target")

    def __init__(self, target: Target | Gate) -> None:
        inner = target.target if isinstance(target, Gate) else target
        if not isinstance(inner, Engine | AsyncGatewayClient | GatewayClient):
            raise TypeError(
                "an adapter needs a hookgate.Engine, a hookgate.client.AsyncGatewayClient or "
                f"a hookgate.client.GatewayClient, not {type(inner).__name__}"
            )
        self.target: Target = inner
        # An engine's hook source answers "any hook for this event?" before a payload is
        # built; a gateway's hooks are not known here, so every event goes there.
        self._engine = inner if isinstance(inner, Engine) else None

    def wants(self, event: str) -> bool:
        """Whether firing ``event`` could do anything: False only when the engine has no hook
        for it at all (firing would answer an empty allow), so the adapter may skip building
        the payload. ``event`` is a canonical event name. Never raises: when in doubt, True.
        """
        engine = self._engine
        if engine is None:
            return True
        try:
            return engine.source.has_event(event)
        except Exception:
            return True

    async def fire(self, event: str, payload: Mapping[str, Any], *, wait: bool = False) -> Outcome:
        try:
            target = self.target
            if isinstance(target, Engine):
                return await target.fire(event, payload, wait=wait)
            if isinstance(target, AsyncGatewayClient):
                return outcome_from_payload(await target.dispatch(event, payload, wait=wait))
            answer = await asyncio.to_thread(target.dispatch, event, payload, wait=wait)
            return outcome_from_payload(answer)
        except Exception as exc:
            return failed_closed(event, exc)

    def fire_sync(self, event: str, payload: Mapping[str, Any], *, wait: bool = False) -> Outcome:
        """For synchronous agent loops (not from inside a running event loop)."""
        try:
            target = self.target
            if isinstance(target, Engine):
                return target.fire_sync(event, payload, wait=wait)
            if isinstance(target, GatewayClient):
                return outcome_from_payload(target.dispatch(event, payload, wait=wait))
            raise TypeError(
                "a synchronous agent run needs hookgate.client.GatewayClient, "
                "not the asyncio client"
            )
        except Exception as exc:
            return failed_closed(event, exc)
