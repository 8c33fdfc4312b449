"""Built-in detectors through the shipped policy: what each one finds and what it leaves."""

from __future__ import annotations

import random

import pytest
from bench.secret_corpus import SECRET_KINDS, make_secret

from hookgate.boundary import Scanner, default_policy, parse_policy

SCANNER = Scanner(default_policy(), inline_allow=True)


def rules_in(text: str, scanner: Scanner = SCANNER) -> list[str]:
    return [finding.rule_id for finding in scanner.scan_text(text)]


@pytest.mark.parametrize("kind", SECRET_KINDS)
def test_every_seeded_secret_kind_is_found(kind: str) -> None:
    rng = random.Random(kind)
    for _ in range(5):
        lines = make_secret(kind, rng)
        findings = SCANNER.scan_text("\n".join(["x = 1", *lines, "y = 2"]))
        assert [f.line for f in findings] == [2], (kind, lines, findings)


@pytest.mark.parametrize(("text", "rule"), [
    ("host = 10.0.3.4", "private-ipv4"),
    ("ip: 172.20.1.1,", "private-ipv4"),
    ("(192.168.1.10)", "private-ipv4"),
    ("carrier 100.64.0.9", "private-ipv4"),
    ("link 169.254.169.254/latest", "private-ipv4"),
    ("addr fd12:3456:789a::1 here", "private-ipv6"),
    ("[fe80::1ff:fe23:4567:890a]", "private-ipv6"),
    ("ssh admin@build01.corp", "internal-host"),
    ("https://grafana.monitoring.internal:3000/d", "internal-host"),
    ("nas.home.arpa", "internal-host"),
])
def test_private_addresses_and_internal_hosts(text: str, rule: str) -> None:
    assert rules_in(text) == [rule]


@pytest.mark.parametrize("text", [
    "public 8.8.8.8 and 1.1.1.1",
    "version 1.10.0.0.1 and 2.10.0.0",      # dotted numbers that are not addresses
    "see 10.0.0.0.5",
    "docs address 192.0.2.10 and 2001:db8::1",
    "std::vector<int> at 12:30:45 and a::b",
    "loopback 127.0.0.1 and ::1",          # not in the public-repo policy
    "www.corp.example.com and internal.example.org",
    "threading.local() and self.lan_ports",
    "kind=trace.SpanKind.INTERNAL, mode=settings.Corp",
    "password = \"${DB_PASSWORD}\" and token: '<your-token>'",
    "path = 'src/hookgate/boundary/scanner_module_name.py'",
    "name_of_a_really_long_function_without_digits = 1",
    "image_digest: sha256:" + "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
    '"integrity": "sha512-z4PhNX7vuL3xVChQ1m2AB9Yg5AULVxXcg/SpIdNs6c5H0NE8XYXysP+DGNKHfuwvY7'
    'kxvUdBeoGlODJ6+SfaPg=="',
    "request_id = '1b4e28ba-2fa1-41d2-883f-0016d3cca427'",
])
def test_things_that_are_not_findings(text: str) -> None:
    assert rules_in(text) == []


def test_loopback_and_email_come_from_a_policy_that_asks() -> None:
    policy = parse_policy({"rules": [
        {"id": "lo", "detector": "private-ipv4", "options": {"classes": ["loopback"]}},
        {"id": "lo6", "detector": "private-ipv6", "options": {"classes": ["loopback"]}},
        {"id": "mail", "detector": "email"},
    ]})
    scanner = Scanner(policy)
    assert rules_in("127.0.0.1 ::1 ops@acme.io someone@example.com", scanner) == [
        "lo", "lo6", "mail"]


def test_private_key_block_is_one_finding_spanning_its_lines() -> None:
    lines = make_secret("private-key", random.Random(1))
    text = "a\n" + "\n".join(lines) + "\nb\n"
    (finding,) = SCANNER.scan_text(text)
    assert finding.rule_id == "private-key" and finding.line == 2
    assert finding.value.count(b"\n") == len(lines) - 1


def test_generic_rules_give_way_to_a_specific_one() -> None:
    token = "gh" + "p_" + "aB3dE5fG7hI9jK1lM3nO5pQ7rS9tU1vW3xY5"
    assert rules_in(f'token = "{token}"') == ["github-token"]


def test_excerpt_masks_every_value_on_the_line_and_keeps_the_rest() -> None:
    key = "AK" + "IA" + "Q3ZT7PLM2XKD8WNE"
    (a, b) = SCANNER.scan_text(f"creds {key} via 10.1.2.3 ok")
    assert key not in a.excerpt and "10.1.2.3" not in a.excerpt
    assert a.excerpt == b.excerpt == "creds AKIA**************** via 10****** ok"


def test_inline_allow_comment_and_scoped_allow() -> None:
    assert rules_in("server 10.0.0.1  # hookgate:allow") == []
    assert rules_in("server 10.0.0.1 db.corp  # hookgate:allow=internal-host") == [
        "private-ipv4"]


def test_non_ascii_text_keeps_columns_in_characters() -> None:
    (finding,) = SCANNER.scan_text("héllo wörld 10.9.8.7")
    assert finding.column == len("héllo wörld ") + 1
