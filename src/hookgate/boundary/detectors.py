"""Built-in detectors: an RE2 candidate pattern over bytes plus an optional Python check.

The pattern finds candidates fast (RE2 runs in linear time over the whole file, one pass
per detector); the check, when there is one, looks at the candidate and its neighbours and
decides. Checks run only on candidates, so their cost does not grow with the file.
"""

from __future__ import annotations

import base64
import binascii
import ipaddress
import math
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, NamedTuple

import re2

from hookgate.errors import HookgateError

__all__ = [
    "ADDRESS_CLASSES",
    "DETECTORS",
    "DEFAULT_INTERNAL_SUFFIXES",
    "Candidate",
    "CompiledDetector",
    "Detector",
    "DetectorOptionError",
    "compile_detector",
    "shannon_entropy",
]

Check = Callable[[bytes, bytes, int, int, Mapping[str, Any]], bool]


class DetectorOptionError(HookgateError, ValueError):
    """A detector option with the wrong type or an unknown value."""


class Candidate(NamedTuple):
    start: int
    end: int


@dataclass(frozen=True, slots=True)
class Detector:
    name: str
    description: str
    severity: str
    pattern: str | Callable[[Mapping[str, Any]], str]
    group: int = 0
    check: Check | None = None
    #: Generic detectors (entropy, keyword) give way to a specific one on the same span.
    generic: bool = False
    options: Mapping[str, Any] = field(default_factory=dict)
    #: For a block (a private key): the pattern of its last line. A match of ``pattern``
    #: (the first line) is extended to the first end line within ``max_block`` bytes and
    #: before the next first line. Done in Python rather than as ``BEGIN.*?END`` in one
    #: pattern: that form looks for END to the end of the input after every BEGIN, which
    #: is quadratic in a file of BEGIN lines.
    block_end: str | None = None
    max_block: int = 1 << 16


@dataclass(frozen=True, slots=True)
class CompiledDetector:
    detector: Detector
    regex: Any
    options: Mapping[str, Any]
    block_end: Any = None

    def candidates(self, data: bytes) -> list[Candidate]:
        found = []
        group = self.detector.group
        check = self.detector.check
        for match in self.regex.finditer(data):
            start, end = match.span(group)
            if start < 0 or end <= start:
                continue
            if check is not None and not check(data[start:end], data, start, end, self.options):
                continue
            found.append(Candidate(start, end))
        if self.block_end is not None:
            found = self._blocks(data, found)
        return found

    def _blocks(self, data: bytes, firsts: list[Candidate]) -> list[Candidate]:
        """Each first line extended to its block's end line; each byte is searched once."""
        blocks = []
        for index, (start, end) in enumerate(firsts):
            limit = firsts[index + 1].start if index + 1 < len(firsts) else len(data)
            last = self.block_end.search(data, end, min(limit, end + self.detector.max_block))
            blocks.append(Candidate(start, last.end() if last is not None else end))
        return blocks


_WORD_BYTES: Final = frozenset(b"_0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz")


def _is_word(byte: int) -> bool:
    return byte == 0x5F or 0x30 <= byte <= 0x39 or 0x41 <= byte <= 0x5A or 0x61 <= byte <= 0x7A


def _before(data: bytes, start: int) -> int:
    return data[start - 1] if start > 0 else 0x20


def _after(data: bytes, end: int, offset: int = 0) -> int:
    index = end + offset
    return data[index] if index < len(data) else 0x20


# ---------------------------------------------------------------- addresses

_V4_NETWORKS: Final = {
    "rfc1918": ("10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16"),
    "cgnat": ("100.64.0.0/10",),
    "link-local": ("169.254.0.0/16",),
    "loopback": ("127.0.0.0/8",),
}
# IPv6 counterparts: unique local addresses are IPv6's private space.
_V6_NETWORKS: Final = {
    "rfc1918": ("fc00::/7",),
    "cgnat": (),
    "link-local": ("fe80::/10",),
    "loopback": ("::1/128",),
}
ADDRESS_CLASSES: Final = tuple(_V4_NETWORKS)
_NETWORKS: Final = {
    name: tuple(ipaddress.ip_network(net) for net in (*_V4_NETWORKS[name], *_V6_NETWORKS[name]))
    for name in ADDRESS_CLASSES
}
# (first, last) address as integers for each IPv4 class: a dense line of addresses is checked
# with integer compares, not one ipaddress object per candidate.
_V4_RANGES: Final = {
    name: tuple((int(net.network_address), int(net.broadcast_address))
                for net in _NETWORKS[name] if net.version == 4)
    for name in ADDRESS_CLASSES
}


