"""Errors the gateway client raises."""

from __future__ import annotations

from typing import Any

from hookgate.errors import HookgateError

__all__ = ["GatewayConnectionError", "GatewayError"]


class GatewayError(HookgateError):
    """The gateway answered ``ok: false``; ``code`` is its error code (``UNAUTHORIZED``, …)."""

    def __init__(self, code: str, message: str, details: dict[str, Any] | None = None) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message
        self.details = details or {}

    @classmethod
    def from_error(cls, error: Any) -> GatewayError:
        if not isinstance(error, dict):
            return cls("INTERNAL", f"malformed error from the gateway: {error!r}")
        details = error.get("details")
        return cls(
            str(error.get("code", "INTERNAL")),
            str(error.get("message", "")),
            details if isinstance(details, dict) else None,
        )


class GatewayConnectionError(GatewayError):
    """The gateway could not be reached, refused the upgrade, or the connection dropped."""

    def __init__(self, message: str) -> None:
        super().__init__("CONNECTION", message)
