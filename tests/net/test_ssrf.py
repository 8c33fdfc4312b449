"""The SSRF guard: refused address classes, the allowlist, DNS pinning.

Refusals are checked with injected DNS answers (StaticResolver) before any connection is
made; the only connections these tests open go to loopback servers reached through the
allowlist.
"""

from __future__ import annotations

import ipaddress

import pytest
from tests.support.webhook_server import Reply, WebhookServer

from hookgate.net.outbound import OutboundClient
from hookgate.net.ssrf import Allowlist, SsrfGuard, SsrfRefused, StaticResolver, address_class
from hookgate.settings import Settings

REFUSED = [
    ("127.0.0.1", "loopback"),
    ("127.255.0.9", "loopback"),
    ("::1", "loopback"),
    ("10.1.2.3", "private"),
    ("172.16.0.1", "private"),
    ("172.31.255.255", "private"),
    ("192.168.1.1", "private"),
    ("fd00::1", "private"),
    ("169.254.169.254", "link-local"),
    ("fe80::1", "link-local"),
    ("100.64.0.1", "CGNAT"),
    ("100.127.255.254", "CGNAT"),
    ("198.18.0.1", "benchmarking"),
    ("198.19.255.255", "benchmarking"),
    ("224.0.0.1", "multicast"),
    ("239.255.255.250", "multicast"),
    ("ff02::1", "multicast"),
    ("240.0.0.1", "reserved"),
    ("255.255.255.255", "reserved"),
    ("192.0.2.10", "documentation"),
    ("2001:db8::1", "documentation"),
    ("0.0.0.0", "unspecified"),
    ("::", "unspecified"),
    ("::ffff:127.0.0.1", "loopback (IPv4-mapped 127.0.0.1)"),
    ("::ffff:169.254.169.254", "link-local (IPv4-mapped 169.254.169.254)"),
    ("::ffff:100.64.0.1", "CGNAT (IPv4-mapped 100.64.0.1)"),
    ("64:ff9b::a00:1", "private (NAT64 10.0.0.1)"),
    ("64:ff9b::7f00:1", "loopback (NAT64 127.0.0.1)"),
    ("64:ff9b:1::1", "NAT64 local-use"),
    ("2002:c0a8:101::1", "private (6to4 192.168.1.1)"),
    ("::7f00:1", "loopback (IPv4-compatible 127.0.0.1)"),
]
PUBLIC = ["8.8.8.8", "1.1.1.1", "2606:4700:4700::1111", "::ffff:8.8.8.8", "64:ff9b::808:808"]


@pytest.mark.parametrize(("address", "expected"), REFUSED)
def test_every_non_public_class_is_named(address: str, expected: str) -> None:
    assert address_class(ipaddress.ip_address(address)) == expected


@pytest.mark.parametrize("address", PUBLIC)
def test_public_addresses_pass(address: str) -> None:
    assert address_class(ipaddress.ip_address(address)) is None


@pytest.mark.parametrize(("address", "expected"), REFUSED)
async def test_hostname_resolving_to_a_refused_class_is_refused(
    address: str, expected: str
) -> None:
    resolver = StaticResolver({"hooks.example.com": [address]})
    guard = SsrfGuard(resolver=resolver)
    with pytest.raises(SsrfRefused, match="refused to connect to hooks.example.com") as caught:
        await guard.vet_host("hooks.example.com", 443)
    assert expected.split(" ")[0] in str(caught.value)
    assert resolver.lookups == ["hooks.example.com"]


async def test_one_bad_answer_among_good_ones_refuses_the_host() -> None:
    guard = SsrfGuard(resolver=StaticResolver({"mixed.example": ["8.8.8.8", "10.0.0.7"]}))
    with pytest.raises(SsrfRefused, match="private"):
        await guard.vet_host("mixed.example", 80)


async def test_public_answers_are_the_pinned_target() -> None:
    guard = SsrfGuard(resolver=StaticResolver({"ok.example": ["8.8.8.8", "2606:4700::1"]}))
    target = await guard.vet_host("ok.example", 443)
    assert [str(a) for a in target.addresses] == ["8.8.8.8", "2606:4700::1"]


