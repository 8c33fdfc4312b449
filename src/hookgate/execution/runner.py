"""How an engine runs the hooks of a chain: the one place that calls them.

Once per hook list it decides how its batches run (:class:`PlainPlan`, kept per list): when
every hook is a plain function, without the event loop, each in place or on a worker by its
``isolate`` mark; otherwise every hook on the loop under :func:`run_with_deadline` (a
coroutine is cancelled at its deadline; a plain function marked ``isolate: thread`` is awaited
on a worker, which the cancellation abandons).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any, TypeVar

from hookgate.chain import (
    Call,
    Chain,
    ChainSettings,
    Execute,
    HookReply,
    Reply,
    drive_sync,
    run_chain,
    stops_blocking_batch,
)
from hookgate.compiled_hook import HookList
from hookgate.execution.coroutines import run_with_deadline
from hookgate.execution.drivers import LoopThread, drive_async
from hookgate.execution.plain_functions import call_in_order, run_in_place
from hookgate.execution.workers import WorkerPool
from hookgate.handlers import Handler, Invocation, Services, handler_class
from hookgate.hook_event import HookEvent, event_view
from hookgate.host_code import HostCodePolicy
from hookgate.outcome import HookError, HookResult, Outcome, TraceRow
from hookgate.shadow import ShadowChains, shadow_row
from hookgate.state.binding import (
    STATE_CHANGES_DETAIL,
    commit_state,
    prepare_state,
    store_for,
)

if TYPE_CHECKING:
    from hookgate.compiled_hook import CompiledHook
    from hookgate.definition import HookDefinition
    from hookgate.events import EventSpec
    from hookgate.settings import Settings

__all__ = ["HookRunner", "KeptPlan", "PlainPlan"]

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class PlainPlan:
    """How the batches of a hook list whose hooks are all plain functions run."""

    #: The event name the functions' view carries.
    event: str
    #: Each hook's function.
    functions: Mapping[CompiledHook, Callable[[HookEvent], Any]]
    #: The hooks whose functions run on a worker with a hard deadline (``isolate: thread``);
    #: the others run in place on the caller's thread.
    isolated: frozenset[CompiledHook]
    #: Runs a batch for a caller that waits in its own thread (made once per plan).
    run_batch: Execute


@dataclass(frozen=True, slots=True)
class KeptPlan:
    """A hook list's plan as its last runner made it (:attr:`HookList.plan`): good for that
    runner's host-code rule, the event and the edition it was made for."""

    #: The runner's :attr:`HookRunner.plans_made_under`, replaced when its host-code rule is.
    rule: object
    event: str
    edition: str
    plan: PlainPlan | None
    #: The host-code rule refuses none of the list's hooks: their calls skip
    #: :meth:`HookRunner.refusal` (a cached answer, still ~2k instructions per call).
    cleared: bool


