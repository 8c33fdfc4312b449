"""The HTTP client every outbound hook request uses, with the SSRF guard built in.

:class:`OutboundClient` wraps an aiohttp session whose connector resolves host names only
through :class:`~hookgate.net.ssrf.SsrfGuard`: the guard resolves once, vets every answer and
returns the vetted addresses, and the connector connects to those. aiohttp skips the
resolver for IP-literal hosts, so :meth:`OutboundClient.post` vets those itself before the
request. Redirects are never followed, proxies from the environment are ignored
(``trust_env=False``) and no cookies are kept, so nothing leaks between hooks or tenants.

Handlers find a shared client in ``Services.http_client``; it must be an
:class:`OutboundClient` (an unguarded session is refused rather than trusted).
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Final, Protocol

import aiohttp
from aiohttp.abc import AbstractResolver, ResolveResult
from multidict import CIMultiDict
from yarl import URL

from hookgate.errors import HookgateError
from hookgate.net.ssrf import Allowlist, IPAddress, Resolver, SsrfGuard, SsrfRefused
from hookgate.settings import Settings

__all__ = [
    "MAX_RESPONSE_BYTES",
    "ClientHolder",
    "OutboundClient",
    "OutboundError",
    "OutboundResponse",
    "ResponseTooLarge",
    "close_shared_client",
    "shared_client",
]

class ClientHolder(Protocol):
    """Where the shared client lives: :class:`hookgate.handlers.Services` (named by its
    shape, so that the services, which name this module's client, are not imported here)."""

    settings: Settings
    http_client: OutboundClient | None
    ssrf_resolver: Resolver | None


#: Response headers handlers look at; the rest are not kept.
_KEPT_HEADERS: Final = ("Location", "Content-Type", "Content-Encoding")
#: Response bodies are read up to this size; a larger body is an error, never truncated.
MAX_RESPONSE_BYTES: Final = 1024 * 1024


class OutboundError(HookgateError):
    """The request could not be completed: connection refused, reset, TLS failure, timeout."""


class ResponseTooLarge(OutboundError):
    """The response body was larger than the cap; it is refused, not truncated."""

    def __init__(self, limit: int, status: int) -> None:
        super().__init__(f"response body exceeds the {limit} byte cap (status {status})")
        self.limit = limit
        self.status = status


@dataclass(frozen=True, slots=True)
class OutboundResponse:
    status: int
    body: bytes
    headers: Mapping[str, str] = field(default_factory=dict)

    @property
    def location(self) -> str | None:
        return self.headers.get("Location") or self.headers.get("location")


class _GuardedResolver(AbstractResolver):
    """aiohttp resolver that answers only with addresses the guard vetted (the pin)."""

    def __init__(self, guard: SsrfGuard) -> None:
        self._guard = guard

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        target = await self._guard.vet_host(host, port)
        return [
            {
                "hostname": host,
                "host": str(address),
                "port": port,
                "family": socket.AF_INET6 if address.version == 6 else socket.AF_INET,
                "proto": 0,
                "flags": socket.AI_NUMERICHOST,
            }
            for address in target.addresses
        ]

    async def close(self) -> None:
        return None


class OutboundClient:
    """Guarded JSON-over-HTTP client for webhooks and LLM providers.

    One aiohttp session per event loop, created on first use, keeps connections alive
    between calls. :meth:`aclose` closes it.
    """

    def __init__(self, guard: SsrfGuard, *, connection_limit: int = 100) -> None:
        self.guard = guard
        self._limit = connection_limit
        #: Created by hookgate for an engine (closed with it), not handed in by the caller.
        self.engine_owned = False
        self._checked: dict[str, URL] = {}
        self._session: aiohttp.ClientSession | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    def _current_session(self) -> aiohttp.ClientSession:
        loop = asyncio.get_running_loop()
        if self._session is None or self._loop is not loop or self._session.closed:
            # A session belongs to the loop that made it; a new loop (fire_sync's thread,
            # a new test) gets its own.
            if self._session is not None and not self._session.closed:
                _close_elsewhere(self._session, self._loop)
            connector = aiohttp.TCPConnector(
                resolver=_GuardedResolver(self.guard),
                use_dns_cache=False,  # every new connection is vetted by a fresh lookup
                limit=self._limit,
            )
            self._session = aiohttp.ClientSession(
                connector=connector,
                trust_env=False,
                cookie_jar=aiohttp.DummyCookieJar(),
                auto_decompress=True,
            )
            self._loop = loop
        return self._session

    async def post(
        self,
        url: str,
        *,
        body: bytes,
        headers: Mapping[str, str],
        timeout_s: float,
        max_bytes: int = MAX_RESPONSE_BYTES,
    ) -> OutboundResponse:
        """POST ``body`` and read the response (at most ``max_bytes``).

        Raises :class:`~hookgate.net.ssrf.SsrfRefused` before connecting to a refused
        destination, :class:`ResponseTooLarge` for an oversized body and
        :class:`OutboundError` for transport failures.
        """
        target = self._checked_url(url)
        request_headers = CIMultiDict(headers)
        request_headers.setdefault("Content-Type", "application/json")
        session = self._current_session()
        try:
            async with session.post(
                target,
                data=body,
                headers=request_headers,
                allow_redirects=False,
                timeout=aiohttp.ClientTimeout(total=timeout_s),
            ) as response:
                data = await _read_capped(response, max_bytes)
                return OutboundResponse(
                    status=response.status,
                    body=data,
                    headers={
                        k: response.headers[k] for k in _KEPT_HEADERS if k in response.headers
                    },
                )
        except (SsrfRefused, ResponseTooLarge):
            raise
        except (aiohttp.ClientError, OSError, TimeoutError) as exc:
            raise OutboundError(_describe(exc)) from exc

    def _checked_url(self, url: str) -> URL:
        """The parsed URL, refused unless http(s); an IP-literal host is vetted here, because
        aiohttp does not consult the resolver for it. Results are remembered per URL string
        (the guard's allowlist is fixed for its lifetime)."""
        checked = self._checked.get(url)
        if checked is not None:
            return checked
        parsed = self.guard.check_url(url)
        host = parsed.host
        assert host is not None
        literal = _ip_literal(host)
        if literal is not None:
            self.guard.check_address(literal, host)
        if len(self._checked) >= 1024:
            self._checked.clear()
        self._checked[url] = parsed
        return parsed

    async def aclose(self) -> None:
        session, loop = self._session, self._loop
        self._session = self._loop = None
        if session is None or session.closed:
            return
        if loop is asyncio.get_running_loop():
            await session.close()
        else:
            _close_elsewhere(session, loop)


def _close_elsewhere(
    session: aiohttp.ClientSession, loop: asyncio.AbstractEventLoop | None
) -> None:
    """Close a session that belongs to another loop, if that loop still runs."""
    if loop is not None and loop.is_running() and not loop.is_closed():
        asyncio.run_coroutine_threadsafe(session.close(), loop)


async def _read_capped(response: aiohttp.ClientResponse, limit: int) -> bytes:
    length = response.content_length
    if length is not None and length > limit:
        raise ResponseTooLarge(limit, response.status)
    if length is not None and "Content-Encoding" not in response.headers:
        # aiohttp reads exactly Content-Length bytes: already within the cap.
        return await response.read()
    # Chunked or compressed: the decoded size is unknown, so read in steps and stop early.
    chunks: list[bytes] = []
    size = 0
    while True:
        chunk = await response.content.read(limit + 1 - size)
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)
        size += len(chunk)
        if size > limit:
            raise ResponseTooLarge(limit, response.status)


