"""Bounds on what an event payload may be: how deep it nests and how much it holds.

Hooks, CEL filters, the audit hash and the JSON encoders all walk the payload; one nested a
thousand levels deep, or holding hundreds of megabytes, would make them raise or stall.
:func:`payload_problem` measures a payload once, without recursion, and says what is wrong
in one sentence; the engine turns that into a block (blocking events) and an audit row, the
gateway into an ``INVALID_INPUT`` error.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Final

__all__ = ["MAX_DEPTH", "MAX_SIZE", "payload_problem", "walked_payload_problem"]

#: Containers inside containers, counting the payload itself as level 1: the bound of the
#: JSON encoder (orjson) that audit hashes and answers go through.
MAX_DEPTH: Final = 255
#: Bytes of the payload as JSON (outside JSON: characters of keys and strings, plus one per
#: other value).
MAX_SIZE: Final = 8 * 1024 * 1024


def payload_problem(
    payload: Mapping[str, Any], max_depth: int = MAX_DEPTH, max_size: int = MAX_SIZE
) -> str | None:
    """``None`` when ``payload`` is within the bounds, else what is over them."""
    # On the hot path of every fired event: encoding a small payload with orjson is several
    # times cheaper than walking it in Python, and orjson refuses what nests past MAX_DEPTH.
    try:
        encoded = (_dumps or _orjson_dumps())(payload)
    except TypeError:  # too deep, or values that are not JSON (library callers): walk it
        return _walk(payload, max_depth, max_size)
    if len(encoded) > max_size:
        return f"event input is larger than {max_size} bytes"
    return None if max_depth >= MAX_DEPTH else _walk(payload, max_depth, max_size)


#: orjson.dumps once imported: hookgate claude-code, which checks one payload per process,
#: uses :func:`walked_payload_problem` and never imports orjson (uuid, platform, datetime).
_dumps: Callable[[Any], bytes] | None = None


def _orjson_dumps() -> Callable[[Any], bytes]:
    global _dumps
    import orjson

    _dumps = orjson.dumps
    return _dumps


def walked_payload_problem(payload: Mapping[str, Any]) -> str | None:
    """:func:`payload_problem` by walking the payload (sizes in characters), without orjson:
    the same bounds for a process that checks one payload and exits."""
    return _walk(payload, MAX_DEPTH, MAX_SIZE)


def _walk(payload: Mapping[str, Any], max_depth: int, max_size: int) -> str | None:
    # Exact type tests first (cheap), the abstract ones only for unusual values.
    size = 0
    stack: list[tuple[Any, int]] = [(payload, 1)]
    pop, push = stack.pop, stack.append
    while stack:
        value, depth = pop()
        if depth > max_depth:
            return f"event input is nested deeper than {max_depth} levels"
        if type(value) is dict or isinstance(value, Mapping):
            items: Any = value.items()
        else:
            items = enumerate(value)
        for key, item in items:
            kind = type(key)
            size += len(key) if kind is str else 1
            kind = type(item)
            if kind is str:
                size += len(item)
            elif kind is dict or kind is list:
                push((item, depth + 1))
            elif kind is int or kind is bool or kind is float or item is None:
                size += 1
            elif isinstance(item, Mapping | list | tuple):
                push((item, depth + 1))
            else:
                size += len(item) if isinstance(item, str | bytes) else 1
        if size > max_size:
            return f"event input is larger than {max_size} characters"
    return None
