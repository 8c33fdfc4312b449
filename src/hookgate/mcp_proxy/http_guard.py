"""Who may talk to the proxy's HTTP listener (``--listen``).

* **Host and Origin, on every listen address.** A web page can make a browser send requests
  to any address, and with DNS rebinding under a name the attacker controls
  (``Host: evil.example``). The listener answers only requests whose ``Host`` is a loopback
  name, the listen address itself, or a name the operator allowed (``--allowed-host``), and
  whose ``Origin``, when a browser sends one, is one of those hosts or an origin the operator
  allowed (``--allowed-origin``). The check is the MCP SDK's (``TransportSecuritySettings``).
* **A bearer token, optional** (``--auth-token-file`` or ``HOOKGATE_MCP_PROXY_TOKEN``): every
  request must carry ``Authorization: Bearer <token>``, compared in constant time.
"""

from __future__ import annotations

import hmac
import ipaddress
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from mcp.server.transport_security import TransportSecuritySettings

__all__ = ["BearerAuth", "HttpGuard", "host_patterns"]

#: Hosts a local client uses, whatever the listen address.
_LOOPBACK = ("127.0.0.1", "localhost", "[::1]")
#: Listen addresses that name no host a client would write in ``Host``.
_WILDCARDS = frozenset({"0.0.0.0", "::", ""})


def _bracketed(host: str) -> str:
    """An IPv6 address as it appears in ``Host`` and origins (``[::1]``)."""
    try:
        if isinstance(ipaddress.ip_address(host.strip("[]")), ipaddress.IPv6Address):
            return f"[{host.strip('[]')}]"
    except ValueError:
        pass
    return host


def host_patterns(value: str) -> list[str]:
    """``Host`` values one ``--allowed-host`` admits: ``name`` (any port, or none) or
    ``name:port`` (that port only); IPv6 addresses in brackets."""
    value = value.strip()
    if value.startswith("[") and "]" in value:
        host, _, rest = value[1:].partition("]")
        port = rest[1:] if rest.startswith(":") else ""
    elif value.count(":") == 1:
        host, _, port = value.partition(":")
    else:
        host, port = value, ""
    if not host or (port and not port.isdigit()):
        raise ValueError(f"expected HOST or HOST:PORT, got {value!r}")
    name = _bracketed(host).lower()
    return [f"{name}:{port}"] if port else [name, f"{name}:*"]


@dataclass(frozen=True, slots=True)
class HttpGuard:
    """The listener's admission rules."""

    allowed_hosts: tuple[str, ...]
    allowed_origins: tuple[str, ...]
    token: str | None = None

    @classmethod
    def build(
        cls,
        listen_host: str,
        port: int,
        *,
        extra_hosts: Iterable[str] = (),
        extra_origins: Iterable[str] = (),
        token: str | None = None,
    ) -> HttpGuard:
        """Loopback names on any port, the listen address on its port (unless it is a
        wildcard such as 0.0.0.0), and what the operator added."""
        hosts: list[str] = [f"{name}:*" for name in _LOOPBACK]
        if listen_host not in _WILDCARDS:
            hosts.append(f"{_bracketed(listen_host).lower()}:{port}")
        for value in extra_hosts:
            hosts.extend(host_patterns(value))
        origins: list[str] = []
        for host in hosts:
            for scheme in ("http", "https"):
                origins.append(f"{scheme}://{host}")
        origins.extend(origin.rstrip("/") for origin in extra_origins)
        if token is not None and not token:
            raise ValueError("the bearer token is empty")
        return cls(tuple(dict.fromkeys(hosts)), tuple(dict.fromkeys(origins)), token)

    def transport_security(self) -> TransportSecuritySettings:
        return TransportSecuritySettings(
            enable_dns_rebinding_protection=True,
            allowed_hosts=list(self.allowed_hosts),
            allowed_origins=list(self.allowed_origins),
        )


class BearerAuth:
    """ASGI middleware: every HTTP request carries ``Authorization: Bearer <token>``."""

    def __init__(self, app: Any, token: str) -> None:
        self.app = app
        self._expected = f"Bearer {token}".encode()

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":  # lifespan
            await self.app(scope, receive, send)
            return
        given = b""
        for name, value in scope.get("headers") or ():
            if name == b"authorization":
                given = value
                break
        if hmac.compare_digest(given, self._expected):
            await self.app(scope, receive, send)
            return
        body = b'{"error": "unauthorized: this MCP proxy needs a bearer token"}'
        await send({
            "type": "http.response.start",
            "status": 401,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                (b"www-authenticate", b'Bearer realm="hookgate-mcp-proxy"'),
            ],
        })
        await send({"type": "http.response.body", "body": body})
