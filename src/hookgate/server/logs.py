"""Structured logs for the gateway: one JSON object per line, keyed like the seed.

:func:`hookgate.log.log_event` puts its key (``security.hook.circuit_breaker``,
``security.hook.audit_write_failed``, …) and fields on each record; this formatter writes
them as ``{"ts", "level", "key", …fields}`` so log pipelines can filter on the key.
"""

from __future__ import annotations

import logging
import time
from typing import Any

import orjson

__all__ = ["JsonFormatter", "configure_logging"]


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        key = getattr(record, "event_key", None)
        data: dict[str, Any] = {
            "ts": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created))
            + f".{int(record.msecs):03d}Z",
            "level": record.levelname.lower(),
            "logger": record.name,
        }
        if key is not None:
            data["key"] = key
            fields = getattr(record, "fields", None)
            if isinstance(fields, dict):
                for name, value in fields.items():
                    data.setdefault(name, value)
        else:
            data["message"] = record.getMessage()
        if record.exc_info:
            data["exception"] = self.formatException(record.exc_info)
        return orjson.dumps(data, default=str).decode()


def configure_logging(level: int, fmt: str) -> None:
    """Send hookgate's (and uvicorn's) logs to stderr as JSON lines or plain text."""
    handler = logging.StreamHandler()
    if fmt == "json":
        handler.setFormatter(JsonFormatter())
    else:
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(message)s"))
    root = logging.getLogger()
    root.handlers = [handler]
    root.setLevel(level)