def _ip_literal(host: str) -> IPAddress | None:
    try:
        return ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return None


def _describe(exc: BaseException) -> str:
    if isinstance(exc, TimeoutError | asyncio.TimeoutError):
        return "request timed out"
    text = str(exc) or type(exc).__name__
    return f"{type(exc).__name__}: {text}"


def shared_client(services: ClientHolder) -> OutboundClient:
    """The engine's client: ``services.http_client``, created on first use.

    A client created here is guarded by the settings' allowlist (plus
    ``HOOKGATE_SSRF_ALLOWLIST``) and ``services.ssrf_resolver`` if one is set (tests inject
    DNS answers that way), and is closed by the handlers' ``aclose``. Anything other than an
    :class:`OutboundClient` is refused, typed or not: an unguarded session would bypass the
    SSRF guard.
    """
    client: object = services.http_client
    if client is None:
        guard = SsrfGuard(
            Allowlist.from_settings(services.settings), resolver=services.ssrf_resolver
        )
        client = services.http_client = OutboundClient(guard)
        services.http_client.engine_owned = True
    elif not isinstance(client, OutboundClient):
        raise TypeError(
            "services.http_client must be a hookgate.net.outbound.OutboundClient "
            f"(an SSRF-guarded client), not {type(client).__name__}"
        )
    return client


async def close_shared_client(services: ClientHolder) -> None:
    """Close the engine's client if hookgate created it (a handler's ``aclose``)."""
    client = services.http_client
    if isinstance(client, OutboundClient) and client.engine_owned:
        await client.aclose()
