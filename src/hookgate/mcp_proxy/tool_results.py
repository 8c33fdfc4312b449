"""MCP tool results made from what hooks answered: a block, a synthetic result, a rewrite.

Results are plain dicts in MCP's wire spelling (``content``, ``structuredContent``,
``isError``). A tool that declares an ``outputSchema`` makes clients validate
``structuredContent`` on every result that is not an error, so a result a hook made for such
a tool carries ``structuredContent`` too; when none can be made the original is dropped
rather than kept next to content it no longer matches (a redacting hook must not leave the
original data in the structured copy).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from mcp import types
from pydantic import ValidationError

__all__ = [
    "block_result",
    "hook_result",
    "text_block",
    "validated_result",
    "with_context",
]


def text_block(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


def block_result(reason: str | None) -> dict[str, Any]:
    """What the client sees for a blocked call: an error result with the reason."""
    return {"content": [text_block(reason or "blocked by hookgate")], "isError": True}


def validated_result(raw: Any) -> dict[str, Any]:
    """An upstream's tools/call answer, checked; raise ValueError when it is not a result."""
    try:
        result = types.CallToolResult.model_validate(raw, by_name=False)
    except ValidationError as exc:
        raise ValueError(f"not a tool result: {exc.errors()[0]['msg']}") from None
    return result.model_dump(by_alias=True, mode="json", exclude_none=True)


def hook_result(value: Any, output_schema: Mapping[str, Any] | None) -> dict[str, Any]:
    """A tool result from a hook's value (synthetic result or rewritten output).

    A string becomes one text block; a list is taken as content blocks; a dict with
    ``content`` is a whole tool result; any other value is shown as JSON and, for a tool
    with an output schema, used as its structured content.
    """
    if isinstance(value, Mapping) and "content" in value:
        result = validated_result(value)
        if output_schema is not None and "structuredContent" not in result:
            structured = _structured(output_schema, result["content"], None)
            if structured is not None:
                result["structuredContent"] = structured
        return result
    if isinstance(value, str):
        content: list[dict[str, Any]] = [text_block(value)]
    elif isinstance(value, list) and value and all(_is_block(item) for item in value):
        content = validated_result({"content": value})["content"]
    else:
        content = [text_block(json.dumps(value, default=str))]
    result = {"content": content, "isError": False}
    if output_schema is not None:
        structured = _structured(output_schema, content, value)
        if structured is not None:
            result["structuredContent"] = structured
    return result


def with_context(result: dict[str, Any], context: Sequence[str]) -> dict[str, Any]:
    """``result`` with each piece of added context appended as text content."""
    if not context:
        return result
    return {**result, "content": [*result.get("content", []), *map(text_block, context)]}


def _is_block(item: Any) -> bool:
    return isinstance(item, Mapping) and isinstance(item.get("type"), str)


def _structured(
    schema: Mapping[str, Any], content: Sequence[Mapping[str, Any]], value: Any
) -> dict[str, Any] | None:
    """Structured content for a tool's output schema, or None when none can be derived."""
    if isinstance(value, Mapping):
        return dict(value)
    text = "".join(str(block.get("text", "")) for block in content if block.get("type") == "text")
    if _wraps_one_string(schema):
        # The SDK's shape for tools returning a plain value: {"result": <value>}.
        return {"result": text}
    try:
        parsed = json.loads(text)
    except ValueError:
        return None
    return parsed if isinstance(parsed, dict) else None


def _wraps_one_string(schema: Mapping[str, Any]) -> bool:
    properties = schema.get("properties")
    if not isinstance(properties, Mapping) or set(properties) != {"result"}:
        return False
    inner = properties["result"]
    return isinstance(inner, Mapping) and inner.get("type") == "string"
