"""What a rule decides, apart from where its state lives: the keys it reads and counts, and
the verdict on what the store answered. :mod:`.handler` runs it on a store, with or without
an event loop; :mod:`.history` uses the same keys to write the session history.

Keys are built from trusted fields only: the event's tenant (the gateway sets it from the
caller's key), the hook's id, the rule's own tool pattern, and the session or agent id the
rule counts per. Nothing of a tool's input goes into a key.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Literal

from hookgate.definition import HookDefinition
from hookgate.handlers.rule.config import DEFAULT_HISTORY_S, RuleConfig
from hookgate.matching import Matcher
from hookgate.outcome import HookResult
from hookgate.state.rules import Admission, RuleKey

__all__ = [
    "SEEN",
    "SUCCEEDED",
    "CompiledRule",
    "Needs",
    "Watch",
    "block",
    "compile_rule",
    "history_keys",
    "history_verdict",
    "limit_key",
    "limit_verdict",
    "missing_subject",
    "rule_identity",
    "stamp_key",
    "subject_of",
    "tenant_of",
]

#: Stamp kinds: a call was admitted (``pre_tool_use``), a call succeeded (``post_tool_use``).
SEEN: Final = "seen"
SUCCEEDED: Final = "ok"
_SUBJECT_FIELD: Final = {"session": "session_id", "agent": "agent_id"}
_NAMED: Final = {"session": "session id", "agent": "agent id"}


@dataclass(frozen=True, slots=True)
class Watch:
    """A tool pattern whose calls the session history keeps, and for how long."""

    pattern: str
    matcher: Matcher
    per: str
    kind: str
    ttl_s: float


@dataclass(frozen=True, slots=True)
class Needs:
    """One history check: ``after`` (must be absent) or ``require``/``sequence`` (present,
    in order)."""

    role: Literal["after", "require", "sequence"]
    patterns: tuple[str, ...]
    per: str
    kind: str
    within_s: float | None


@dataclass(frozen=True, slots=True)
class CompiledRule:
    name: str
    #: Names the rule's counters: a digest of what the rule is (see :func:`rule_identity`).
    identity: str
    config: RuleConfig
    needs: tuple[Needs, ...]
    #: What the engine records for this rule.
    watches: tuple[Watch, ...]
    #: Every ``per`` the rule counts by (its event must carry each id).
    pers: tuple[str, ...]
    #: Whether every history check is an ``after`` (no stamp found: the call passes them).
    absences_only: bool = False
    #: :func:`history_keys` by (tenant, session, agent) id (a session's calls recur).
    keys_by_ids: dict[tuple[Any, ...], tuple[RuleKey, ...]] = field(
        default_factory=dict, compare=False, repr=False
    )


#: Memoized history keys kept per rule before they are dropped whole.
_KEYS_KEPT: Final = 4096


def rule_identity(hook: HookDefinition, model: RuleConfig) -> str:
    """What names a rule's counters: its owner, scope, event, name, matcher, if_expr and
    limit, not its id. A hooks file read again by every ``hookgate claude-code`` call gets new
    ids each time, and its limits must keep counting; a rule whose limit or selection
    changes starts a new count."""
    limit = model.limit.model_dump() if model.limit is not None else None
    described = [hook.tenant_id, hook.scope, sorted(hook.agent_ids), hook.event, hook.name,
                 hook.matcher, hook.if_expr, limit]
    raw = json.dumps(described, separators=(",", ":"), sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(raw.encode()).hexdigest()[:32]


def compile_rule(hook: HookDefinition) -> CompiledRule:
    """The rule a hook's config describes (raise pydantic's ValidationError when invalid)."""
    model = RuleConfig.model_validate(hook.config)
    needs: list[Needs] = []
    if model.after is not None:
        needs.append(Needs("after", (model.after.tool,), model.after.per, SEEN,
                           model.after.within_s))
    if model.require is not None:
        kind = SUCCEEDED if model.require.succeeded else SEEN
        needs.append(Needs("require", (model.require.tool,), model.require.per, kind,
                           model.require.within_s))
    if model.sequence is not None:
        kind = SUCCEEDED if model.sequence.succeeded else SEEN
        needs.append(Needs("sequence", tuple(model.sequence.tools), model.sequence.per, kind,
                           model.sequence.within_s))
    watches = tuple(
        Watch(pattern, Matcher(pattern), need.per, need.kind, need.within_s or DEFAULT_HISTORY_S)
        for need in needs
        for pattern in need.patterns
    )
    name = hook.name or hook.id
    pers = [need.per for need in needs] + ([model.limit.per] if model.limit else [])
    return CompiledRule(name, rule_identity(hook, model), model, tuple(needs), watches,
                        tuple(dict.fromkeys(pers)),
                        all(need.role == "after" for need in needs))


def subject_of(per: str, payload: Mapping[str, Any]) -> str | None:
    """The id a rule counts ``per`` (``tenant``: the tenant itself, already in every key)."""
    if per == "tenant":
        return "*"
    value = payload.get(_SUBJECT_FIELD[per])
    return str(value) if value not in (None, "") else None


def tenant_of(payload: Mapping[str, Any]) -> str:
    return str(payload.get("tenant_id") or "")


def stamp_key(tenant: str, kind: str, per: str, subject: str, pattern: str) -> RuleKey:
    return RuleKey(tenant, (kind, per, subject, pattern))


def block(rule: CompiledRule, reason: str, **details: Any) -> HookResult:
    return HookResult(decision="block", reason=f"rule {rule.name!r}: {reason}",
                      details={"rule": rule.name, **details})


def missing_subject(rule: CompiledRule, payload: Mapping[str, Any]) -> HookResult | None:
    """A block when the event lacks an id the rule counts per: the rule cannot be kept, and
    an agent must not slip past it by leaving its session id out."""
    for per in rule.pers:
        if per != "tenant" and payload.get(_SUBJECT_FIELD[per]) in (None, ""):
            return block(rule, f"the event has no {_NAMED[per]}, so the rule cannot be kept")
    return None


def history_keys(rule: CompiledRule, payload: Mapping[str, Any]) -> tuple[RuleKey, ...]:
    """The stamps the rule's history checks read (call :func:`missing_subject` first)."""
    tenant_id, session_id, agent_id = ids = (
        payload.get("tenant_id"), payload.get("session_id"), payload.get("agent_id")
    )
    # Ids are agent input of any JSON type: only strings (or none) make a memo key.
    hashable = (
        (tenant_id is None or tenant_id.__class__ is str)
        and (session_id is None or session_id.__class__ is str)
        and (agent_id is None or agent_id.__class__ is str)
    )
    if hashable:
        keys = rule.keys_by_ids.get(ids)
        if keys is not None:
            return keys
    tenant = tenant_of(payload)
    keys = tuple(
        stamp_key(tenant, need.kind, need.per, subject_of(need.per, payload) or "", pattern)
        for need in rule.needs
        for pattern in need.patterns
    )
    if hashable:
        if len(rule.keys_by_ids) >= _KEYS_KEPT:
            rule.keys_by_ids.clear()
        rule.keys_by_ids[ids] = keys
    return keys