@pytest.mark.parametrize(
    "url", ["http://127.0.0.1/x", "http://[::1]:8080/", "http://[::ffff:10.0.0.1]/"]
)
async def test_ip_literals_get_the_same_check_without_dns(url: str) -> None:
    resolver = StaticResolver({})
    with pytest.raises(SsrfRefused):
        await SsrfGuard(resolver=resolver).vet_url(url)
    assert resolver.lookups == []


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("ftp://example.com/x", "only http and https"),
        ("file:///etc/passwd", "only http and https"),
        ("http:///nohost", "no host"),
        ("https://user:pw@example.com/", "credentials in the URL"),
    ],
)
def test_bad_urls_are_refused_before_resolving(url: str, message: str) -> None:
    with pytest.raises(SsrfRefused, match=message):
        SsrfGuard().check_url(url)


async def test_allowlist_by_cidr_and_by_host_name() -> None:
    resolver = StaticResolver(
        {"svc.internal": ["10.0.0.5"], "db.corp.internal": ["10.9.9.9"], "other": ["10.1.1.1"]}
    )
    guard = SsrfGuard(Allowlist.parse(["10.0.0.0/24", "*.corp.internal"]), resolver=resolver)
    assert (await guard.vet_host("svc.internal", 80)).addresses[0].exploded == "10.0.0.5"
    assert (await guard.vet_host("db.corp.internal", 80)).addresses
    with pytest.raises(SsrfRefused, match="HOOKGATE_SSRF_ALLOWLIST"):
        await guard.vet_host("other", 80)


def test_allowlist_reads_settings_and_the_environment() -> None:
    allow = Allowlist.from_settings(
        Settings(ssrf_allowlist=("127.0.0.0/8",)),
        environ={"HOOKGATE_SSRF_ALLOWLIST": "hooks.lan, 10.2.0.0/16"},
    )
    assert allow.allows_address(ipaddress.ip_address("127.0.0.1"))
    assert allow.allows_address(ipaddress.ip_address("10.2.3.4"))
    assert not allow.allows_address(ipaddress.ip_address("10.3.0.1"))
    assert allow.allows_host("HOOKS.lan.")
    assert not allow.allows_host("evil.hooks.lan")
    assert not Allowlist.from_settings(Settings(), environ={})


async def test_dns_rebinding_cannot_switch_the_pinned_address() -> None:
    """First answer: the allowlisted loopback server. Second answer: a metadata address.

    The connection is made to the vetted first answer with exactly one lookup; the rebinding
    answer only ever reaches the guard, which refuses it before connecting.
    """
    with WebhookServer(default=Reply(200, {"decision": "allow"})) as server:
        resolver = StaticResolver({"rebind.example": [["127.0.0.1"], ["169.254.169.254"]]})
        guard = SsrfGuard(Allowlist.parse(["127.0.0.1/32"]), resolver=resolver)
        client = OutboundClient(guard)
        try:
            url = server.url("/hook", host="rebind.example")
            first = await client.post(url, body=b"{}", headers={}, timeout_s=5)
            assert first.status == 200
            assert resolver.lookups == ["rebind.example"]
            assert server.requests[0].headers["Host"].startswith("rebind.example")
            # The kept-alive connection still goes to the vetted address: no new lookup.
            await client.post(url, body=b"{}", headers={}, timeout_s=5)
            assert resolver.lookups == ["rebind.example"]
            assert len(server.requests) == 2
        finally:
            await client.aclose()
        fresh = OutboundClient(guard)
        try:
            with pytest.raises(SsrfRefused, match="link-local"):
                await fresh.post(url, body=b"{}", headers={}, timeout_s=5)
        finally:
            await fresh.aclose()
        assert len(server.requests) == 2


async def test_redirects_are_not_followed_even_between_loopback_servers() -> None:
    with WebhookServer() as target, WebhookServer() as origin:
        origin.script(Reply(302, None, headers={"Location": target.url("/secret")}))
        client = OutboundClient(SsrfGuard(Allowlist.parse(["127.0.0.1/32"])))
        try:
            response = await client.post(origin.url(), body=b"{}", headers={}, timeout_s=5)
        finally:
            await client.aclose()
        assert response.status == 302
        assert response.location == target.url("/secret")
        assert target.requests == []