def _address_classes(options: Mapping[str, Any]) -> tuple[str, ...]:
    classes = options.get("classes", ("rfc1918", "cgnat", "link-local"))
    if isinstance(classes, str) or not isinstance(classes, Sequence):
        raise DetectorOptionError("classes must be a list")
    unknown = [name for name in classes if name not in _NETWORKS]
    if unknown:
        raise DetectorOptionError(
            f"unknown address class(es) {unknown}; known: {', '.join(ADDRESS_CLASSES)}"
        )
    return tuple(classes)


def _in_classes(address: ipaddress.IPv4Address | ipaddress.IPv6Address,
                options: Mapping[str, Any]) -> bool:
    for name in options["classes"]:
        for network in _NETWORKS[name]:
            if address.version == network.version and address in network:
                return True
    return False


def _check_ipv4(value: bytes, data: bytes, start: int, end: int,
                options: Mapping[str, Any]) -> bool:
    # Part of a longer dotted number (a version string, an OID) is not an address. Inline
    # byte tests: a line of nothing but addresses calls this once per address.
    if start > 0:
        before = data[start - 1]
        if before == 0x2E or before in _WORD_BYTES:
            return False
    if end < len(data):
        after = data[end]
        if after in _WORD_BYTES or (after == 0x2E and end + 1 < len(data)
                                    and 0x30 <= data[end + 1] <= 0x39):
            return False
    number = 0
    for octet in value.split(b"."):  # the pattern guarantees four runs of 1-3 digits
        part = int(octet)
        if part > 255 or (len(octet) > 1 and octet[0] == 0x30):  # as ipaddress: no 010
            return False
        number = number << 8 | part
    for name in options["classes"]:
        for first, last in _V4_RANGES[name]:
            if first <= number <= last:
                return True
    return False


def _check_ipv6(value: bytes, data: bytes, start: int, end: int,
                options: Mapping[str, Any]) -> bool:
    before, after = _before(data, start), _after(data, end)
    if _is_word(before) or before in b":." or _is_word(after) or after == 0x3A:
        return False
    try:
        address = ipaddress.IPv6Address(value.decode("ascii"))
    except ValueError:
        return False
    return _in_classes(address, options)


# ---------------------------------------------------------------- host names

DEFAULT_INTERNAL_SUFFIXES: Final = (".internal", ".corp", ".intranet", ".lan", ".home.arpa")


def _host_pattern(options: Mapping[str, Any]) -> str:
    suffixes = options.get("suffixes", DEFAULT_INTERNAL_SUFFIXES)
    if isinstance(suffixes, str) or not isinstance(suffixes, Sequence) or not suffixes:
        raise DetectorOptionError("suffixes must be a non-empty list")
    escaped = []
    for suffix in suffixes:
        if not isinstance(suffix, str) or not suffix.strip("."):
            raise DetectorOptionError(f"bad host suffix {suffix!r}")
        escaped.append(re2.escape(suffix.strip(".").lower()))
    label = r"[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?"
    return rf"(?i)\b(?:{label}\.)+(?:{'|'.join(escaped)})\b"


def _check_host(value: bytes, data: bytes, start: int, end: int,
                options: Mapping[str, Any]) -> bool:
    # Code, not a host: `SpanKind.INTERNAL`, `config.Corp` (host names are written in lower
    # case; a camel-cased label or an upper-case suffix is an identifier).
    labels = value.split(b".")
    if labels[-1] != labels[-1].lower() or any(
            label != label.lower() and label != label.upper() for label in labels):
        return False
    after = _after(data, end)
    # "db.corp.example.com" is a public name that merely contains a suffix label.
    if after == 0x2D or (after == 0x2E and _is_word(_after(data, end, 1))):
        return False
    return _before(data, start) not in b".-"


# ---------------------------------------------------------------- tokens and keys