def history_verdict(
    rule: CompiledRule,
    payload: Mapping[str, Any],
    keys: Sequence[RuleKey],
    stamps: Mapping[RuleKey, float],
    now: float,
) -> HookResult | None:
    """A block when a history check fails, else ``None``; ``keys`` are
    :func:`history_keys`'s, in its order."""
    if not stamps and rule.absences_only:
        return None  # the common case of a taint rule: nothing to look back at
    tool = payload.get("tool_name") or "this call"
    place = iter(keys)
    for need in rule.needs:
        times = []
        for _pattern in need.patterns:
            at = stamps.get(next(place))
            if at is not None and need.within_s is not None and now - at > need.within_s:
                at = None  # older than the rule looks back
            times.append(at)
        if need.role == "after":
            if times[0] is not None:
                return block(
                    rule,
                    f"{tool} is not allowed after a call matching {need.patterns[0]!r} in this "
                    f"{need.per} ({now - times[0]:.0f} s ago)",
                    after=need.patterns[0],
                )
            continue
        what = "succeeded" if need.kind == SUCCEEDED else "was made"
        for step, (pattern, at) in enumerate(zip(need.patterns, times, strict=True)):
            if at is None:
                return block(
                    rule,
                    f"{tool} needs an earlier call matching {pattern!r} that {what} in this "
                    f"{need.per}",
                    missing=pattern,
                )
            before = times[step - 1] if step else None
            if before is not None and at < before:
                return block(
                    rule,
                    f"{tool} needs a call matching {pattern!r} after the latest call matching "
                    f"{need.patterns[step - 1]!r} in this {need.per}",
                    missing=pattern,
                )
    return None


def limit_key(rule: CompiledRule, payload: Mapping[str, Any], now: float
              ) -> tuple[RuleKey, float]:
    """The counter of the current window and the seconds until the window ends."""
    limit = rule.config.limit
    assert limit is not None
    window_s, per = limit.window_s, limit.per
    window = int(now // window_s)
    # subject_of and tenant_of, inline: this is once per event of a limit rule.
    if per == "tenant":
        subject = "*"
    else:
        value = payload.get(_SUBJECT_FIELD[per])
        subject = str(value) if value not in (None, "") else ""
    tenant = str(payload.get("tenant_id") or "")
    return RuleKey(tenant, ("limit", rule.identity, per, subject, window)), (
        (window + 1) * window_s - now
    )


def limit_verdict(rule: CompiledRule, admission: Admission, ends_in: float
                  ) -> HookResult | None:
    """A block naming the count when the limit is full; else ``None``: an admitted call
    abstains (the chain's cheapest answer: a rule costs an event little more than its
    counter)."""
    if admission.admitted:
        return None
    limit = rule.config.limit
    assert limit is not None
    return block(
        rule,
        f"{admission.calls} of {limit.count} calls per {limit.per} in {limit.window_s:g} s "
        f"used; the window ends in {ends_in:.0f} s",
        count=admission.calls, limit=limit.count,
    )
