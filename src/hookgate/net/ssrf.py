"""SSRF guard: which addresses an outbound hook request may reach.

Every URL a hook names (a webhook, a prompt hook's provider base URL) goes through one
:class:`SsrfGuard`. It resolves the host once, refuses the request if *any* resolved address
is not public, and hands back only the vetted addresses, which are the ones the connection
uses (see :mod:`hookgate.net.outbound`): a second DNS answer never gets a say.

Refused classes: loopback, private (RFC 1918, unique-local), link-local (cloud metadata),
CGNAT (100.64/10), benchmarking (198.18/15), multicast, reserved and documentation ranges,
unspecified, and the IPv6 forms that embed an IPv4 address (IPv4-mapped, IPv4-compatible,
NAT64, 6to4), which are judged by the address they embed.

Operators reach internal services through an explicit allowlist of CIDRs and host names:
``HOOKGATE_SSRF_ALLOWLIST`` (comma-separated) and ``Settings.ssrf_allowlist``. A host name
entry matches that host exactly; ``*.example.internal`` matches its subdomains.
"""

from __future__ import annotations

import asyncio
import ipaddress
import os
import socket
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Final, Protocol

from yarl import URL

from hookgate.errors import HookgateError
from hookgate.settings import Settings

__all__ = [
    "ALLOWLIST_ENV",
    "Allowlist",
    "IPAddress",
    "Resolver",
    "SsrfGuard",
    "SsrfRefused",
    "StaticResolver",
    "SystemResolver",
    "Target",
    "address_class",
]

ALLOWLIST_ENV: Final = "HOOKGATE_SSRF_ALLOWLIST"
IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
_Network = ipaddress.IPv4Network | ipaddress.IPv6Network


class SsrfRefused(HookgateError):
    """An outbound request was refused before any connection was made.

    Deliberately not an ``OSError``: the HTTP client must not mistake it for a connection
    failure (which would be retried) and must let it through unchanged.
    """

    def __init__(self, message: str, *, host: str | None = None) -> None:
        super().__init__(message)
        self.host = host


def _nets(*pairs: tuple[str, str]) -> tuple[tuple[_Network, str], ...]:
    return tuple((ipaddress.ip_network(cidr), name) for cidr, name in pairs)


# Named so a refusal says *why*. Anything else that ``ipaddress`` does not call global is
# refused too, as "reserved".
_V4_CLASSES: Final = _nets(
    ("0.0.0.0/8", "unspecified"),
    ("127.0.0.0/8", "loopback"),
    ("10.0.0.0/8", "private"),
    ("172.16.0.0/12", "private"),
    ("192.168.0.0/16", "private"),
    ("100.64.0.0/10", "CGNAT"),
    ("169.254.0.0/16", "link-local"),
    ("198.18.0.0/15", "benchmarking"),
    ("192.0.0.0/24", "reserved"),
    ("192.0.2.0/24", "documentation"),
    ("198.51.100.0/24", "documentation"),
    ("203.0.113.0/24", "documentation"),
    ("192.88.99.0/24", "reserved"),
    ("224.0.0.0/4", "multicast"),
    ("240.0.0.0/4", "reserved"),
)
_V6_CLASSES: Final = _nets(
    ("::/128", "unspecified"),
    ("::1/128", "loopback"),
    ("64:ff9b:1::/48", "NAT64 local-use"),
    ("100::/64", "discard"),
    ("2001:db8::/32", "documentation"),
    ("fc00::/7", "private"),
    ("fe80::/10", "link-local"),
    ("fec0::/10", "site-local"),
    ("ff00::/8", "multicast"),
)
_NAT64: Final = ipaddress.IPv6Network("64:ff9b::/96")
_V4_COMPATIBLE: Final = ipaddress.IPv6Network("::/96")


