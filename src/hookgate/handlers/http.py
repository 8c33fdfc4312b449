"""The ``http`` handler: POST the event to a webhook and honour its whole answer.

Config::

    {"url": "https://hooks.example.com/check",
     "headers": {"Authorization": "<sealed>", "X-Team": "infra"},
     "secret_headers": ["X-Api-Key"]}

Request: ``POST url`` with the event as JSON (``{"event": name, ...payload fields}``) and the
configured headers; secret header values are decrypted here and nowhere else
(:mod:`hookgate.secrets.headers`). Every request goes through the SSRF guard
(:mod:`hookgate.net.ssrf`), connects only to the vetted address, never follows a redirect and
reads at most 1 MiB of response.

Answer:

* 2xx with a JSON object: ``decision`` (``allow``/``block``), ``reason``,
  ``additionalContext``, ``updatedInput``, ``continue``, ``result``, ``abort`` are all
  honoured. Any other key, or a ``decision`` of ``ask``/``defer`` when no approver is
  configured, is a malformed answer (fails closed on blocking events).
* 2xx with an empty or non-JSON body: allow. JSON that is not an object: malformed.
* 3xx: error (redirects are not followed). 4xx: error at once. 5xx and connection errors:
  one retry after 1 s, then error. A body over 1 MiB: error.

:class:`~hookgate.handlers.base.Services` used: ``http_client`` (an
:class:`~hookgate.net.outbound.OutboundClient`, created on first use), ``ssrf_resolver``,
``keyring`` (a :class:`~hookgate.secrets.keyring.Keyring`; falls back to
``Keyring.from_env()``) and ``approver`` (when set, ``ask``/``defer`` pass on).
"""

from __future__ import annotations

import asyncio
import json
from typing import Any, ClassVar, Final

import orjson

from hookgate.audit import redact
from hookgate.handlers.base import Handler, Invocation
from hookgate.log import log_event
from hookgate.net.outbound import (
    OutboundError,
    OutboundResponse,
    ResponseTooLarge,
    close_shared_client,
    shared_client,
)
from hookgate.net.ssrf import SsrfRefused
from hookgate.outcome import HookError, HookResult, MalformedAnswer, coerce_result
from hookgate.secrets.headers import open_headers, secret_header_names
from hookgate.secrets.keyring import Keyring, SecretError, is_sealed_text

__all__ = ["HttpHandler"]

_EXCERPT: Final = 200


