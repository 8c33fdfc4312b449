"""The engine: agent code creates one and calls ``await engine.fire(event, payload)``.

``fire`` and ``fire_sync`` take the same four steps: prepare the event (names, payload,
limits), resolve its chain (the hooks, or the background queue for a non-blocking event),
drive it (:mod:`hookgate.execution`, the one place that runs hooks), and emit the outcome
(audit records, a person's approval). It holds no chain rules of its own.
"""

from __future__ import annotations

import asyncio
import itertools
import os
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from time import perf_counter
from typing import TYPE_CHECKING, Any, NamedTuple, TypeVar

from hookgate.audit import AuditSink, ExecutionRecord, new_dispatch_id
from hookgate.chain import ChainSettings
from hookgate.compiled_hook import HookList
from hookgate.definition import DefinitionError, HookDefinition, Problem
from hookgate.engine_audit import (
    INPUT_GUARD_ID,
    RESUMED_DISPATCH,
    DispatchContext,
    chain_records,
    dispatch_record,
    hand_off,
    hand_off_dispatch,
    input_refusal_record,
    keep_unmatched,
)
from hookgate.errors import EngineClosed
from hookgate.events import (
    EVENTS_BY_NAME,
    KNOWN_FIELDS,
    EventSpec,
    get_event,
    normalize_payload,
)
from hookgate.execution.background import BackgroundQueue
from hookgate.execution.runner import HookRunner
from hookgate.execution.workers import WorkerPool
from hookgate.handlers import Handler, Services
from hookgate.host_code import HostCodePolicy
from hookgate.log import log_event
from hookgate.outcome import Outcome
from hookgate.payload_limits import payload_problem
from hookgate.registry import (
    CompiledHook,
    HookRegistry,
    HookSource,
    MatchingSource,
    compile_hook,
)
from hookgate.safeguards import BreakerBoard
from hookgate.settings import Settings
from hookgate.shadow import ShadowChains, merge_rows, split_shadow

if TYPE_CHECKING:
    from hookgate.approvals import Approver
    from hookgate.handlers.rule.history import SessionHistory
    from hookgate.state.rules import Stamp

__all__ = ["INPUT_GUARD_ID", "ChainDriver", "Engine", "EngineStats", "RecordedRun"]

F = TypeVar("F", bound=Callable[..., Any])
#: Events whose admitted calls the session history of rule hooks may record.
_HISTORY_EVENTS = frozenset({"pre_tool_use", "post_tool_use"})
_NO_STAMPS: tuple[Stamp, ...] = ()


@dataclass(slots=True)
class EngineStats:
    fired: int = 0
    audit_records: int = 0
    threads: WorkerPool | None = None
    background: BackgroundQueue | None = None
    #: The shadow hooks' own workers (made with the shadow runner, on first use).
    shadow_threads: WorkerPool | None = None

    @property
    def background_queued(self) -> int:
        """Non-blocking chains queued so far."""
        return self.background.queued if self.background is not None else 0

    @property
    def background_dropped(self) -> int:
        """Non-blocking chains dropped because the queue was full."""
        return self.background.dropped if self.background is not None else 0

    @property
    def background_failed(self) -> int:
        """Non-blocking chains that raised (isolated from the agent)."""
        return self.background.failed if self.background is not None else 0

    @property
    def hook_threads_stuck(self) -> int:
        """Worker threads still running an isolated hook that overran its timeout."""
        return self.threads.stuck if self.threads is not None else 0

    @property
    def hook_threads_abandoned(self) -> int:
        """Isolated hook calls given up at their deadline so far."""
        return self.threads.abandoned if self.threads is not None else 0

    @property
    def shadow_hook_threads_stuck(self) -> int:
        """Shadow hooks' worker threads still running past their timeout (they count
        against no enforce hook's cap)."""
        return self.shadow_threads.stuck if self.shadow_threads is not None else 0

    def to_dict(self) -> dict[str, int]:
        return {
            "fired": self.fired,
            "background_queued": self.background_queued,
            "background_dropped": self.background_dropped,
            "background_failed": self.background_failed,
            "audit_records": self.audit_records,
            "hook_threads_stuck": self.hook_threads_stuck,
            "hook_threads_abandoned": self.hook_threads_abandoned,
            "shadow_hook_threads_stuck": self.shadow_hook_threads_stuck,
        }