def _check_jwt(value: bytes, data: bytes, start: int, end: int,
               options: Mapping[str, Any]) -> bool:
    header = value.split(b".", 1)[0]
    try:
        decoded = base64.urlsafe_b64decode(header + b"=" * (-len(header) % 4))
    except (binascii.Error, ValueError):
        return False
    return b'"alg"' in decoded or b'"typ"' in decoded


def shannon_entropy(value: bytes) -> float:
    if not value:
        return 0.0
    total = len(value)
    return -sum(count / total * math.log2(count / total) for count in Counter(value).values())


_HEX: Final = frozenset(b"0123456789abcdefABCDEF")


_DIGEST: Final = rb"(?i)(?:sha(?:1|224|256|384|512)|md5|blake2b?)[:=-]"
_DIGEST_LABEL: Final = re2.compile(_DIGEST + rb"$")
_DIGEST_PREFIX: Final = re2.compile(rb"^" + _DIGEST)


def _check_entropy(value: bytes, data: bytes, start: int, end: int,
                   options: Mapping[str, Any]) -> bool:
    if _is_word(_after(data, end)):
        return False
    # A labelled digest ("sha256:…", npm's "sha512-…") is a checksum, not a secret.
    if _DIGEST_LABEL.search(data[max(0, start - 8):start]) or _DIGEST_PREFIX.search(value):
        return False
    if all(byte in _HEX for byte in value):
        if len(value) < int(options.get("hex_min_length", 32)):
            return False
        return shannon_entropy(value) >= float(options.get("hex_limit", 3.0))
    if len(value) < int(options.get("min_length", 20)):
        return False
    # Identifiers and paths are long too; a secret mixes digits into its letters.
    if not any(0x30 <= byte <= 0x39 for byte in value):
        return False
    return shannon_entropy(value) >= float(options.get("base64_limit", 4.2))


_PLACEHOLDERS: Final = (
    b"changeme", b"change_me", b"example", b"dummy", b"placeholder", b"password", b"secret",
    b"redacted", b"your_", b"your-", b"xxxx", b"****", b"<", b"${", b"{{", b"%(", b"env(",
    b"none", b"null", b"true", b"false", b"test",
)


def _check_not_placeholder(value: bytes, data: bytes, start: int, end: int,
                           options: Mapping[str, Any]) -> bool:
    lowered = value.lower()
    if any(marker in lowered for marker in _PLACEHOLDERS):
        return False
    return len(set(value)) > 3


_DEFAULT_EMAIL_IGNORE: Final = ("example.com", "example.org", "example.net",
                                "users.noreply.github.com")


def _check_email(value: bytes, data: bytes, start: int, end: int,
                 options: Mapping[str, Any]) -> bool:
    domain = value.rsplit(b"@", 1)[-1].lower().decode("ascii", "replace")
    ignored = options.get("ignore_domains", _DEFAULT_EMAIL_IGNORE)
    return not any(domain == item or domain.endswith("." + item) for item in ignored)


_KEYWORDS: Final = (
    r"password|passwd|pwd|secret|client[_-]?secret|api[_-]?key|apikey|access[_-]?key|"
    r"auth[_-]?token|access[_-]?token|secret[_-]?key|private[_-]?key|token"
)