class HttpHandler(Handler):
    handler_type: ClassVar[str] = "http"
    config_model: ClassVar[str] = "hookgate.handlers.http_config:HttpConfig"
    #: Wait before the single retry of a 5xx or a connection error.
    retry_delay_s: float = 1.0

    def __init__(self, services: Any) -> None:
        super().__init__(services)
        self._env_keyring: Keyring | None = None

    def _keyring(self) -> Keyring | None:
        keyring = self.services.keyring
        if keyring is not None:
            return keyring
        if self._env_keyring is None:
            try:
                self._env_keyring = Keyring.from_env()
            except SecretError:
                return None
        return self._env_keyring

    def _headers(self, call: Invocation) -> tuple[dict[str, str], list[str]]:
        config = call.hook.config
        headers_config = config.get("headers") or {}
        needs_key = any(is_sealed_text(v) for v in headers_config.values())
        try:
            headers = open_headers(config, call.hook.id, self._keyring() if needs_key else None)
        except SecretError as exc:
            raise HookError(f"cannot send webhook: {exc}") from None
        secret = secret_header_names(config)
        secrets = [v for k, v in headers.items() if k.lower() in secret and v]
        return headers, secrets

    async def run(self, call: Invocation) -> HookResult:
        hook = call.hook
        url = str(hook.config.get("url", ""))
        headers, secrets = self._headers(call)
        body = orjson.dumps(
            {**call.payload, "event": call.event.name}, default=str, option=orjson.OPT_NON_STR_KEYS
        )
        client = shared_client(self.services)
        response: OutboundResponse | None = None
        attempts = 0
        while response is None:
            attempts += 1
            try:
                # The engine's timeout must win: the client's own deadline is only a backstop
                # for direct use (if both fired, aiohttp could swallow the engine's cancel).
                response = await client.post(
                    url, body=body, headers=headers, timeout_s=call.timeout_s + 0.5
                )
            except SsrfRefused as exc:
                log_event("security.hook.ssrf_blocked", hook_id=hook.id, host=exc.host)
                raise HookError(str(exc), details={"ssrf_refused": True}) from None
            except ResponseTooLarge as exc:
                raise HookError(
                    f"webhook answered {exc.status} with {exc}",
                    details=_status_details(exc.status, attempts),
                ) from None
            except OutboundError as exc:
                _raise_if_cancelling()
                if attempts == 1:
                    await asyncio.sleep(self.retry_delay_s)
                    continue
                raise HookError(
                    f"webhook unreachable after {attempts} attempts: {exc}",
                    details={"attempts": attempts},
                ) from None
            if response.status >= 500 and attempts == 1:
                response = None
                await asyncio.sleep(self.retry_delay_s)
        return self._answer(call, response, attempts, secrets)

    def _answer(
        self, call: Invocation, response: OutboundResponse, attempts: int, secrets: list[str]
    ) -> HookResult:
        status = response.status
        details = _status_details(status, attempts)
        if status >= 300:
            # Scrub the whole body, then cut: a secret cut in half would no longer match.
            body = _scrub(response.body.decode("utf-8", "replace"), secrets)
            excerpt = redact(body)[:_EXCERPT]
            if status >= 500:
                message = f"webhook answered {status} on both attempts"
            elif status >= 400:
                message = f"webhook answered {status} (client errors fail closed, no retry)"
            else:
                where = _scrub(response.location or "?", secrets)
                message = f"webhook answered a redirect ({status} to {where}); not followed"
            if excerpt.strip() and status >= 400:
                message += f": {excerpt.strip()}"
            raise HookError(message, details=details)
        if status < 200:
            raise HookError(f"webhook answered an unexpected status {status}", details=details)
        text = response.body.decode("utf-8", "replace").strip()
        if not text:
            return HookResult(decision="allow", details={**details, "body": "empty"})
        try:
            answer = json.loads(text)
        except json.JSONDecodeError:
            return HookResult(decision="allow", details={**details, "body": "not JSON"})
        if not isinstance(answer, dict):
            raise MalformedAnswer(
                f"webhook answered JSON {type(answer).__name__}, expected an object",
                details=details,
            )
        decision = answer.get("decision")
        if decision not in (None, "allow", "block") and not (
            decision in ("ask", "defer") and self.services.approver is not None
        ):
            raise MalformedAnswer(
                f"webhook decision must be 'allow' or 'block', got {decision!r}"
                + (" (no approver is configured)" if decision in ("ask", "defer") else ""),
                details=details,
            )
        try:
            result = coerce_result({k: v for k, v in answer.items() if k != "details"})
        except MalformedAnswer as exc:
            raise MalformedAnswer(f"webhook answer: {exc}", details=details) from None
        if "details" in answer:
            raise MalformedAnswer("webhook answer: unknown key(s): details", details=details)
        assert result is not None
        result.details.update(details)
        if result.reason:
            result.details["reason"] = result.reason
        return result

    async def aclose(self) -> None:
        await close_shared_client(self.services)


def _raise_if_cancelling() -> None:
    # A transport error raised while the task is being cancelled (the hook timed out) must
    # not turn into a retry: let the cancellation through.
    task = asyncio.current_task()
    if task is not None and task.cancelling():
        raise asyncio.CancelledError


def _status_details(status: int, attempts: int) -> dict[str, Any]:
    return {"http_status": status, "status_code": status, "attempts": attempts}


def _scrub(text: str, secrets: list[str]) -> str:
    # A misbehaving server may echo a credential back; it must not reach the trace.
    for secret in secrets:
        for part in (secret, secret.rsplit(" ", 1)[-1]):
            if len(part) >= 6:
                text = text.replace(part, "[REDACTED]")
    return text
