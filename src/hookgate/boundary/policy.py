"""Scan policies: which rules run, how severe their findings are, what is accepted.

A policy file (YAML or JSON)::

    version: 1
    fail_on: medium            # default threshold for `hookgate scan` (overridden by --fail-on)
    max_file_bytes: 5000000    # larger files are reported as unscanned (the pre-push guard blocks)
    inline_allow: false        # true: `hookgate:allow` comments in the repository's own files
                               # and commits accept findings (scan PATH, --git-range, pre-push)
    rules:
      - id: private-ip
        detector: private-ipv4         # a built-in detector ...
        options: {classes: [rfc1918]}
        severity: high
        message: private address
      - id: ticket-ref
        pattern: 'ACME-[0-9]{6}'       # ... or an RE2 pattern
        severity: low
        replace: "ACME-XXXXXX"         # what `hookgate scrub` writes (default: a mask)
    allow:
      - path: "tests/fixtures/**"      # glob, relative to the scanned root
      - path: "docs/**"
        rules: [email]                 # only these rules
      - fingerprint: 3f2a9c0d1b7e4a55  # one accepted finding (from the scan output)
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any, Final

import re2
import yaml

from hookgate.boundary.detectors import (
    DETECTORS,
    CompiledDetector,
    Detector,
    DetectorOptionError,
    compile_detector,
)
from hookgate.boundary.globs import compile_glob
from hookgate.errors import HookgateError

__all__ = [
    "SEVERITIES",
    "AllowEntry",
    "Policy",
    "PolicyError",
    "Rule",
    "default_policy",
    "load_policy",
    "parse_policy",
    "policy_from_bytes",
    "severity_rank",
]

SEVERITIES: Final = ("info", "low", "medium", "high", "critical")
_RANK: Final = {name: index for index, name in enumerate(SEVERITIES)}
DEFAULT_MAX_FILE_BYTES: Final = 5_000_000
DEFAULT_POLICY: Final = "public-repo.yaml"


def severity_rank(name: str) -> int:
    return _RANK[name]


class PolicyError(HookgateError, ValueError):
    """A policy that cannot be used; ``problems`` names each bad field."""

    def __init__(self, source: str, problems: list[str]) -> None:
        self.source = source
        self.problems = problems
        super().__init__(f"{source}: " + "; ".join(problems))


@dataclass(frozen=True, slots=True)
class Rule:
    id: str
    severity: str
    message: str
    matcher: CompiledDetector
    replace: str | None = None

    @property
    def generic(self) -> bool:
        return self.matcher.detector.generic


@dataclass(frozen=True, slots=True)
class AllowEntry:
    path: str | None = None
    fingerprint: str | None = None
    rules: frozenset[str] | None = None
    reason: str | None = None
    _glob: Any = None

    def allows(self, rule_id: str, path: str, fingerprint: str) -> bool:
        if self.rules is not None and rule_id not in self.rules:
            return False
        if self.fingerprint is not None and self.fingerprint != fingerprint:
            return False
        return self._glob is None or self._glob.match(path) is not None


@dataclass(frozen=True, slots=True)
class Policy:
    name: str
    rules: tuple[Rule, ...]
    allow: tuple[AllowEntry, ...] = ()
    fail_on: str = "medium"
    max_file_bytes: int = DEFAULT_MAX_FILE_BYTES
    by_id: Mapping[str, Rule] = field(default_factory=dict)
    #: Honour ``hookgate:allow`` comments in the repository's files and commits. Never in
    #: text an agent or a tool produced (content-guard, ``scan --stdin``, ``scrub``).
    inline_allow: bool = False

    def allowed(self, rule_id: str, path: str, fingerprint: str) -> bool:
        return any(entry.allows(rule_id, path, fingerprint) for entry in self.allow)

    def path_fully_allowed(self, path: str) -> bool:
        """True when an entry accepts every finding in ``path`` (the file need not be read)."""
        return any(entry.rules is None and entry.fingerprint is None and entry._glob is not None
                   and entry._glob.match(path) is not None for entry in self.allow)


def _pattern_matcher(pattern: str, group: int) -> CompiledDetector:
    detector = Detector(name="pattern", description="policy pattern", severity="medium",
                        pattern=pattern, group=group)
    return CompiledDetector(detector, re2.compile(pattern.encode()), {})


def _parse_rule(raw: Any, index: int, problems: list[str]) -> Rule | None:
    where = f"rules[{index}]"
    if not isinstance(raw, Mapping):
        problems.append(f"{where}: must be a mapping")
        return None
    known = {"id", "detector", "pattern", "group", "severity", "message", "replace", "options",
             "description"}
    for key in raw:
        if key not in known:
            problems.append(f"{where}.{key}: unknown field (known: {', '.join(sorted(known))})")
    rule_id = raw.get("id")
    if not isinstance(rule_id, str) or not rule_id.strip():
        problems.append(f"{where}.id: required, a non-empty string")
        return None
    where = f"rules[{index}] ({rule_id})"
    detector_name, pattern = raw.get("detector"), raw.get("pattern")
    if (detector_name is None) == (pattern is None):
        problems.append(f"{where}: give exactly one of 'detector' or 'pattern'")
        return None
    options = raw.get("options") or {}
    if not isinstance(options, Mapping):
        problems.append(f"{where}.options: must be a mapping")
        return None
    try:
        if detector_name is not None:
            if detector_name not in DETECTORS:
                problems.append(f"{where}.detector: unknown detector {detector_name!r}; known: "
                                f"{', '.join(DETECTORS)}")
                return None
            matcher = compile_detector(str(detector_name), options)
        else:
            if not isinstance(pattern, str) or not pattern:
                problems.append(f"{where}.pattern: must be a non-empty string")
                return None
            group = raw.get("group", 0)
            if not isinstance(group, int) or isinstance(group, bool) or group < 0:
                problems.append(f"{where}.group: must be a capture group number")
                return None
            matcher = _pattern_matcher(pattern, group)
            if group > matcher.regex.groups:
                problems.append(f"{where}.group: the pattern has {matcher.regex.groups} group(s)")
                return None
    except DetectorOptionError as exc:
        problems.append(f"{where}.options: {exc}")
        return None
    except re2.error as exc:
        problems.append(f"{where}.pattern: not a valid RE2 pattern ({exc})")
        return None
    severity = raw.get("severity", matcher.detector.severity if detector_name else "medium")
    if severity not in _RANK:
        problems.append(f"{where}.severity: {severity!r} is not one of {', '.join(SEVERITIES)}")
        return None
    message = raw.get("message") or matcher.detector.description
    replace = raw.get("replace")
    if replace is not None and not isinstance(replace, str):
        problems.append(f"{where}.replace: must be a string")
        return None
    return Rule(id=rule_id, severity=str(severity), message=str(message), matcher=matcher,
                replace=replace)


def _parse_allow(raw: Any, index: int, problems: list[str]) -> AllowEntry | None:
    where = f"allow[{index}]"
    if isinstance(raw, str):
        raw = {"path": raw}
    if not isinstance(raw, Mapping):
        problems.append(f"{where}: must be a mapping with 'path' and/or 'fingerprint'")
        return None
    for key in raw:
        if key not in ("path", "fingerprint", "rules", "reason"):
            problems.append(f"{where}.{key}: unknown field")
    path, fingerprint, rules = raw.get("path"), raw.get("fingerprint"), raw.get("rules")
    if path is None and fingerprint is None:
        problems.append(f"{where}: needs 'path' or 'fingerprint'")
        return None
    if path is not None and (not isinstance(path, str) or not path):
        problems.append(f"{where}.path: must be a glob string")
        return None
    if fingerprint is not None and not isinstance(fingerprint, str):
        problems.append(f"{where}.fingerprint: must be a string")
        return None
    if rules is not None and (isinstance(rules, str) or not isinstance(rules, Sequence)):
        problems.append(f"{where}.rules: must be a list of rule ids")
        return None
    return AllowEntry(
        path=path, fingerprint=fingerprint.lower() if fingerprint else None,
        rules=frozenset(str(rule) for rule in rules) if rules is not None else None,
        reason=raw.get("reason"), _glob=compile_glob(path) if path else None,
    )


def parse_policy(data: Any, source: str = "<policy>") -> Policy:
    """Build a policy from parsed YAML/JSON; raise :class:`PolicyError` naming every problem."""
    problems: list[str] = []
    if not isinstance(data, Mapping):
        raise PolicyError(source, ["the policy must be a mapping with a 'rules' list"])
    for key in data:
        if key not in ("version", "name", "description", "fail_on", "max_file_bytes", "rules",
                       "allow", "inline_allow"):
            problems.append(f"{key}: unknown field")
    if data.get("version", 1) != 1:
        problems.append(f"version: {data.get('version')!r} is not supported (use 1)")
    raw_rules = data.get("rules")
    if not isinstance(raw_rules, list) or not raw_rules:
        problems.append("rules: required, a non-empty list")
        raw_rules = []
    rules = [rule for index, raw in enumerate(raw_rules)
             if (rule := _parse_rule(raw, index, problems)) is not None]
    seen: set[str] = set()
    for rule in rules:
        if rule.id in seen:
            problems.append(f"rules: id {rule.id!r} appears twice")
        seen.add(rule.id)
    raw_allow = data.get("allow") or []
    if not isinstance(raw_allow, list):
        problems.append("allow: must be a list")
        raw_allow = []
    allow = [entry for index, raw in enumerate(raw_allow)
             if (entry := _parse_allow(raw, index, problems)) is not None]
    fail_on = data.get("fail_on", "medium")
    if fail_on not in _RANK:
        problems.append(f"fail_on: {fail_on!r} is not one of {', '.join(SEVERITIES)}")
    max_bytes = data.get("max_file_bytes", DEFAULT_MAX_FILE_BYTES)
    if not isinstance(max_bytes, int) or isinstance(max_bytes, bool) or max_bytes <= 0:
        problems.append("max_file_bytes: must be a positive integer")
    inline_allow = data.get("inline_allow", False)
    if not isinstance(inline_allow, bool):
        problems.append("inline_allow: must be true or false")
    if problems:
        raise PolicyError(source, problems)
    return Policy(name=str(data.get("name") or source), rules=tuple(rules), allow=tuple(allow),
                  fail_on=str(fail_on), max_file_bytes=int(max_bytes),
                  by_id={rule.id: rule for rule in rules}, inline_allow=bool(inline_allow))


def _parse_text(text: str, source: str) -> Any:
    try:
        if source.endswith(".json"):
            return json.loads(text)
        return yaml.safe_load(text)
    except (json.JSONDecodeError, yaml.YAMLError) as exc:
        raise PolicyError(source, [f"not valid {'JSON' if source.endswith('.json') else 'YAML'}"
                                   f": {exc}"]) from None


def load_policy(path: str | Path) -> Policy:
    """Read a policy file (``.json`` as JSON, anything else as YAML)."""
    source = str(path)
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise PolicyError(source, [f"cannot read: {exc.strerror or exc}"]) from None
    return policy_from_bytes(data, source)


def policy_from_bytes(data: bytes, source: str) -> Policy:
    """A policy from a file's bytes (``source`` ending in ``.json``: JSON, else YAML); the
    pre-push guard checks the bytes' digest first and parses exactly those bytes."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise PolicyError(source, ["not UTF-8 text"]) from None
    return parse_policy(_parse_text(text, source), source)


_DEFAULT_CACHE: dict[str, Policy] = {}


def default_policy() -> Policy:
    """The shipped public-repo policy: private addresses, secrets, internal host names."""
    policy = _DEFAULT_CACHE.get(DEFAULT_POLICY)
    if policy is None:
        text = resources.files("hookgate.boundary").joinpath("policies", DEFAULT_POLICY)
        policy = parse_policy(_parse_text(text.read_text(encoding="utf-8"), DEFAULT_POLICY),
                              f"builtin:{DEFAULT_POLICY}")
        _DEFAULT_CACHE[DEFAULT_POLICY] = policy
    return policy
