"""``hookgate claude-code --gateway URL``: hand Claude Code's hook input to the gateway's
Claude Code endpoint and print its answer.

The gateway does all the work (it answers in Claude Code's own JSON), so this path needs
nothing but the standard library's HTTP client: no engine, no asyncio, no WebSocket client.
Every failure (no key, gateway down or slow, an error status, an answer that is not a JSON
object) is hookgate's failure and fails closed like the local bridge.
"""

from __future__ import annotations

import json
from typing import Final
from urllib.parse import urlsplit

__all__ = ["CLAUDE_CODE_PATH", "GatewayAnswer", "ask_gateway"]

#: Also in :mod:`hookgate.integrations.claude_code.settings_file` and the gateway's route.
CLAUDE_CODE_PATH: Final = "/api/v1/claude-code/hook"
#: Claude Code's answers are small; a gateway that sends more is not a gateway.
_MAX_ANSWER: Final = 4 * 1024 * 1024


class GatewayAnswer:
    """What to print: ``stdout`` on exit 0, else ``error`` (the failure, for stderr)."""

    __slots__ = ("error", "stdout")

    def __init__(self, stdout: str = "", error: str | None = None) -> None:
        self.stdout = stdout
        self.error = error


def ask_gateway(raw: bytes, url: str, api_key: str | None, *,
                timeout_s: float = 25.0) -> GatewayAnswer:
    """POST ``raw`` (Claude Code's hook input) to ``url``'s Claude Code endpoint."""
    import http.client

    if not api_key:
        return GatewayAnswer(error="--gateway needs an API key in HOOKGATE_API_KEY")
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return GatewayAnswer(error=f"--gateway must be an http:// or https:// URL, not {url!r}")
    connection: http.client.HTTPConnection
    if parts.scheme == "https":
        connection = http.client.HTTPSConnection(parts.hostname, parts.port, timeout=timeout_s)
    else:
        connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=timeout_s)
    path = parts.path.rstrip("/") + CLAUDE_CODE_PATH
    try:
        connection.request("POST", path, body=raw, headers={
            "Authorization": f"Bearer {api_key}", "Content-Type": "application/json"})
        response = connection.getresponse()
        body = response.read(_MAX_ANSWER + 1)
    except (OSError, http.client.HTTPException) as exc:
        return GatewayAnswer(error=f"gateway {url}: cannot connect or no answer: {exc}")
    finally:
        connection.close()
    if len(body) > _MAX_ANSWER:
        return GatewayAnswer(error=f"gateway {url}: answer over {_MAX_ANSWER} bytes")
    try:
        document = json.loads(body)
    except ValueError:
        document = None
    if response.status != 200:
        return GatewayAnswer(error=f"gateway {url}: HTTP {response.status}{_error(document)}")
    # The gateway always answers a JSON object ({} when no hook spoke): an empty body or a
    # page from a proxy in front of it is not its answer and must not let the action run.
    content_type = (response.getheader("Content-Type") or "").split(";")[0].strip()
    if content_type != "application/json" or not isinstance(document, dict):
        return GatewayAnswer(error=f"gateway {url}: the answer is not the gateway's JSON object"
                                   f" (Content-Type {content_type or 'none'})")
    return GatewayAnswer(stdout=json.dumps(document) if document else "")


def _error(document: object) -> str:
    error = document.get("error") if isinstance(document, dict) else None
    if isinstance(error, dict):
        return f" {error.get('code')}: {error.get('message')}"
    return ""
