"""The gateway's error type: one code, one message, the same on the WebSocket and over REST.

Codes (HTTP status for the REST mirror in brackets):

* ``INVALID_FRAME`` [400]: a WebSocket frame that is not a JSON request frame.
* ``INVALID_REQUEST`` [400]: bad params, a hook definition that fails validation.
* ``INVALID_INPUT`` [400]: an event's input is over the payload limits (nesting depth,
  size); dispatch writes an audit row for it.
* ``METHOD_NOT_FOUND`` [404]: no such method.
* ``NOT_FOUND`` [404]: no such hook (or one the caller may not see: the two look the same).
* ``UNAUTHORIZED`` [401 without a valid key, 403 with one]: GoClaw's code for both a missing
  or bad key and a role or scope that is too low; the message says which.
* ``READ_ONLY`` [409]: a builtin hook refuses the change.
* ``CONFLICT`` [409]: an update named a version that is no longer current.
* ``PAYLOAD_TOO_LARGE`` [413]: a frame or body over the configured limit.
* ``UNAVAILABLE`` [503]: the gateway is shutting down (retryable).
* ``INTERNAL`` [500]: a bug; the message carries an id to find the logged traceback.
"""

from __future__ import annotations

from typing import Any, Final

from hookgate.errors import HookgateError

__all__ = ["HTTP_STATUS", "ApiError"]

HTTP_STATUS: Final[dict[str, int]] = {
    "INVALID_FRAME": 400,
    "INVALID_REQUEST": 400,
    "INVALID_INPUT": 400,
    "METHOD_NOT_FOUND": 404,
    "NOT_FOUND": 404,
    "UNAUTHORIZED": 403,
    "READ_ONLY": 409,
    "CONFLICT": 409,
    "PAYLOAD_TOO_LARGE": 413,
    "UNAVAILABLE": 503,
    "INTERNAL": 500,
}


class ApiError(HookgateError):
    """A failed request. ``status`` overrides the code's usual HTTP status (401 vs 403)."""

    def __init__(
        self,
        code: str,
        message: str,
        *,
        details: dict[str, Any] | None = None,
        status: int | None = None,
        retryable: bool = False,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.details = details
        self.status = status or HTTP_STATUS.get(code, 400)
        self.retryable = retryable

    def to_dict(self) -> dict[str, Any]:
        error: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.details:
            error["details"] = self.details
        if self.retryable:
            error["retryable"] = True
        return error

    @classmethod
    def unauthenticated(cls, message: str) -> ApiError:
        return cls("UNAUTHORIZED", message, status=401)