#: Drives an event's enforce chain (spec, payload, hooks) to its outcome: run_recorded.
ChainDriver = Callable[[EventSpec, Mapping[str, Any], Sequence[CompiledHook]], Awaitable[Outcome]]


class RecordedRun(NamedTuple):
    """What :meth:`Engine.run_recorded` made of one event: its outcome (shadow hooks' rows
    in its trace), and whether that outcome decides (a non-blocking chain's never does)."""

    outcome: Outcome
    decides: bool


#: An event ready to drive, ``(spec, data, hooks, queued, stamps)``: the spec its chain runs
#: under, its payload, its hooks (all of the selection: enforce and shadow ones, split where
#: the chain is driven), whether it goes to the background queue (non-blocking and not waited
#: for), and the session history to record once it is admitted (rule hooks look back). A
#: plain tuple, unpacked at once by name: a record class costs ~1.9k instructions more per
#: event to build (bench/bench_core.py, 1 hook: ~5 % of fire_sync).
_Resolved = tuple[EventSpec, Mapping[str, Any], Sequence[CompiledHook], bool, "tuple[Stamp, ...]"]


class Engine:
    """Runs hook chains. Create one per agent process and share it.

    :param hooks: definitions (or raw dicts) to register at once.
    :param settings: edition, chain budget, breaker thresholds, queue size.
    :param source: where hooks come from; defaults to an in-memory :class:`HookRegistry`.
    :param audit: where execution records go; ``None`` keeps none.
    """

    def __init__(
        self,
        hooks: Iterable[HookDefinition | Mapping[str, Any]] = (),
        *,
        settings: Settings | None = None,
        source: HookSource | None = None,
        audit: AuditSink | None = None,
        services: Services | None = None,
        clock: Callable[[], float] = time.monotonic,
        approver: Approver | None = None,
    ) -> None:
        self.settings = settings or Settings()
        self.services = services or Services(settings=self.settings)
        if approver is not None:
            self.services.approver = approver
        self.approver: Approver | None = self.services.approver
        if source is None:
            source = HookRegistry()
        # Hooks added from code go where fire reads them; a source that is not a registry
        # (the gateway's database) cannot take them, so adding raises instead of vanishing.
        self._registry = source if isinstance(source, HookRegistry) else None
        self.source: HookSource = source
        #: Whether the source lists its handler types (``handler_types``, as both of
        #: hookgate's do); one that does not may hold a rule hook.
        self._lists_types = hasattr(source, "handler_types")
        #: The hooks that run for an event: the source's selection by matcher (hooks whose
        #: matcher rejects the event never reach the chain), or, for a source that cannot
        #: select, its hooks for the tenant and agent (the chain then skips on the matcher).
        self._select: Callable[[EventSpec, Mapping[str, Any]], Sequence[CompiledHook]] = (
            source.select if isinstance(source, MatchingSource) else self._source_hooks
        )
        self.audit = audit
        self.listeners: list[Callable[[Sequence[ExecutionRecord]], None]] = []
        self._background = BackgroundQueue(
            self._drive_and_emit,
            size=self.settings.background_queue_size,
            workers=self.settings.background_workers,
        )
        self._clock = clock
        self.breakers = BreakerBoard(
            threshold=self.settings.breaker_threshold,
            window_s=self.settings.breaker_window_s,
            cooldown_s=self.settings.breaker_cooldown_s,
            clock=clock,
        )
        #: Runs the hooks: handlers, the worker pool of isolated functions, the loop thread.
        self.runner = HookRunner(
            self.settings,
            self.services,
            clock,
            ChainSettings(
                chain_budget_s=self.settings.chain_budget_s,
                max_depth=self.settings.max_depth,
                clock=clock,
                breakers=self.breakers,
                approvals=self.approver is not None,
            ),
            ChainSettings(
                chain_budget_s=self.settings.chain_budget_s,
                max_depth=self.settings.max_depth,
                clock=clock,
                breakers=None,
                dry_run=True,
            ),
        )
        #: The worker threads of isolated plain functions (``isolate: thread``).
        self.threads = self.runner.pool
        #: A selection's enforce hooks and its shadow hooks (:mod:`hookgate.shadow`).
        self._split = split_shadow
        self._shadow: HookRunner | None = None
        self.stats = EngineStats(threads=self.threads, background=self._background)
        self._event_ids = itertools.count(1)
        self._event_prefix = os.urandom(6).hex()
        self._closed = False
        #: Made when a tool event meets a ``pre_tool_use`` hook (it imports the rule handler).
        self._history: SessionHistory | None = None
        for hook in hooks:
            self.add(hook)

    @property
    def host_code_policy(self) -> HostCodePolicy:
        """Who may run host code beyond the edition's rule (the gateway's master rule)."""
        return self.runner.host_code_policy

    @host_code_policy.setter
    def host_code_policy(self, policy: HostCodePolicy) -> None:
        self.runner.host_code_policy = policy
        if self._shadow is not None:
            self._shadow.host_code_policy = policy

    @property
    def shadow_runner(self) -> HookRunner:
        """Runs shadow hooks (made on first use): no circuit breaker, approvals noted rather
        than asked, and worker threads of its own, so that a shadow hook's faults, hangs and
        stuck workers never reach an enforce hook or another tenant."""
        if self._shadow is None:
            settings = self.settings
            shadow = ChainSettings(
                chain_budget_s=settings.chain_budget_s,
                max_depth=settings.max_depth,
                clock=self._clock,
                breakers=None,
                approvals=True,
            )
            dry = replace(shadow, dry_run=True)
            runner = HookRunner(
                settings, self.services, self._clock, shadow, dry, own_threads=True
            )
            runner.host_code_policy = self.runner.host_code_policy
            self.stats.shadow_threads = runner.pool
            self._shadow = runner
        return self._shadow

    async def _run_shadow(
        self,
        spec: EventSpec,
        data: Mapping[str, Any],
        chains: ShadowChains,
        outcome: Outcome,
        dry_run: bool = False,
    ) -> None:
        """Run the shadow hooks of an event and add their rows to ``outcome``'s trace."""
        merge_rows(outcome, await self.shadow_runner.run_shadow(spec, data, chains, dry_run))

    # -- registration ---------------------------------------------------------------------

    @property
    def registry(self) -> HookRegistry:
        """The in-memory registry hooks are added to; ``TypeError`` when the engine reads
        its hooks from another source (register them there)."""
        if self._registry is None:
            raise TypeError(
                f"this engine reads its hooks from {type(self.source).__name__}, not from a "
                "HookRegistry: add, hook, load, remove and set_enabled would register hooks "
                "that fire never sees. Register them in that source, or pass "
                "source=HookRegistry(...)"
            )
        return self._registry

    def add(self, hook: HookDefinition | Mapping[str, Any]) -> HookDefinition:
        """Register a hook (a definition, or a raw dict validated here)."""
        if isinstance(hook, HookDefinition):
            definition = hook
            refusal = self.host_code_policy.refusal(definition, self.settings.edition)
            if refusal is not None:
                raise DefinitionError([Problem("handler_type", refusal)], name=definition.name)
        else:
            # The schema imports pydantic: only when something is validated.
            from hookgate.definition_model import validate_definition

            raw = dict(hook)
            raw.setdefault("order", self.registry.next_order())
            definition = validate_definition(
                raw, edition=self.settings.edition, default_scope="global"
            )
        self.registry.put(definition)
        return definition

    def hook(
        self,
        event: str,
        *,
        matcher: str | None = None,
        if_expr: str | None = None,
        priority: int = 0,
        timeout_ms: int | None = None,
        name: str | None = None,
        on_timeout: str | None = None,
        on_error: str | None = None,
        enabled: bool = True,
        approval: str | Mapping[str, Any] | None = None,
        isolate: str | None = None,
        mode: str = "enforce",
    ) -> Callable[[F], F]:
        """Decorator: register a function or coroutine function as a ``callable`` hook.

        A plain function runs in place on the caller's thread (it is the program's own code:
        an overrun on a blocking event blocks once it returns); ``isolate="thread"`` runs it
        on a worker with a hard deadline instead (the caller gets ``on_timeout`` at it).
        ``mode="shadow"``: it runs and is recorded, and never decides (:mod:`hookgate.shadow`).
        """

        def register(fn: F) -> F:
            raw: dict[str, Any] = {
                "event": event,
                "handler_type": "callable",
                "name": name or getattr(fn, "__qualname__", "hook"),
                "matcher": matcher,
                "if_expr": if_expr,
                "priority": priority,
                "enabled": enabled,
                "config": {"callable": fn},
                "mode": mode,
            }
            if isolate is not None:
                raw["config"]["isolate"] = isolate
            if timeout_ms is not None:
                raw["timeout_ms"] = timeout_ms
            if on_timeout is not None:
                raw["on_timeout"] = on_timeout
            if on_error is not None:
                raw["on_error"] = on_error
            if approval is not None:
                raw["approval"] = approval
            self.add(raw)
            return fn

        return register

    def load(self, path: str | Path) -> list[HookDefinition]:
        """Register every hook in a hooks file (any format :mod:`hookgate.config` knows)."""
        from hookgate.config import load_hooks

        definitions = load_hooks(path, edition=self.settings.edition)
        for definition in definitions:
            self.registry.put(definition)
        return definitions

    def remove(self, hook_id: str) -> HookDefinition | None:
        removed = self.registry.remove(hook_id)
        if removed is not None:
            self.breakers.reset(hook_id)
            self.forget_hook(removed)
        return removed

    def forget_hook(self, definition: HookDefinition) -> None:
        """Drop what the hook's handler keeps for it (it changed or went away)."""
        handler = self.runner.handlers.get(definition.handler_type)
        if handler is not None:
            handler.forget(definition.id)

    def set_enabled(self, hook_id: str, enabled: bool) -> HookDefinition:
        """Toggle a hook; enabling it resets its circuit breaker."""
        current = self.registry.get(hook_id)
        if current is None:
            raise KeyError(hook_id)
        updated = current.bumped(enabled=enabled)
        self.registry.put(updated)
        if enabled:
            self.breakers.reset(hook_id)
        return updated

    def handler(self, handler_type: str) -> Handler:
        """The engine's handler of a type (made on first use)."""
        return self.runner.handler(handler_type)

    # -- firing ---------------------------------------------------------------------------

    async def fire(
        self,
        event: str,
        payload: Mapping[str, Any] | None = None,
        /,
        *,
        wait: bool = False,
        **fields: Any,
    ) -> Outcome:
        """Run the hooks for ``event`` and return the one outcome.

        Blocking events wait for their chain. Non-blocking events are queued and return an
        empty allow at once, unless the caller waits: ``wait=True``, or a name that is a
        synchronous stage (``delegation.completed``, ``after_tool``, ``before_prompt_build``).
        A waited-for event that checks a result (``subagent_stop``, ``post_tool_use``) runs
        as a blocking chain, so a quality gate blocks and an after_tool abort stops the turn;
        others run now and return their context, and still cannot block.
        """
        resolved = self._resolve(event, payload, fields, wait)
        if isinstance(resolved, Outcome):
            return resolved
        spec, data, selected, queued, stamps = resolved
        if queued:
            if stamps:
                await self._keep_history(stamps, None)
            return self._queue(spec, data, selected, self._background.submit)
        # The dispatch record's duration: read only for an audit sink, which keeps it.
        started = perf_counter() if self.audit is not None else 0.0
        # split_shadow, inline for a list that keeps its split: this is once per event.
        split = selected.shadow_split if type(selected) is HookList else None
        hooks, shadow = split if split is not None else self._split(selected)
        outcome = await self.runner.run(spec, data, hooks)
        if shadow:
            await self._run_shadow(spec, data, shadow, outcome)
        if stamps and outcome.decision != "block":
            await self._keep_history(stamps, outcome if spec.blocking else None)
        if self.audit is None and not self.listeners and outcome.pending_approval is None:
            return outcome  # nothing to hand off, nobody to ask (_emit_outcome, in short)
        if self._emit_outcome(spec, data, outcome, started):
            return await self._settle(spec, data, outcome)
        return outcome

    def fire_sync(
        self,
        event: str,
        payload: Mapping[str, Any] | None = None,
        /,
        *,
        wait: bool = False,
        **fields: Any,
    ) -> Outcome:
        """:meth:`fire` for synchronous agent loops.

        Plain-function hooks run without an event loop (in place, or on a worker when
        isolated); any other handler runs on an engine-owned loop thread. Do not call this
        from inside a running loop.
        """
        resolved = self._resolve(event, payload, fields, wait)
        if isinstance(resolved, Outcome):
            return resolved
        spec, data, selected, queued, stamps = resolved
        if queued:
            if stamps:
                self._keep_history_sync(stamps, None)
            loop = self.runner.loop_thread().loop

            def submit(*item: Any) -> None:
                loop.call_soon_threadsafe(self._background.submit, *item)

            return self._queue(spec, data, selected, submit)
        # The dispatch record's duration: read only for an audit sink, which keeps it.
        started = perf_counter() if self.audit is not None else 0.0
        # split_shadow, inline for a list that keeps its split: this is once per event.
        split = selected.shadow_split if type(selected) is HookList else None
        hooks, shadow = split if split is not None else self._split(selected)
        outcome = self.runner.run_sync(spec, data, hooks)
        if shadow:
            self.runner.loop_thread().run(self._run_shadow(spec, data, shadow, outcome))
        if stamps and outcome.decision != "block":
            self._keep_history_sync(stamps, outcome if spec.blocking else None)
        if self.audit is None and not self.listeners and outcome.pending_approval is None:
            return outcome  # nothing to hand off, nobody to ask (_emit_outcome, in short)
        if self._emit_outcome(spec, data, outcome, started):
            return self.runner.loop_thread().run(self._settle(spec, data, outcome))
        return outcome

    async def run_recorded(
        self, event: str, payload: Mapping[str, Any], *, wait: bool, drive: ChainDriver
    ) -> RecordedRun:
        """One recorded event through this engine as :meth:`fire` takes it (prepared,
        selected, enforce chain, shadow hooks, the session history of rule hooks), with the
        enforce chain driven by ``drive`` and nothing handed off (no audit, nobody asked):
        replay's step (:mod:`hookgate.replay`)."""
        resolved = self._resolve(event, payload, {}, wait)
        if isinstance(resolved, Outcome):
            return RecordedRun(resolved, True)  # decided before any hook (no hooks, limits)
        spec, data, selected, queued, stamps = resolved
        if queued and stamps:
            await self._keep_history(stamps, None)  # kept before the chain, as fire does
        hooks, shadow = self._split(selected)
        outcome = await drive(spec, data, hooks) if hooks else Outcome()
        if shadow:
            await self._run_shadow(spec, data, shadow, outcome)
        if stamps and not queued and outcome.decision != "block":
            await self._keep_history(stamps, outcome if spec.blocking else None)
        return RecordedRun(outcome, spec.blocking)

    def _resolve(
        self,
        event: str,
        payload: Mapping[str, Any] | None,
        fields: Mapping[str, Any],
        wait: bool,
    ) -> _Resolved | Outcome:
        """Steps one and two of ``fire``: prepare the event, resolve its chain; an
        :class:`Outcome` when that already decides (no hooks, input over the limits)."""
        if self._closed:
            raise EngineClosed(f"{event}: this engine was closed")
        try:
            spec = EVENTS_BY_NAME[event]
        except KeyError:
            spec = get_event(event)  # raises UnknownEventError, with its suggestions
        data = payload if not fields else {**(payload or {}), **fields}
        if data is None:
            data = {}
        self.stats.fired += 1
        source = self.source
        has_hooks = source.has_event(spec.name)
        # Rule hooks look back at a session history of tool calls: recorded only while the
        # source holds a rule hook (a source that does not list its types may hold one).
        watched = (
            spec.name in _HISTORY_EVENTS
            and (not self._lists_types or "rule" in source.handler_types)  # type: ignore[attr-defined]
            and (has_hooks if spec.name == "pre_tool_use" else source.has_event("pre_tool_use"))
        )
        if not watched and not has_hooks and self._shallow(data):
            return Outcome() if self.audit is None else self._unmatched(spec, data)
        if spec.prepare is not None or not KNOWN_FIELDS.issuperset(data):
            data = self._prepare(data, spec)
        problem = payload_problem(data)
        if problem is not None:  # before any matcher: the input limits hold for the event
            return self.refuse_input(event, data, problem, wait=wait)
        hooks = self._select(spec, data) if has_hooks else ()
        stamps = self._stamps(spec.name, data) if watched else _NO_STAMPS
        if not hooks and self._shallow(data):
            if stamps:
                # Nothing judges the call: an empty chain admits it, and it is recorded.
                return (spec, data, hooks, False, stamps)
            return Outcome() if self.audit is None else self._unmatched(spec, data)
        if spec.always_blocking:
            return (spec, data, hooks, False, stamps)
        if not spec.waits(event, wait):
            return (spec, data, hooks, True, stamps)
        return (spec.run_as(event, wait), data, hooks, False, stamps)

    # -- the session history of rule hooks ------------------------------------------------

    def _stamps(self, event: str, data: Mapping[str, Any]) -> tuple[Stamp, ...]:
        history = self._history
        if history is None:
            from hookgate.handlers.rule.history import SessionHistory

            history = self._history = SessionHistory(self)
        return history.stamps(event, data)

    async def _keep_history(self, stamps: Sequence[Stamp], outcome: Outcome | None) -> None:
        assert self._history is not None
        await self._history.keep(stamps, outcome)

    def _keep_history_sync(self, stamps: Sequence[Stamp], outcome: Outcome | None) -> None:
        history = self._history
        assert history is not None
        if not history.keep_now(stamps, outcome):
            self.runner.loop_thread().run(history.keep(stamps, outcome))

    def _emit_outcome(
        self,
        spec: EventSpec,
        data: Mapping[str, Any],
        outcome: Outcome,
        started: float,
        dispatch_id: str | None = None,
        *,
        record: bool = True,
    ) -> bool:
        """Step four: name the dispatch, hand the chain's execution records off and (unless
        a person is still to decide) its dispatch record; True when the outcome still waits
        for something (the audit sink's durability, a person): :meth:`_settle`."""
        if self.audit is None and not self.listeners:
            return outcome.pending_approval is not None
        outcome.dispatch_id = dispatch_id or new_dispatch_id()
        event_id = self._event_id(data)
        records = (
            chain_records(spec, data, outcome, lambda _data: event_id, outcome.dispatch_id)
            if outcome._rows
            else []
        )
        self._emit(records)
        context = DispatchContext(outcome.dispatch_id, event_id, records, started)
        if record and outcome.pending_approval is None:
            # Recorded before the sink's wait, so one commit (sync mode) covers both.
            self._record_dispatch(spec, data, outcome, context)
        elif record:
            outcome._dispatch = context  # recorded once a person decided (_settle)
        return (self.audit is not None and bool(records)) or outcome.pending_approval is not None

    async def _settle(self, spec: EventSpec, data: Mapping[str, Any], outcome: Outcome) -> Outcome:
        if self.audit is not None and outcome._rows:
            await self.audit.wait_durable()
        if outcome.pending_approval is None:
            return outcome
        context: DispatchContext | None = outcome._dispatch
        outcome = await self._ask_person(spec, data, outcome, context)
        if context is not None:
            # An edited input's rerun answers with an outcome of its own: still this dispatch.
            outcome.dispatch_id = context.dispatch_id
            self._record_dispatch(spec, data, outcome, context)
            if self.audit is not None:
                await self.audit.wait_durable()
        return outcome

    async def _drive_and_emit(
        self,
        spec: EventSpec,
        data: Mapping[str, Any],
        hooks: Sequence[CompiledHook],
        dispatch_id: str | None = None,
    ) -> Outcome:
        """Steps three and four on the event loop (the background queue's way): the
        agent already has its answer, so shadow hooks run here too, after the chain."""
        started = time.perf_counter()
        hooks, shadow = self._split(hooks)
        outcome = await self.runner.run(spec, data, hooks)
        if shadow:
            await self._run_shadow(spec, data, shadow, outcome)
        if self._emit_outcome(spec, data, outcome, started, dispatch_id):
            return await self._settle(spec, data, outcome)
        return outcome

    # -- dispatch records -----------------------------------------------------------------

    def _record_dispatch(
        self,
        spec: EventSpec,
        data: Mapping[str, Any],
        outcome: Outcome,
        context: DispatchContext,
    ) -> None:
        """The dispatch's one record (one no hook matched: sampled by
        ``settings.audit_unmatched_sample``)."""
        if self.audit is None:
            return
        if not context.executions and not keep_unmatched(self.settings.audit_unmatched_sample):
            return
        record = dispatch_record(
            spec,
            data,
            outcome,
            event_id=context.event_id,
            executions=context.executions,
            duration_ms=(time.perf_counter() - context.started) * 1000,
        )
        hand_off_dispatch(record, self.audit)

    def _unmatched(self, spec: EventSpec, data: Mapping[str, Any]) -> Outcome:
        """An event no hook is selected for: an allow, and its record (sampled)."""
        outcome = Outcome()
        if keep_unmatched(self.settings.audit_unmatched_sample):
            data = self._prepare(data, spec)
            outcome.dispatch_id = new_dispatch_id()
            record = dispatch_record(
                spec, data, outcome, event_id=self._event_id(data), executions=(), duration_ms=0.0
            )
            hand_off_dispatch(record, self.audit)
        return outcome

    def _queue(
        self,
        spec: EventSpec,
        data: Mapping[str, Any],
        hooks: Sequence[CompiledHook],
        submit: Callable[..., None],
    ) -> Outcome:
        """A non-blocking event: queued, answered with an allow at once. Its chain records
        the dispatch under the id this answer carries."""
        if self.audit is None:
            submit(spec, data, hooks)
            return Outcome()
        if not hooks:
            return self._unmatched(spec, data)
        outcome = Outcome()
        outcome.dispatch_id = new_dispatch_id()
        submit(spec, data, hooks, outcome.dispatch_id)
        return outcome

    def _source_hooks(self, spec: EventSpec, data: Mapping[str, Any]) -> Sequence[CompiledHook]:
        """A source's hooks for the event's tenant and agent (sources that cannot select)."""
        return self.source.resolve(spec.name, data.get("tenant_id"), data.get("agent_id"))

    def _shallow(self, data: Mapping[str, Any]) -> bool:
        """Within the loop guard's depth: with no hook to run, the event is answered at once
        (deeper, the chain's loop guard answers it)."""
        depth = data.get("depth")
        return depth is None or (type(depth) is int and depth <= self.settings.max_depth)

    async def test(
        self,
        definition: HookDefinition | Mapping[str, Any],
        sample_event: Mapping[str, Any],
        *,
        event: str | None = None,
    ) -> Outcome:
        """Dry-run one hook: matcher, if_expr and handler run; no breaker, no audit row."""
        if not isinstance(definition, HookDefinition):
            from hookgate.definition_model import validate_definition

            definition = validate_definition(
                definition, edition=self.settings.edition, default_scope="tenant"
            )
        spec = get_event(event or definition.event)
        data = self._prepare(sample_event, spec)
        spec = spec.run_as(spec.name, True)  # the tester waits for the answer
        # A disabled hook is tested as if it were on: the tester asked for this hook.
        enabled = definition if definition.enabled else replace(definition, enabled=True)
        return await self._dry_run(spec, data, (compile_hook(enabled),))

    async def simulate(
        self,
        event: str,
        sample_event: Mapping[str, Any],
        hooks: Sequence[CompiledHook] | None = None,
    ) -> Outcome:
        """Dry-run the whole chain the event would run (``hooks``, or what the hook source
        resolves for the sample's tenant and agent): every hook's answer in the trace and the
        folded outcome; no breaker, no audit row."""
        spec = get_event(event)
        data = self._prepare(sample_event, spec)
        if hooks is None:
            hooks = self.source.resolve(spec.name, data.get("tenant_id"), data.get("agent_id"))
        return await self._dry_run(spec.run_as(spec.name, True), data, tuple(hooks), True)

    async def _dry_run(
        self,
        spec: EventSpec,
        data: Mapping[str, Any],
        hooks: tuple[CompiledHook, ...],
        split: bool = False,
    ) -> Outcome:
        """``split``: shadow hooks run as they would (recorded, not deciding); else every
        hook decides (testing one hook shows its own answer, whatever its mode)."""
        if self._closed:
            raise EngineClosed(f"{spec.name}: this engine was closed")
        shadow: ShadowChains = ()
        if split:
            enforce, shadow = self._split(hooks)
            hooks = tuple(enforce)
        outcome = await self.runner.dry_run(spec, data, hooks)
        if shadow:
            await self._run_shadow(spec, data, shadow, outcome, dry_run=True)
        return outcome

    def refuse_input(
        self, event: str, data: Mapping[str, Any], problem: str, *, wait: bool = False
    ) -> Outcome:
        """An event whose input is over the payload limits: no hook runs, one audit row says
        why, and a blocking event blocks (a non-blocking one is dropped)."""
        spec = get_event(event)
        blocking = spec.run_as(event, wait).blocking  # a waited-for result check blocks too

        log_event("security.hook.invalid_input", hook_event=spec.name, error=problem)
        outcome = (
            Outcome(decision="block", reason=f"invalid input: {problem}")
            if blocking
            else Outcome()
        )
        record = input_refusal_record(
            spec,
            data,
            problem,
            blocking=blocking,
            new_event_id=self.new_event_id,
            dispatch_id=outcome.dispatch_id,
        )
        self._emit([record])
        if self.audit is not None:
            # No hook ran: the dispatch record says why, and keeps no copy of the input.
            refused = dispatch_record(
                spec,
                data,
                outcome,
                event_id=record.event_id,
                executions=(),
                duration_ms=0.0,
                refused=problem,
            )
            refused.payload = None
            hand_off_dispatch(refused, self.audit)
        return outcome

    # -- internals ------------------------------------------------------------------------

    def _prepare(self, data: Mapping[str, Any], spec: EventSpec) -> Mapping[str, Any]:
        # Payloads in our own spelling pass through untouched (the common case, and cheap);
        # camelCase or PascalCase ones are rewritten into a new dict.
        if not KNOWN_FIELDS.issuperset(data):
            data = normalize_payload(data)
        if spec.prepare is not None:
            data = spec.prepare(data)
        return data

    def new_event_id(self) -> str:
        """A fresh event id, unique across processes (random prefix, then a counter)."""
        return f"{self._event_prefix}-{next(self._event_ids)}"

    def _event_id(self, data: Mapping[str, Any]) -> str:
        event_id = data.get("event_id")
        return str(event_id) if event_id else self.new_event_id()

    def _emit(self, records: list[ExecutionRecord]) -> None:
        if not records:  # no hook ran (none matched): nothing to hand off
            return
        self.stats.audit_records += len(records)
        hand_off(records, self.audit, self.listeners)

    async def _ask_person(
        self,
        spec: EventSpec,
        data: Mapping[str, Any],
        outcome: Outcome,
        context: DispatchContext | None = None,
    ) -> Outcome:
        # Imported here: only engines with an approver need it (the Claude Code bridge's
        # start-up path stays small).
        from hookgate.approvals import seek_approval

        assert self.approver is not None
        # The approval names the event id the dispatch's rows carry; hooks run again on an
        # edited input write their rows under the same dispatch.
        ids = self._event_id if context is None else (lambda _data: context.event_id)
        token = RESUMED_DISPATCH.set(outcome.dispatch_id if context is not None else None)
        try:
            return await seek_approval(
                self.approver, spec, data, outcome, ids, self.resume_after_approval
            )
        finally:
            RESUMED_DISPATCH.reset(token)

    async def resume_after_approval(
        self, event: str, data: Mapping[str, Any], hook_id: str
    ) -> Outcome:
        """The rest of ``event``'s chain after the hook ``hook_id`` (the one that asked a
        person), run on ``data``: the event with the input the person edited while approving.
        Those hooks ran on the input before the edit; what runs is the edited one, so they
        decide again (a block blocks). When the asking hook is gone, every hook runs."""
        spec = get_event(event)
        spec = spec.run_as(spec.name, True)  # the agent waits for this answer
        hooks, _ = self._split(self._select(spec, data))  # shadow hooks ran the first time
        position = next(
            (i for i, hook in enumerate(hooks) if hook.definition.id == hook_id), None
        )
        rest = tuple(hooks) if position is None else tuple(hooks[position + 1 :])
        started = time.perf_counter()
        outcome = await self.runner.run(spec, data, rest)
        # Part of the dispatch that asked: its rows carry that dispatch's id, and that
        # dispatch's record (written by whoever asked) tells the whole story.
        resumed = RESUMED_DISPATCH.get()
        if self._emit_outcome(spec, data, outcome, started, resumed, record=False):
            return await self._settle(spec, data, outcome)
        return outcome

    # -- background queue -----------------------------------------------------------------

    async def drain(self) -> None:
        """Wait until every queued non-blocking event has run."""
        await self._background.join()

    def drain_sync(self) -> None:
        """:meth:`drain` for synchronous programs (their background work runs on the
        engine's loop thread, after any submissions already scheduled there)."""
        loop_thread = self.runner.started_loop_thread
        if loop_thread is not None:
            loop_thread.run(self.drain())

    async def aclose(self) -> None:
        """Drain background work, stop workers and close handlers."""
        if self._closed:
            return
        self._closed = True
        await self._background.stop()
        runners = [self.runner] if self._shadow is None else [self.runner, self._shadow]
        for runner in runners:
            for handler in runner.handlers.values():
                try:
                    await handler.aclose()
                except Exception as exc:
                    log_event("hookgate.handler_close_failed", error=str(exc))
            runner.pool.close()

    def close(self) -> None:
        """:meth:`aclose` for synchronous programs."""
        loop_thread = self.runner.started_loop_thread
        if loop_thread is not None:
            if self._background.loop is loop_thread.loop:
                loop_thread.run(self._background.join())
            loop_thread.run(self.aclose())
            self.runner.stop_loop_thread()
        elif not self._closed:
            asyncio.run(self.aclose())

    async def __aenter__(self) -> Engine:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()
