"""Builders shared by the store tests."""

from __future__ import annotations

import time
import uuid
from typing import Any

from hookgate.audit import ExecutionRecord
from hookgate.store.base import ExecutionRow


def record(n: int = 0, **fields: Any) -> ExecutionRecord:
    values: dict[str, Any] = {
        "hook_id": "hook-x",
        "hook_version": 1,
        "hook_name": "guard",
        "handler_type": "callable",
        "event": "pre_tool_use",
        "event_id": f"ev-{n}",
        "decision": "allow",
        "duration_ms": 0.5,
        "tenant_id": "tenant-a",
        "session_id": "s-1",
    }
    values.update(fields)
    return ExecutionRecord(**values)


def row(n: int = 0, **fields: Any) -> ExecutionRow:
    values: dict[str, Any] = {
        "id": str(uuid.uuid4()),
        "hook_id": None,
        "hook_version": 1,
        "hook_name": "guard",
        "handler_type": "callable",
        "event": "pre_tool_use",
        "event_id": f"ev-{n}",
        "decision": "allow",
        "duration_ms": 0.5,
        "tenant_id": "tenant-a",
        "agent_id": None,
        "session_id": "s-1",
        "input_hash": "",
        "dedup_key": f"k-{n}",
        "error": None,
        "error_detail": None,
        "metadata": {},
        "created_at": time.time(),
    }
    values.update(fields)
    return ExecutionRow(**values)
