"""A hook definition made ready to run: its own module so that the registry and the matcher
index (which the registry builds) both name it without importing each other."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from hookgate.definition import HookDefinition
    from hookgate.matching import CelFilter, Matcher

__all__ = ["CompiledHook"]


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