def _embedded_ipv4(ip: ipaddress.IPv6Address) -> tuple[ipaddress.IPv4Address, str] | None:
    if ip.ipv4_mapped is not None:
        return ip.ipv4_mapped, "IPv4-mapped"
    if ip in _NAT64:
        return ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF), "NAT64"
    if ip.sixtofour is not None:
        return ip.sixtofour, "6to4"
    if ip in _V4_COMPATIBLE and int(ip) > 1:
        return ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF), "IPv4-compatible"
    return None


def address_class(ip: IPAddress) -> str | None:
    """Why ``ip`` must not be reached (``"loopback"``, ``"CGNAT"``, …), or ``None`` if public."""
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.scope_id:
            ip = ipaddress.IPv6Address(str(ip).split("%", 1)[0])
        embedded = _embedded_ipv4(ip)
        if embedded is not None:
            inner, form = embedded
            inner_class = address_class(inner)
            return f"{inner_class} ({form} {inner})" if inner_class else None
        table: Sequence[tuple[_Network, str]] = _V6_CLASSES
    else:
        table = _V4_CLASSES
    for network, name in table:
        if ip in network:
            return name
    if ip.is_multicast:
        return "multicast"
    if not ip.is_global:
        return "reserved"
    return None


@dataclass(frozen=True, slots=True)
class Allowlist:
    """CIDRs and host names an operator lets hooks reach although they are not public."""

    networks: tuple[_Network, ...] = ()
    hosts: frozenset[str] = frozenset()
    suffixes: tuple[str, ...] = ()

    @classmethod
    def parse(cls, entries: Iterable[str]) -> Allowlist:
        networks: list[_Network] = []
        hosts: set[str] = set()
        suffixes: list[str] = []
        for raw in entries:
            entry = raw.strip().lower().rstrip(".")
            if not entry:
                continue
            try:
                networks.append(ipaddress.ip_network(entry, strict=False))
                continue
            except ValueError:
                pass
            if entry.startswith("*."):
                suffixes.append(entry[1:])
            elif entry.startswith("."):
                suffixes.append(entry)
            else:
                hosts.add(entry)
        return cls(tuple(networks), frozenset(hosts), tuple(suffixes))

    @classmethod
    def from_settings(
        cls, settings: Settings | None = None, environ: Mapping[str, str] | None = None
    ) -> Allowlist:
        """The settings' ``ssrf_allowlist`` plus ``HOOKGATE_SSRF_ALLOWLIST``."""
        env = os.environ if environ is None else environ
        entries = list(settings.ssrf_allowlist if settings else ())
        entries.extend(env.get(ALLOWLIST_ENV, "").split(","))
        return cls.parse(entries)

    def allows_host(self, host: str) -> bool:
        name = host.lower().rstrip(".")
        return name in self.hosts or any(name.endswith(suffix) for suffix in self.suffixes)

    def allows_address(self, ip: IPAddress) -> bool:
        return any(ip.version == net.version and ip in net for net in self.networks)

    def __bool__(self) -> bool:
        return bool(self.networks or self.hosts or self.suffixes)


class Resolver(Protocol):
    """Turns a host name into addresses. Tests inject answers; production asks the system."""

    async def lookup(self, host: str, port: int) -> list[str]: ...


class SystemResolver:
    """The operating system's resolver (``getaddrinfo``), asked once per connection."""

    async def lookup(self, host: str, port: int) -> list[str]:
        loop = asyncio.get_running_loop()
        try:
            infos = await loop.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        except socket.gaierror as exc:
            raise SsrfRefused(f"cannot resolve {host!r}: {exc.strerror}", host=host) from None
        seen: dict[str, None] = {}
        for _family, _type, _proto, _canon, sockaddr in infos:
            seen.setdefault(str(sockaddr[0]), None)
        return list(seen)