class HookRunner:
    """Runs the hooks of an engine's chains: handlers, the worker pool, the loop thread."""

    def __init__(
        self,
        settings: Settings,
        services: Services,
        clock: Callable[[], float],
        chain_settings: ChainSettings,
        dry_settings: ChainSettings,
        *,
        own_threads: bool = False,
    ) -> None:
        """``own_threads``: isolated functions run on this runner's workers, not the
        services' (the shadow runner: its stuck workers count against no one else)."""
        self.settings = settings
        self.services = services
        self.clock = clock
        self.chain_settings = chain_settings
        self.dry_settings = dry_settings
        #: Workers for isolated plain functions, shared with the handlers that need them.
        self.pool = WorkerPool(
            max_stuck=settings.hook_threads_max_stuck,
            max_stuck_per_tenant=settings.hook_threads_max_stuck_per_tenant,
        )
        self._threads: WorkerPool | None = self.pool if own_threads else None
        if services.hook_threads is None and not own_threads:
            services.hook_threads = self.pool
        self.handlers: dict[str, Handler] = {}
        self._host_code_policy = HostCodePolicy()
        self._refusals: dict[tuple[str, int, bool, str], str | None] = {}
        #: What a plan kept on a hook list (:class:`KeptPlan`) was made under: a new object
        #: whenever the host-code rule changes, so that every kept plan is made again.
        self.plans_made_under = object()
        self._loop_thread: LoopThread | None = None

    @property
    def host_code_policy(self) -> HostCodePolicy:
        return self._host_code_policy

    @host_code_policy.setter
    def host_code_policy(self, policy: HostCodePolicy) -> None:
        self._host_code_policy = policy
        self._refusals.clear()
        self.plans_made_under = object()

    def handler(self, handler_type: str) -> Handler:
        handler = self.handlers.get(handler_type)
        if handler is None:
            handler = handler_class(handler_type)(self.services)
            self.handlers[handler_type] = handler
        return handler

    def loop_thread(self) -> LoopThread:
        """The loop a synchronous caller's coroutines run on (started on first use)."""
        if self._loop_thread is None:
            self._loop_thread = LoopThread()
        return self._loop_thread

    @property
    def started_loop_thread(self) -> LoopThread | None:
        return self._loop_thread

    def stop_loop_thread(self) -> None:
        if self._loop_thread is not None:
            self._loop_thread.stop()
            self._loop_thread = None

    # -- running a chain ----------------------------------------------------------------------

    def run_sync(
        self, spec: EventSpec, data: Mapping[str, Any], hooks: Sequence[CompiledHook]
    ) -> Outcome:
        """A chain for a synchronous caller: plain functions without an event loop, anything
        else on the loop thread."""
        # plan, inline for a list that keeps its plan: this is once per event.
        kept: KeptPlan | None = hooks.plan if type(hooks) is HookList else None
        if (
            kept is not None
            and kept.rule is self.plans_made_under
            and kept.event == spec.name
            and kept.edition == self.settings.edition
        ):
            plan = kept.plan
        else:
            plan = self.plan(hooks, spec.name)
        if plan is None:
            return self.loop_thread().run(self.run(spec, data, hooks))
        # drive_sync, inline: one frame less per event.
        chain = run_chain(hooks, spec, data, self.chain_settings)
        run_batch = plan.run_batch
        step = chain.first
        while step.__class__ is tuple:
            step = chain.resume(run_batch(*step))
        return step  # type: ignore[return-value]

    def run(
        self, spec: EventSpec, data: Mapping[str, Any], hooks: Sequence[CompiledHook]
    ) -> Coroutine[Any, Any, Outcome]:
        """A chain on the event loop. Returns the driver's own coroutine rather than awaiting
        it in one of ours: one coroutine frame less on every call's way down and back up."""
        plan = self.plan(hooks, spec.name) if spec.blocking else None
        chain = run_chain(hooks, spec, data, self.chain_settings)
        if plan is None:
            # A blocking chain's list now keeps its plan (made or checked just above), which
            # says whether the host-code rule refuses one of its hooks.
            kept: KeptPlan | None = hooks.plan if type(hooks) is HookList else None
            execute = self._execute_cleared if spec.blocking and kept and kept.cleared else (
                self.execute
            )
            # (partial: called from C, one Python frame less per hook than a lambda)
            return drive_async(chain, partial(execute, spec), self.clock)
        if plan.isolated:
            return self._drive_plain(plan, chain)
        return _ready(drive_sync(chain, plan.run_batch))  # nothing to wait for: no loop turn

    async def dry_run(
        self, spec: EventSpec, data: Mapping[str, Any], hooks: Sequence[CompiledHook]
    ) -> Outcome:
        """A chain with no breaker and no audit (``Engine.test``, ``simulate``)."""
        return await drive_async(
            run_chain(hooks, spec, data, self.dry_settings),
            lambda call, payload, timeout: self.execute(spec, call, payload, timeout, True),
            self.clock,
        )

    async def run_shadow(
        self,
        spec: EventSpec,
        data: Mapping[str, Any],
        chains: ShadowChains,
        dry_run: bool = False,
    ) -> list[TraceRow | None]:
        """Each shadow hook as a chain of its own (:mod:`hookgate.shadow`), concurrently, on
        the event loop: the row of each, saying what it would have done."""
        settings = self.dry_settings if dry_run else self.chain_settings

        async def one(hooks: tuple[CompiledHook]) -> TraceRow | None:
            outcome = await drive_async(
                run_chain(hooks, spec, data, settings),
                lambda call, payload, timeout: self.execute(spec, call, payload, timeout, dry_run),
                self.clock,
            )
            return shadow_row(outcome)

        if len(chains) == 1:
            return [await one(chains[0])]
        return list(await asyncio.gather(*(one(hooks) for hooks in chains)))

    # -- plain functions ------------------------------------------------------------------------

    def plan(self, hooks: Sequence[CompiledHook], event: str) -> PlainPlan | None:
        """How ``hooks`` run without the event loop, or ``None`` when one of them needs it
        (or is refused: the loop's path reports that). Made once per hook list and edition
        (the host-code rule depends on it, and a server may switch it), kept on the list
        (:attr:`HookList.plan`; a list from another source is planned every time)."""
        edition = self.settings.edition
        if type(hooks) is not HookList:
            return self._make_plan(hooks, event)
        kept: KeptPlan | None = hooks.plan
        if (
            kept is not None
            and kept.rule is self.plans_made_under
            and kept.event == event
            and kept.edition == edition
        ):
            return kept.plan
        plan = self._make_plan(hooks, event)
        hooks.plan = self._kept(hooks, event, edition, plan)
        return plan

    def _kept(
        self, hooks: Sequence[CompiledHook], event: str, edition: str, plan: PlainPlan | None
    ) -> KeptPlan:
        """A list's plan as kept on it; whether the host-code rule refuses none of its hooks
        is asked only for a list that runs on the loop (a plan's own hooks passed the rule).
        Kept out of plan, which runs on every fire_sync: in plan it cost ~200 instructions per
        event there (callgrind, bench_core 1 hook)."""
        cleared = plan is None and all(self.refusal(hook.definition) is None for hook in hooks)
        return KeptPlan(self.plans_made_under, event, edition, plan, cleared)

    def _make_plan(self, hooks: Sequence[CompiledHook], event: str) -> PlainPlan | None:
        functions: dict[CompiledHook, Callable[[HookEvent], Any]] = {}
        isolated: set[CompiledHook] = set()
        for compiled in hooks:
            definition = compiled.definition
            # Hooks with state load and save it on the loop (the store may be a database).
            if self.refusal(definition) is not None or definition.config.get("state"):
                return None
            try:
                handler = self.handler(definition.handler_type)
            except (KeyError, ImportError):
                return None
            plain = handler.sync_function(definition)
            if plain is None:
                return None
            functions[compiled] = plain.call
            if plain.isolated:
                isolated.add(compiled)
        frozen = frozenset(isolated)
        return PlainPlan(event, functions, frozen, self._sync_batches(event, functions, frozen))

    def _sync_batches(
        self,
        event: str,
        functions: Mapping[CompiledHook, Callable[[HookEvent], Any]],
        isolated: frozenset[CompiledHook],
    ) -> Execute:
        """How a plan's batch runs for a caller that waits in its own thread."""
        clock, pool = self.clock, self.pool
        if not isolated:

            def in_place(
                calls: Sequence[Call], payload: Mapping[str, Any], deadline: float | None
            ) -> list[Reply]:
                # run_in_place, one call less: this is once per batch.
                replies: list[Reply] = []
                # event_view, inline: this is once per batch.
                view: HookEvent = _new(HookEvent)
                view.name = event
                view._payload = payload
                call_in_order(calls, functions, view, deadline, clock, replies, None)
                return replies

            return in_place

        def mixed(
            calls: Sequence[Call], payload: Mapping[str, Any], deadline: float | None
        ) -> list[Reply]:
            view = event_view(event, payload)
            replies: list[Reply] = []
            for on_worker, part in _segments(calls, isolated):
                if on_worker:
                    tenant = payload.get("tenant_id")
                    ran = pool.run_batch(part, functions, view, deadline, clock, tenant)
                else:
                    ran = run_in_place(part, functions, view, deadline, clock)
                replies += ran
                if _stopped(part, ran, deadline):
                    break
            return replies

        return mixed

    async def _drive_plain(self, plan: PlainPlan, chain: Chain) -> Outcome:
        """A blocking chain of plain functions on the event loop: isolated ones on workers
        (the loop keeps serving while they run), the others in place."""
        functions, clock, isolated, pool = plan.functions, self.clock, plan.isolated, self.pool
        step = chain.first
        while isinstance(step, tuple):
            calls, payload, deadline = step
            view = event_view(plan.event, payload)
            replies: list[Reply] = []
            for on_worker, part in _segments(calls, isolated):
                if on_worker:
                    tenant = payload.get("tenant_id")
                    ran = await pool.run_batch_async(
                        part, functions, view, deadline, clock, tenant
                    )
                else:
                    ran = run_in_place(part, functions, view, deadline, clock)
                replies += ran
                if _stopped(part, ran, deadline):
                    break
            step = chain.resume(replies)
        return step

    # -- any handler, on the loop ---------------------------------------------------------------

    def execute(
        self,
        spec: EventSpec,
        call: Call,
        payload: Mapping[str, Any],
        timeout_s: float,
        dry_run: bool = False,
    ) -> Coroutine[Any, Any, Reply]:
        """One hook's call on the event loop, within ``timeout_s``: the coroutine that runs
        it, :func:`run_with_deadline`'s own (no frame of ours around it, on each call's way
        down and back up)."""
        refusal = self.refusal(call[0].definition)
        if refusal is not None:
            return _ready(HookReply(None, HookError(refusal), False, 0.0))
        return self._execute_cleared(spec, call, payload, timeout_s, dry_run)

    def _execute_cleared(
        self,
        spec: EventSpec,
        call: Call,
        payload: Mapping[str, Any],
        timeout_s: float,
        dry_run: bool = False,
    ) -> Coroutine[Any, Any, Reply]:
        """:meth:`execute` for a hook the host-code rule is known to run (a kept plan's
        ``cleared`` list)."""
        definition = call[0].definition
        handler = self.handlers.get(definition.handler_type)
        if handler is None:
            try:
                handler = self.handler(definition.handler_type)
            except Exception as exc:
                return _ready(HookReply(None, exc, False, 0.0))
        if definition.config.get("state"):
            return run_with_deadline(
                self._with_state(handler, definition, spec, payload, timeout_s, dry_run),
                timeout_s,
            )
        # The handler's own coroutine under the deadline. A handler whose run is a plain
        # method handing back a coroutine may raise here.
        # Invocation(...) without its Python __init__ (~1k instructions less, once per call)
        call_of = _new(Invocation)
        call_of.hook = definition
        call_of.event = spec
        call_of.payload = payload
        call_of.timeout_s = timeout_s
        call_of.services = self.services
        call_of.dry_run = dry_run
        call_of.threads = self._threads
        try:
            work = handler.run(call_of)
        except Exception as exc:
            return _ready(HookReply(None, exc, False, 0.0))
        return run_with_deadline(work, timeout_s, _ignore_state_changes)

    async def _with_state(
        self,
        handler: Handler,
        definition: HookDefinition,
        spec: EventSpec,
        payload: Mapping[str, Any],
        timeout_s: float,
        dry_run: bool,
    ) -> Any:
        """A hook with ``config.state``: its state in with the payload, its changes saved
        (not in a dry run) before the answer counts."""
        state_store = store_for(self.services)
        payload, pending = await prepare_state(state_store, definition, payload)
        answer = await handler.run(
            Invocation(definition, spec, payload, timeout_s, self.services, dry_run, self._threads)
        )
        if pending is not None and not dry_run:
            return await commit_state(state_store, pending, answer)
        _ignore_state_changes(answer)
        return answer

    def refusal(self, definition: HookDefinition) -> str | None:
        """Why the host-code policy refuses to run this hook version (cached per version)."""
        edition = self.settings.edition  # read each time: a server may switch it
        key = (definition.id, definition.version, definition.written_by_master, edition)
        refusals = self._refusals
        if key in refusals:
            return refusals[key]
        if len(refusals) > 4096:
            refusals.clear()
        refusal = refusals[key] = self.host_code_policy.refusal(definition, edition)
        return refusal


