"""What an agent review is about: the delegated result, the request a reviewer gets and the
runner that may answer it instead of a model call (:attr:`Services.reviewer_runner`).

Plain data, apart from the handler, so that :class:`~hookgate.handlers.base.Services` can
name the runner's type without importing the agent handler.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

from hookgate.outcome import HookError

__all__ = ["Delegation", "ReviewRequest", "ReviewerRunner"]


@dataclass(frozen=True, slots=True)
class Delegation:
    """A delegated result and where it came from (``subagent_stop`` / ``delegation.completed``)."""

    output: Any
    task: str = ""
    source_agent: str = ""
    target_agent: str = ""
    user_id: str = ""
    event: str = "delegation.completed"
    tenant_id: str | None = None

    @classmethod
    def from_payload(cls, payload: Mapping[str, Any], event: str) -> Delegation:
        if payload.get("output") is None:
            raise HookError(
                "a quality review needs the delegated result in the event's 'output' field"
            )
        return cls(
            output=payload["output"],
            task=str(payload.get("task") or ""),
            source_agent=str(payload.get("source_agent") or ""),
            target_agent=str(payload.get("target_agent") or ""),
            user_id=str(payload.get("user_id") or ""),
            event=event,
            tenant_id=payload.get("tenant_id"),
        )

    @property
    def output_text(self) -> str:
        if isinstance(self.output, str):
            return self.output
        return json.dumps(self.output, indent=2, ensure_ascii=False, default=str)


@dataclass(frozen=True, slots=True)
class ReviewRequest:
    agent: str
    system: str
    prompt: str
    delegation: Delegation


ReviewerRunner = Callable[[ReviewRequest], Awaitable[str]]