DETECTORS: Final[Mapping[str, Detector]] = {d.name: d for d in (
    Detector("private-ipv4", "IPv4 addresses in private and reserved ranges",
             "high", r"\b\d{1,3}(?:\.\d{1,3}){3}\b", check=_check_ipv4),
    Detector("private-ipv6", "IPv6 addresses in unique-local, link-local or loopback ranges",
             "high", r"(?i)[0-9a-f]{0,4}(?::[0-9a-f]{0,4}){2,7}", check=_check_ipv6),
    Detector("internal-host", "host names under internal suffixes (.internal, .corp, ...)",
             "high", _host_pattern, check=_check_host),
    Detector("private-key", "PEM and PGP private key blocks", "critical",
             r"-----BEGIN[ A-Z0-9]*PRIVATE KEY(?: BLOCK)?-----",
             block_end=r"-----END[ A-Z0-9]*PRIVATE KEY(?: BLOCK)?-----"),
    Detector("aws-access-key-id", "AWS access key ids", "high",
             r"\b(?:AKIA|ASIA|ABIA|ACCA)[0-9A-Z]{16}\b"),
    Detector("aws-secret-access-key", "AWS secret access keys next to an aws_* name", "critical",
             r"(?i)aws[a-z0-9_.\-]{0,30}[\"']?\s*[:=]{1,2}>?\s*[\"']?([A-Za-z0-9/+]{40})\b",
             group=1),
    Detector("gcp-api-key", "Google Cloud API keys", "high", r"\bAIza[0-9A-Za-z_\-]{35}\b"),
    Detector("gcp-service-account", "Google service-account key files", "critical",
             r"\"private_key_id\"\s*:\s*\"([0-9a-f]{40})\"", group=1),
    Detector("github-token", "GitHub personal, OAuth, app and fine-grained tokens", "critical",
             r"\b(?:gh[pousr]_[A-Za-z0-9]{36,255}|github_pat_[A-Za-z0-9_]{22,255})\b"),
    Detector("gitlab-token", "GitLab personal, deploy, runner and other tokens", "critical",
             r"\b(?:glpat|gldt|glrt|glptt|glsoat|glcbt|glimt|glft|gloas)-[A-Za-z0-9_\-]{20,}"),
    Detector("slack-token", "Slack bot, user, app and refresh tokens", "critical",
             r"\bxox[abposre]-[0-9A-Za-z][0-9A-Za-z\-]{8,250}"),
    Detector("slack-webhook", "Slack incoming-webhook URLs", "high",
             r"https://hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9+/_\-]{20,}"),
    Detector("stripe-key", "Stripe secret and restricted keys", "critical",
             r"\b(?:sk|rk)_(?:live|test)_[0-9A-Za-z]{16,247}\b"),
    Detector("openai-key", "OpenAI API keys", "critical",
             r"\bsk-(?:(?:proj|svcacct|admin)-[A-Za-z0-9_\-]{40,}"
             r"|[A-Za-z0-9]{20}T3BlbkFJ[A-Za-z0-9]{20})"),
    Detector("anthropic-key", "Anthropic API and admin keys", "critical",
             r"\bsk-ant-(?:api|admin|oat)\d{2}-[A-Za-z0-9_\-]{32,}"),
    Detector("jwt", "JSON Web Tokens", "high",
             r"\beyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}",
             check=_check_jwt),
    Detector("url-credentials", "user:password@ in URLs", "high",
             r"\b[a-z][a-z0-9+.\-]{1,20}://[^\s:/@\"'<>]{1,64}:([^\s/@\"'<>]{3,128})@[\w.\-]+",
             group=1, check=_check_not_placeholder),
    Detector("secret-assignment", "a literal assigned to a name like password, token, api_key",
             "medium",
             rf"(?i)(?:{_KEYWORDS})[\"']?\s*(?::=|=>|=|:)\s*[\"']([^\"'\s]{{8,256}})[\"']",
             group=1, check=_check_not_placeholder, generic=True),
    Detector("high-entropy", "long random-looking strings (base64 or hex)", "medium",
             r"[\"'`=:]\s*[\"']?([A-Za-z0-9+/_\-]{16,}={0,2})", group=1, check=_check_entropy,
             generic=True),
    Detector("email", "e-mail addresses", "low",
             r"\b[A-Za-z0-9._%+\-]+@(?:[A-Za-z0-9\-]+\.)+[A-Za-z]{2,}\b", check=_check_email),
)}

# Detector names accepted in a policy for a family of detectors.
_OPTION_CHECKERS: Final[Mapping[str, Callable[[Mapping[str, Any]], dict[str, Any]]]] = {
    "private-ipv4": lambda options: {**options, "classes": _address_classes(options)},
    "private-ipv6": lambda options: {**options, "classes": _address_classes(options)},
}


def compile_detector(name: str, options: Mapping[str, Any]) -> CompiledDetector:
    """The detector ``name`` with the rule's options; raises KeyError or DetectorOptionError."""
    detector = DETECTORS[name]
    checked = dict(_OPTION_CHECKERS.get(name, dict)(options))
    pattern = detector.pattern(checked) if callable(detector.pattern) else detector.pattern
    block_end = re2.compile(detector.block_end.encode()) if detector.block_end else None
    return CompiledDetector(detector, re2.compile(pattern.encode()), checked, block_end)
