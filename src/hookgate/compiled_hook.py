"""A hook definition made ready to run: its own module so that the registry and the matcher
index (which the registry builds) both name it without importing each other."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from hookgate.definition import HookDefinition
    from hookgate.matching import CelFilter, Matcher

__all__ = ["CompiledHook", "HookList"]


@dataclass(frozen=True, slots=True, eq=False)
class CompiledHook:
    """A definition ready to run. Compared and hashed by identity (one per hook version)."""

    definition: HookDefinition
    matcher: Matcher | None
    condition: CelFilter | None
    timeout_s: float
    sort_key: tuple[int, int, str]
    #: Admitted without a look at the payload (:mod:`hookgate.chain`'s unconditional runs):
    #: enabled, no matcher, no ``if_expr``, no required approval, no long wait.
    unconditional: bool = False
    #: This hook once its matcher accepted the event (the same hook with no matcher left to
    #: test): what a source's selection hands the chain. Itself when it has no matcher.
    when_matched: CompiledHook = field(init=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "when_matched", self)


class HookList(tuple["CompiledHook", ...]):
    """Hooks in chain order as a source hands them out, and keeps them until its hooks change:
    a tuple that also carries what is worked out once per list, so that no cache is keyed by
    ``id()`` (a tuple subclass cannot have ``__slots__``: each list has a ``__dict__``).

    A source's resolved lists get a :attr:`matcher_index`, its selections a
    :attr:`shadow_split`, and the lists the chain receives an :attr:`unconditional_run` and a
    :attr:`plan`. A plain tuple or list from
    another source works the same, with nothing kept."""

    #: :class:`hookgate.matcher_index.MatcherIndex` over this list (made on first selection).
    matcher_index: Any = None
    #: :data:`hookgate.chain.UnconditionalRun` of this list (made on first chain).
    unconditional_run: Any = None
    #: :class:`hookgate.execution.runner.KeptPlan`: how the last runner that ran this list
    #: runs its batches.
    plan: Any = None
    #: This selection's enforce hooks and shadow hooks (:func:`hookgate.shadow.split_shadow`).
    shadow_split: Any = None
    #: :class:`hookgate.handlers.rule.history.HistoryPlan` of a resolved ``pre_tool_use``
    #: list: the tool calls its rule hooks look back at.
    history_plan: Any = None
