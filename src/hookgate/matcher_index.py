"""Which hooks of an event a match subject (the tool name, for tool events) selects.

A hook's matcher is an unanchored RE2 search (:class:`hookgate.matching.Matcher`). Most
matchers are literal names (``^Bash$``, ``Edit|Write``, ``mcp__github__.*``): a
:class:`MatcherIndex`, made once per hook list, answers those with one dictionary lookup per
distinct length of the anchored names, and only runs the others (``^Bash(Output)?$``) through
RE2. :class:`Selections` keeps the answer per (event, tenant, agent, subject), bounded, and is
replaced whole when the hooks change.

What the chain receives is the selection: each selected hook as it is once its matcher
accepted (:attr:`CompiledHook.when_matched`: no matcher left to test), so a hook whose matcher
rejects the subject costs nothing per event and leaves no trace row.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final

from hookgate.compiled_hook import HookList

if TYPE_CHECKING:
    from hookgate.compiled_hook import CompiledHook
    from hookgate.events import EventSpec
    from hookgate.matching import Matcher

__all__ = [
    "MAX_CACHED_SUBJECT",
    "MAX_SELECTIONS",
    "MatcherIndex",
    "SelectingSource",
    "Selections",
    "keep_for",
]

#: Subjects (and tenant or agent ids) longer than this are selected every time, never kept
#: (tool names are short; an agent's made-up long names must not fill memory).
MAX_CACHED_SUBJECT: Final = 256
#: Selections (and resolved lists) kept per source before the cache starts again: one per
#: tool name and agent in practice.
MAX_SELECTIONS: Final = 4096


def keep_for(cache: dict[Any, Any], *ids: object) -> bool:
    """Whether an answer for these ids (tenant, agent, tool name) may be kept in ``cache``:
    ids that are short strings or ``None``; a full cache is emptied first. Agents pick their
    own ids and tool names, so what is kept per id is bounded."""
    for value in ids:
        if value is not None and not (isinstance(value, str) and len(value) <= MAX_CACHED_SUBJECT):
            return False
    if len(cache) >= MAX_SELECTIONS:
        cache.clear()
    return True


def _lengths(table: dict[str, list[int]]) -> tuple[int, ...]:
    return tuple(sorted({len(word) for word in table}))


class MatcherIndex:
    """Lookup tables over one sorted hook list, made once per list (kept on it:
    :attr:`HookList.matcher_index`)."""

    __slots__ = (
        "_always",
        "_contained",
        "_exact",
        "_prefix_lengths",
        "_prefixes",
        "_searched",
        "_selected",
        "_suffix_lengths",
        "_suffixes",
        "hooks",
    )

    def __init__(self, hooks: Sequence[CompiledHook]) -> None:
        self.hooks = hooks
        always: list[int] = []
        exact: dict[str, list[int]] = {}
        prefixes: dict[str, list[int]] = {}
        suffixes: dict[str, list[int]] = {}
        contained: list[tuple[str, int]] = []
        searched: list[tuple[Matcher, int]] = []
        for position, hook in enumerate(hooks):
            matcher = hook.matcher
            if matcher is None:
                always.append(position)
            elif matcher.literal is None:
                searched.append((matcher, position))
            else:
                for term in matcher.literal:
                    if term.at_start and term.at_end:
                        exact.setdefault(term.word, []).append(position)
                    elif term.at_start:
                        prefixes.setdefault(term.word, []).append(position)
                    elif term.at_end:
                        suffixes.setdefault(term.word, []).append(position)
                    else:
                        contained.append((term.word, position))
        self._always = tuple(always)
        self._exact = exact
        self._prefixes, self._prefix_lengths = prefixes, _lengths(prefixes)
        # A subject shorter than a length is looked up whole: found only if it is a word of
        # its own length, which matches it anyway.
        self._suffixes, self._suffix_lengths = suffixes, _lengths(suffixes)
        self._contained = tuple(contained)
        self._searched = tuple(searched)
        #: One list per distinct selection: every subject that selects the same hooks gets
        #: the same :class:`HookList`, so what the engine keeps on a hook list is made once.
        self._selected: dict[tuple[int, ...], HookList] = {}

    def select(self, subject: str) -> HookList:
        """The hooks whose matcher accepts ``subject``, in list order, as matched."""
        positions = set(self._always)
        found = self._exact.get(subject)
        if found:
            positions.update(found)
        if self._prefix_lengths:
            prefixes = self._prefixes
            for length in self._prefix_lengths:
                found = prefixes.get(subject[:length])
                if found:
                    positions.update(found)
        if self._suffix_lengths:
            suffixes = self._suffixes
            for length in self._suffix_lengths:
                found = suffixes.get(subject[-length:])
                if found:
                    positions.update(found)
        for word, position in self._contained:
            if position not in positions and word in subject:
                positions.add(position)
        for matcher, position in self._searched:
            if position not in positions and matcher.matches(subject):
                positions.add(position)
        key = tuple(sorted(positions))
        selected = self._selected.get(key)
        if selected is None:
            hooks = self.hooks
            selected = HookList(hooks[position].when_matched for position in key)
            if len(self._selected) >= MAX_SELECTIONS:
                self._selected.clear()
            self._selected[key] = selected
        return selected


class Selections:
    """A hook source's selections: per (event, tenant, agent, subject), bounded. A source
    replaces its ``Selections`` whole when its hooks change."""

    __slots__ = ("selected",)

    def __init__(self) -> None:
        #: Read directly on the hot path: ``selected.get(key)``.
        self.selected: dict[Hashable, HookList] = {}

    def select(
        self, key: tuple[str, Any, Any, str], hooks: Sequence[CompiledHook], subject: str
    ) -> HookList:
        """Select from ``hooks`` (the scoped, sorted list of ``key``'s event) and keep it."""
        if not hooks:
            return hooks if isinstance(hooks, HookList) else HookList()
        if isinstance(hooks, HookList):
            index: MatcherIndex | None = hooks.matcher_index
            if index is None:
                index = hooks.matcher_index = MatcherIndex(hooks)
        else:  # a source whose lists are plain tuples: nothing to keep the index on
            index = MatcherIndex(hooks)
        selected = index.select(subject)
        if keep_for(self.selected, *key):
            self.selected[key] = selected
        return selected


class SelectingSource:
    """What a hook source adds to select by matcher (the registry and the gateway's store
    source): it sets ``_selections`` (a new :class:`Selections` after every change, made
    last) and has ``resolve``."""

    _selections: Selections

    def resolve(
        self, event: str, tenant_id: str | None, agent_id: str | None
    ) -> Sequence[CompiledHook]:
        raise NotImplementedError

    def select(self, spec: EventSpec, data: Mapping[str, Any]) -> HookList:
        """The hooks that run for one event: :meth:`resolve`'s list for its tenant and agent,
        less those whose matcher rejects its match field (the tool name for tool events; a
        value that is not a string is tested as ``""``), each as
        :attr:`CompiledHook.when_matched`. Once per event: a dictionary lookup when cached."""
        field = spec.match_field
        key = (
            spec.name,
            data.get("tenant_id"),
            data.get("agent_id"),
            data.get(field, "") if field else "",
        )
        try:
            hooks = self._selections.selected.get(key)
        except TypeError:  # a value that cannot be a key (not a string): selected below
            hooks = None
        if hooks is None:
            hooks = self._select_again(key)
        return hooks

    def _select_again(self, key: tuple[str, Any, Any, Any]) -> HookList:
        """A selection not kept (yet): made from :meth:`resolve`'s list and kept."""
        event, tenant_id, agent_id, subject = key
        if subject.__class__ is not str:
            subject = ""
            key = (event, tenant_id, agent_id, subject)
        selections = self._selections
        return selections.select(key, self.resolve(event, tenant_id, agent_id), subject)