def _ignore_state_changes(answer: Any) -> None:
    """State changes a hook answered while no state is saved for it (no ``config.state``, or
    a dry run) are dropped, and the trace says so."""
    if isinstance(answer, HookResult) and STATE_CHANGES_DETAIL in answer.details:
        answer.details.pop(STATE_CHANGES_DETAIL)
        answer.details["state_ignored"] = "the hook has no config.state"


_new: Any = object.__new__


async def _ready(value: T) -> T:
    return value


def _segments(
    calls: Sequence[Call], isolated: frozenset[CompiledHook]
) -> list[tuple[bool, tuple[Call, ...]]]:
    """A batch cut where its calls switch between a worker and the caller's thread."""
    parts: list[tuple[bool, tuple[Call, ...]]] = []
    start = 0
    for index in range(1, len(calls) + 1):
        if index == len(calls) or (calls[index][0] in isolated) != (calls[start][0] in isolated):
            parts.append((calls[start][0] in isolated, tuple(calls[start:index])))
            start = index
    return parts


def _stopped(part: Sequence[Call], replies: Sequence[Reply], deadline: float | None) -> bool:
    """Whether a blocking batch ends with this part: it stopped early (the deadline), or
    its last reply matters (an answer, a failure, a timeout)."""
    if deadline is None:
        return False
    return len(replies) < len(part) or bool(replies) and stops_blocking_batch(replies[-1])
