"""Shadow mode: hooks that run and are recorded, and never decide.

A hook with ``mode: shadow`` is taken out of its event's chain (:func:`split_shadow`): the
chain the agent's answer comes from runs the enforce hooks only, so nothing a shadow hook
does (an answer, a rewrite, a failure, a hang, the chain budget it spends) can reach the
outcome. Each shadow hook then runs alone, as a one-hook chain under the same rules (its
matcher, ``if_expr``, timeout, ``on_error`` / ``on_timeout``, approvals), against the event as
the agent sent it, with no circuit breaker and on worker threads of its own; what that chain
came to is its trace row, renamed to what it *would* have done (:func:`shadow_row`):
``would_block`` (with the reason), ``would_allow``, ``would_ask``, ``would_respond``,
``would_abort``; ``abstain`` when it had nothing to say, ``error`` / ``timeout`` when it
failed and its policy would have let the event through.

When they run: on a blocking event after the enforce chain and before the answer (the
outcome carries their rows); on a non-blocking event in the background, after the answer.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Final

from hookgate.compiled_hook import HookList
from hookgate.outcome import Outcome, TraceRow

if TYPE_CHECKING:
    from hookgate.compiled_hook import CompiledHook

__all__ = [
    "NO_SHADOW",
    "SHADOW_REASON_CHARS",
    "SHADOW_SKIPPED",
    "ShadowChains",
    "merge_rows",
    "shadow_row",
    "split_shadow",
]

#: Each shadow hook as the one-hook chain it runs as.
ShadowChains = tuple[tuple["CompiledHook"], ...]
NO_SHADOW: Final[ShadowChains] = ()
#: A hook's chain decisions that become ``would_<decision>`` in shadow mode.
_DECISIONS: Final = frozenset({"allow", "block", "ask", "respond", "abort"})
_FAILURES: Final = frozenset({"error", "timeout"})
#: The longest reason a shadow row keeps: what it would have said, bounded wherever it goes
#: (the trace the agent gets, the audit that redacts and seals it). An enforce hook's reason
#: is the agent's answer; a shadow hook's is only a note.
SHADOW_REASON_CHARS: Final = 1024
#: The detail of a failure that says why a shadow hook could not run at all (its model call
#: would have taken the budget the enforce hooks keep): its row says ``error``, never what
#: it would have decided.
SHADOW_SKIPPED: Final = "shadow_skipped"


def split_shadow(hooks: Sequence[CompiledHook]) -> tuple[Sequence[CompiledHook], ShadowChains]:
    """A selection's enforce hooks and its shadow hooks, worked out once per hook list.

    The enforce part of a selection with no shadow hook is the selection itself, and a
    selection's parts are kept on it (:attr:`HookList.shadow_split`), so the chain and the
    runner see the same list on every event and keep their per-list plans on it.
    """
    if isinstance(hooks, HookList):
        kept: tuple[Sequence[CompiledHook], ShadowChains] | None = hooks.shadow_split
        if kept is not None:
            return kept
    shadow = tuple((hook,) for hook in hooks if hook.definition.mode == "shadow")
    enforce: Sequence[CompiledHook] = hooks
    if shadow:
        enforce = HookList(hook for hook in hooks if hook.definition.mode != "shadow")
    split = (enforce, shadow)
    if isinstance(hooks, HookList):
        hooks.shadow_split = split
    return split


def shadow_row(outcome: Outcome) -> TraceRow | None:
    """The trace row of a shadow hook's one-hook chain, saying what it would have done;
    ``None`` when the chain considered no hook (the loop guard refused the event)."""
    rows = outcome._rows
    if not rows:
        return None
    row = rows[0]
    decision = row.decision
    if not row.matched or decision is None:
        return row  # skipped: the trace says why, the audit keeps no row
    if decision in _DECISIONS:
        row.decision = f"would_{decision}"
    elif (
        decision in _FAILURES
        and outcome.decision == "block"
        and not (row.details and SHADOW_SKIPPED in row.details)
    ):
        row.decision = "would_block"  # its failure policy would have blocked
    details = row.details
    if details is None:
        details = row.details = {}
    if row.decision == "would_block" and outcome.reason:
        details.setdefault("reason", outcome.reason)
    reason = details.get("reason")
    if isinstance(reason, str) and len(reason) > SHADOW_REASON_CHARS:
        details["reason"] = reason[: SHADOW_REASON_CHARS - 1] + "…"
    if outcome.updated_input is not None:
        details["would_rewrite"] = True
    if outcome.additional_context:
        details["would_add_context"] = len(outcome.additional_context)
    return row


def merge_rows(outcome: Outcome, rows: Sequence[TraceRow | None]) -> None:
    """Add the shadow hooks' rows after the enforce chain's, in hook order."""
    kept = [row for row in rows if row is not None]
    if not kept:
        return
    outcome._rows = [*(outcome._rows or ()), *kept]
    outcome._trace = None
