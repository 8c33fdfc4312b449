"""JSON over the guarded outbound client, with provider errors that never show the API key."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Final

from hookgate.llm.base import ProviderError
from hookgate.net.outbound import OutboundClient, OutboundError
from hookgate.net.ssrf import SsrfRefused

__all__ = ["post_json"]

#: Model replies are small (a few hundred tokens); a bigger body is refused.
MAX_REPLY_BYTES: Final = 4 * 1024 * 1024
_EXCERPT: Final = 300


async def post_json(
    client: OutboundClient,
    provider: str,
    url: str,
    body: Mapping[str, Any],
    headers: Mapping[str, str],
    *,
    timeout_s: float,
    api_key: str,
) -> dict[str, Any]:
    """POST ``body`` and return the JSON object answered with a 2xx, or raise ProviderError.

    :class:`~hookgate.net.ssrf.SsrfRefused` passes through unchanged: the caller reports it as
    a refusal, not as a provider failure.
    """
    try:
        response = await client.post(
            url,
            body=json.dumps(body).encode(),
            headers=headers,
            timeout_s=timeout_s,
            max_bytes=MAX_REPLY_BYTES,
        )
    except SsrfRefused:
        raise
    except OutboundError as exc:
        raise ProviderError(f"{provider}: {_scrub(str(exc), api_key)}") from None
    text = response.body.decode("utf-8", "replace")
    if not 200 <= response.status < 300:
        detail = _error_message(text) or text[:_EXCERPT].strip()
        raise ProviderError(
            f"{provider} answered {response.status}: {_scrub(detail, api_key)}",
            status=response.status,
        )
    try:
        data = json.loads(text)
    except json.JSONDecodeError:
        raise ProviderError(f"{provider} answered a body that is not JSON") from None
    if not isinstance(data, dict):
        raise ProviderError(f"{provider} answered JSON that is not an object")
    return data


def _error_message(text: str) -> str | None:
    # Both providers answer {"error": {"message": ...}} (Anthropic adds "type": "error").
    try:
        data = json.loads(text)
    except json.JSONDecodeError:
        return None
    error = data.get("error") if isinstance(data, dict) else None
    if isinstance(error, dict) and isinstance(error.get("message"), str):
        return str(error["message"])[:_EXCERPT]
    return None


def _scrub(text: str, secret: str) -> str:
    return text.replace(secret, "[REDACTED]") if secret else text
