"""Structured log lines under stable keys (``security.hook.*`` and friends).

Each line's message is its key; the fields ride in ``extra["fields"]`` for structured
handlers and are also appended as ``k=v`` pairs so a plain text log stays readable.
Values named like secrets are never logged.
"""

from __future__ import annotations

import logging
from typing import Any, Final

__all__ = ["LOGGER", "log_event"]

LOGGER: Final = logging.getLogger("hookgate")
_SECRET_NAMES: Final = ("authorization", "token", "secret", "password", "api_key", "apikey")


def _safe(key: str, value: Any) -> Any:
    if any(word in key.lower() for word in _SECRET_NAMES):
        return "[REDACTED]"
    return value


def log_event(key: str, *, level: int = logging.WARNING, **fields: Any) -> None:
    if not LOGGER.isEnabledFor(level):
        return
    safe = {name: _safe(name, value) for name, value in fields.items()}
    text = " ".join(f"{name}={value!r}" for name, value in safe.items())
    LOGGER.log(level, "%s %s", key, text, extra={"event_key": key, "fields": safe})