class StaticResolver:
    """Injected DNS answers for tests: ``{"host": ["1.2.3.4"]}``, or a list of answers per
    host that are given out in turn (to play a rebinding attacker). Every lookup is counted."""

    def __init__(self, answers: Mapping[str, Sequence[str] | Sequence[Sequence[str]]]) -> None:
        self._answers: dict[str, list[list[str]]] = {}
        for host, answer in answers.items():
            if answer and not isinstance(answer[0], str):
                self._answers[host.lower()] = [list(a) for a in answer]
            else:
                self._answers[host.lower()] = [[str(a) for a in answer]]
        self.lookups: list[str] = []

    async def lookup(self, host: str, port: int) -> list[str]:
        self.lookups.append(host)
        turns = self._answers.get(host.lower())
        if not turns:
            raise SsrfRefused(f"cannot resolve {host!r}: no such host", host=host)
        return turns.pop(0) if len(turns) > 1 else list(turns[0])


@dataclass(frozen=True, slots=True)
class Target:
    """A vetted destination: the addresses a connection to ``host`` may use, and only those."""

    host: str
    port: int
    addresses: tuple[IPAddress, ...]


class SsrfGuard:
    """Vets outbound URLs and hosts against the address policy and the allowlist."""

    def __init__(
        self,
        allowlist: Allowlist | None = None,
        *,
        resolver: Resolver | None = None,
        on_refuse: Callable[[str, str], None] | None = None,
    ) -> None:
        self.allowlist = allowlist or Allowlist()
        self.resolver: Resolver = resolver or SystemResolver()
        self._on_refuse = on_refuse

    def check_url(self, url: str | URL) -> URL:
        """Refuse URLs that are not plain http(s) with a host, before anything else happens.

        Credentials in the URL are refused so they cannot end up in logs or read APIs: put
        them in a secret header instead.
        """
        try:
            parsed = url if isinstance(url, URL) else URL(url)
        except (TypeError, ValueError) as exc:
            raise SsrfRefused(f"not a valid URL: {exc}") from None
        if parsed.scheme not in ("http", "https"):
            raise SsrfRefused(f"only http and https URLs are allowed, not {parsed.scheme!r}")
        if not parsed.host:
            raise SsrfRefused("the URL has no host")
        if parsed.user is not None or parsed.password is not None:
            raise SsrfRefused(
                "credentials in the URL are not allowed; put them in a secret header",
                host=parsed.host,
            )
        return parsed

    def check_address(self, ip: IPAddress, host: str) -> None:
        """Refuse ``ip`` unless it is public or allowlisted (by address or by ``host``)."""
        problem = address_class(ip)
        if problem is None or self.allowlist.allows_address(ip) or self.allowlist.allows_host(host):
            return
        where = host if host == str(ip) else f"{host} ({ip})"
        message = (
            f"refused to connect to {where}: {problem} address; add it to "
            f"{ALLOWLIST_ENV} if this internal service is intended"
        )
        if self._on_refuse is not None:
            self._on_refuse(host, message)
        raise SsrfRefused(message, host=host)

    async def vet_host(self, host: str, port: int) -> Target:
        """Resolve ``host`` once and vet every answer; the answer is the pinned target."""
        literal = _ip_literal(host)
        if literal is not None:
            self.check_address(literal, host)
            return Target(host, port, (literal,))
        answers = await self.resolver.lookup(host, port)
        if not answers:
            raise SsrfRefused(f"cannot resolve {host!r}: no addresses", host=host)
        addresses: list[IPAddress] = []
        for answer in answers:
            try:
                ip = ipaddress.ip_address(answer)
            except ValueError:
                raise SsrfRefused(f"{host!r} resolved to a non-address {answer!r}") from None
            self.check_address(ip, host)
            addresses.append(ip)
        return Target(host, port, tuple(addresses))

    async def vet_url(self, url: str | URL) -> Target:
        parsed = self.check_url(url)
        assert parsed.host is not None and parsed.port is not None
        return await self.vet_host(parsed.host, parsed.port)


def _ip_literal(host: str) -> IPAddress | None:
    try:
        return ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return None
