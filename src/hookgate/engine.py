"""The engine: agent code creates one and calls ``await engine.fire(event, payload)``.

The engine resolves the hooks for an event, runs :func:`hookgate.chain.run_chain` through a
driver (:mod:`hookgate.drivers`) with real handlers (with timeouts), hands execution records
to the audit sink and sends non-blocking events to the bounded background queue
(:mod:`hookgate.background`). It holds no chain rules of its own.
"""

from __future__ import annotations

import asyncio
import itertools
import os
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from hookgate import hook_alarm
from hookgate.audit import AuditSink, ExecutionRecord
from hookgate.background import BackgroundQueue
from hookgate.chain import Call, ChainSettings, Execute, Reply, run_chain, run_chain_now
from hookgate.definition import DefinitionError, HookDefinition, Problem
from hookgate.drivers import LoopThread, drive_async, sync_caller
from hookgate.engine_audit import (
    INPUT_GUARD_ID,
    chain_records,
    hand_off,
    input_refusal_record,
)
from hookgate.errors import EngineClosed
from hookgate.events import CATALOGUE, KNOWN_FIELDS, EventSpec, get_event, normalize_payload
from hookgate.handlers import Handler, Invocation, Services, handler_class
from hookgate.hook_event import HookEvent
from hookgate.hook_threads import HookThreads
from hookgate.host_code import HostCodePolicy
from hookgate.log import log_event
from hookgate.outcome import HookError, HookResult, Outcome
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
from hookgate.state.binding import (
    STATE_CHANGES_DETAIL,
    PendingState,
    commit_state,
    prepare_state,
    store_for,
)

if TYPE_CHECKING:
    from hookgate.approvals import Approver

__all__ = ["INPUT_GUARD_ID", "Engine", "EngineStats"]

F = TypeVar("F", bound=Callable[..., Any])

_SPECS: dict[str, EventSpec] = {}
for _spec in CATALOGUE:
    for _name in (_spec.name, *_spec.aliases):
        _SPECS[_name] = _spec
#: The spec each name's chain runs under when the caller waits for it without ``wait=True``
#: (blocking events, synchronous stages): ``fire_sync`` looks it up instead of asking.
_WAITED: dict[str, EventSpec] = {
    name: spec.run_as(name, False) for name, spec in _SPECS.items() if spec.waits(name, False)
}


@dataclass(slots=True)
class EngineStats:
    fired: int = 0
    audit_records: int = 0
    threads: HookThreads | None = None
    background: BackgroundQueue | None = None

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
        """Worker threads still running a plain hook that overran its timeout."""
        return self.threads.stuck if self.threads is not None else 0

    @property
    def hook_threads_abandoned(self) -> int:
        """Plain hook calls given up at their deadline so far."""
        return self.threads.abandoned if self.threads is not None else 0

    def to_dict(self) -> dict[str, int]:
        return {
            "fired": self.fired,
            "background_queued": self.background_queued,
            "background_dropped": self.background_dropped,
            "background_failed": self.background_failed,
            "audit_records": self.audit_records,
            "hook_threads_stuck": self.hook_threads_stuck,
            "hook_threads_abandoned": self.hook_threads_abandoned,
        }


class _Expiry:
    """Cancels a task when a hook's time is up, and remembers that it did."""

    __slots__ = ("fired", "task")

    def __init__(self, task: asyncio.Task[Any]) -> None:
        self.task = task
        self.fired = False

    def fire(self) -> None:
        self.fired = True
        self.task.cancel()


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
        #: The hooks that run for an event: the source's selection by matcher (hooks whose
        #: matcher rejects the event never reach the chain), or, for a source that cannot
        #: select, its hooks for the tenant and agent (the chain then skips on the matcher).
        self._select: Callable[[EventSpec, Mapping[str, Any]], Sequence[CompiledHook]] = (
            source.select if isinstance(source, MatchingSource) else self._resolve
        )
        self.audit = audit
        self.listeners: list[Callable[[Sequence[ExecutionRecord]], None]] = []
        #: Plain-function hooks run here, so their timeouts hold (unless inline_sync_hooks).
        self.threads = HookThreads()
        if self.services.hook_threads is None:
            self.services.hook_threads = self.threads
        self._inline = self.settings.inline_sync_hooks
        self._interrupt = self.settings.interrupt_plain_hooks
        self._background = BackgroundQueue(
            self._run,
            size=self.settings.background_queue_size,
            workers=self.settings.background_workers,
        )
        self.stats = EngineStats(threads=self.threads, background=self._background)
        self._clock = clock
        self.breakers = BreakerBoard(
            threshold=self.settings.breaker_threshold,
            window_s=self.settings.breaker_window_s,
            cooldown_s=self.settings.breaker_cooldown_s,
            clock=clock,
        )
        self._chain_settings = ChainSettings(
            chain_budget_s=self.settings.chain_budget_s,
            max_depth=self.settings.max_depth,
            clock=clock,
            breakers=self.breakers,
            approvals=self.approver is not None,
        )
        self._dry_settings = ChainSettings(
            chain_budget_s=self.settings.chain_budget_s,
            max_depth=self.settings.max_depth,
            clock=clock,
            breakers=None,
            dry_run=True,
        )
        self._handlers: dict[str, Handler] = {}
        self._host_code_policy = HostCodePolicy()
        self._refusals: dict[tuple[str, int, bool, str], str | None] = {}
        #: fire_sync's plain-function executor per hook list (see _plain_executor).
        self._executors: dict[int, tuple[Sequence[CompiledHook], str, str, Execute | None]] = {}
        self._sync_cache: dict[
            tuple[int, str],
            tuple[Sequence[CompiledHook], dict[CompiledHook, Callable[[HookEvent], Any]] | None],
        ] = {}
        self._event_ids = itertools.count(1)
        self._event_prefix = os.urandom(6).hex()
        self._portal: LoopThread | None = None
        self._closed = False
        for hook in hooks:
            self.add(hook)

    @property
    def host_code_policy(self) -> HostCodePolicy:
        """Who may run host code beyond the edition's rule (the gateway's master rule)."""
        return self._host_code_policy

    @host_code_policy.setter
    def host_code_policy(self, policy: HostCodePolicy) -> None:
        self._host_code_policy = policy
        self._refusals.clear()
        self._sync_cache.clear()
        self._executors.clear()

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
    ) -> Callable[[F], F]:
        """Decorator: register a function or coroutine function as a ``callable`` hook."""

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
            }
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
            handler = self._handlers.get(removed.handler_type)
            if handler is not None:
                handler.forget(hook_id)
        return removed

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
        handler = self._handlers.get(handler_type)
        if handler is None:
            handler = handler_class(handler_type)(self.services)
            self._handlers[handler_type] = handler
        return handler

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
        if self._closed:
            raise EngineClosed(f"{event}: this engine was closed")
        spec = _SPECS.get(event) or get_event(event)
        data = payload if not fields else {**(payload or {}), **fields}
        if data is None:
            data = {}
        self.stats.fired += 1
        if not self.source.has_event(spec.name):
            depth = data.get("depth")
            if depth is None or (type(depth) is int and depth <= self.settings.max_depth):
                return Outcome()
        data = self._prepare(data, spec)
        hooks = self._select(spec, data)
        if not hooks and self._shallow(data):
            return Outcome()
        problem = payload_problem(data)
        if problem is not None:
            return self.refuse_input(event, data, problem, wait=wait)
        if not spec.waits(event, wait):
            self._background.submit(spec, data, hooks)
            return Outcome()
        return await self._run(spec.run_as(event, wait), data, hooks)

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

        Plain-function hooks run in the calling thread with no event loop; any other handler
        runs on an engine-owned loop thread. Do not call this from inside a running loop.
        """
        if self._closed:
            raise EngineClosed(f"{event}: this engine was closed")
        spec = _SPECS.get(event) or get_event(event)
        data = payload if not fields else {**(payload or {}), **fields}
        if data is None:
            data = {}
        self.stats.fired += 1
        if not self.source.has_event(spec.name):
            depth = data.get("depth")
            if depth is None or (type(depth) is int and depth <= self.settings.max_depth):
                return Outcome()
        if spec.prepare is not None or not KNOWN_FIELDS.issuperset(data):
            data = self._prepare(data, spec)
        hooks = self._select(spec, data)
        if not hooks and self._shallow(data):
            return Outcome()
        problem = payload_problem(data)
        if problem is not None:
            return self.refuse_input(event, data, problem, wait=wait)
        waited = None if wait else _WAITED.get(event)
        if waited is None:
            if not spec.waits(event, wait):
                portal = self._loop_thread()
                portal.loop.call_soon_threadsafe(self._background.submit, spec, data, hooks)
                return Outcome()
            waited = spec.run_as(event, wait)
        spec = waited
        # The executor is cached per hook list: looked up here, made by _plain_executor.
        cached = self._executors.get(id(hooks))
        if (
            cached is not None
            and cached[0] is hooks
            and cached[1] == spec.name
            and cached[2] == self.settings.edition
        ):
            execute = cached[3]
        else:
            execute = self._plain_executor(hooks, spec.name)
        if execute is not None:
            outcome = run_chain_now(hooks, spec, data, self._chain_settings, execute)
            if outcome._rows and (self.audit is not None or self.listeners):
                self._emit(chain_records(spec, data, outcome, self._event_id))
                if self.audit is not None:
                    self._loop_thread().run(self.audit.wait_durable())
            if outcome._ask is not None:
                return self._loop_thread().run(self._ask_person(spec, data, outcome))
            return outcome
        return self._loop_thread().run(self._run(spec, data, hooks))

    def _resolve(self, spec: EventSpec, data: Mapping[str, Any]) -> Sequence[CompiledHook]:
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
        return await self._dry_run(spec.run_as(spec.name, True), data, tuple(hooks))

    async def _dry_run(
        self, spec: EventSpec, data: Mapping[str, Any], hooks: tuple[CompiledHook, ...]
    ) -> Outcome:
        if self._closed:
            raise EngineClosed(f"{spec.name}: this engine was closed")
        chain = run_chain(hooks, spec, data, self._dry_settings)
        return await drive_async(
            chain,
            lambda call, payload, timeout: self._execute(
                spec, call, payload, timeout, dry_run=True
            ),
            self._clock,
        )

    def refuse_input(
        self, event: str, data: Mapping[str, Any], problem: str, *, wait: bool = False
    ) -> Outcome:
        """An event whose input is over the payload limits: no hook runs, one audit row says
        why, and a blocking event blocks (a non-blocking one is dropped)."""
        spec = _SPECS.get(event) or get_event(event)
        blocking = spec.run_as(event, wait).blocking  # a waited-for result check blocks too

        log_event("security.hook.invalid_input", hook_event=spec.name, error=problem)
        record = input_refusal_record(
            spec, data, problem, blocking=blocking, new_event_id=self.new_event_id
        )
        self._emit([record])
        if not blocking:
            return Outcome()
        return Outcome(decision="block", reason=f"invalid input: {problem}")

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

    async def _run(
        self, spec: EventSpec, data: Mapping[str, Any], hooks: Sequence[CompiledHook]
    ) -> Outcome:
        functions = self._sync_functions(hooks) if spec.blocking else None
        if functions is not None:
            if self._inline:
                outcome = self._run_plain(spec, data, hooks, functions)
            else:
                outcome = await self._run_plain_async(spec, data, hooks, functions)
        else:
            outcome = await drive_async(
                run_chain(hooks, spec, data, self._chain_settings),
                lambda call, payload, timeout: self._execute(spec, call, payload, timeout),
                self._clock,
            )
        if outcome._rows and (self.audit is not None or self.listeners):
            self._emit(chain_records(spec, data, outcome, self._event_id))
            if self.audit is not None:
                await self.audit.wait_durable()
        if outcome._ask is not None:
            return await self._ask_person(spec, data, outcome)
        return outcome

    def _run_plain(
        self,
        spec: EventSpec,
        data: Mapping[str, Any],
        hooks: Sequence[CompiledHook],
        functions: Mapping[CompiledHook, Callable[[HookEvent], Any]],
    ) -> Outcome:
        """Plain functions in place, with no timeout (``inline_sync_hooks``)."""
        execute = sync_caller(spec.name, functions, self._clock)
        return run_chain_now(hooks, spec, data, self._chain_settings, execute)

    def _plain_executor(self, hooks: Sequence[CompiledHook], event: str) -> Execute | None:
        """How ``fire_sync`` runs the batches of ``hooks`` when each is a plain function
        (``None`` when one is not): in place, under the alarm of :mod:`hookgate.hook_alarm`, or
        on a worker thread. Made once per hook list and edition."""
        edition = self.settings.edition
        functions = self._sync_functions(hooks)
        execute: Execute | None = None
        if functions is None:
            pass
        elif self._inline:
            execute = sync_caller(event, functions, self._clock)
        else:
            threads, interrupt, clock = self.threads, self._interrupt, self._clock
            plain, watched = functions, hook_alarm.run_batch

            def run(
                calls: Sequence[Call], payload: Mapping[str, Any], deadline: float | None
            ) -> list[Reply]:
                view = HookEvent(event, payload)
                if interrupt:
                    replies = watched(calls, plain, view, deadline, clock)
                    if replies is not None:
                        return replies
                return threads.run_batch(calls, plain, view, deadline, clock)

            execute = run
        if len(self._executors) > 1024:
            self._executors.clear()
        self._executors[id(hooks)] = (hooks, event, edition, execute)
        return execute

    async def _run_plain_async(
        self,
        spec: EventSpec,
        data: Mapping[str, Any],
        hooks: Sequence[CompiledHook],
        functions: Mapping[CompiledHook, Callable[[HookEvent], Any]],
    ) -> Outcome:
        # Plain functions on worker threads: the loop keeps serving while they run, and a
        # call past its time answers a timeout at its deadline.
        chain = run_chain(hooks, spec, data, self._chain_settings)
        threads, clock, name, interrupt = self.threads, self._clock, spec.name, self._interrupt
        try:
            batch = next(chain)
            while True:
                calls, payload, deadline = batch
                view = HookEvent(name, payload)
                replies: list[Reply] | None = None
                if interrupt:
                    replies = hook_alarm.run_batch(calls, functions, view, deadline, clock)
                if replies is None:
                    replies = await threads.run_batch_async(calls, functions, view, deadline, clock)
                batch = chain.send(replies)
        except StopIteration as done:
            return done.value  # type: ignore[no-any-return]

    async def _execute(
        self,
        spec: EventSpec,
        call: Call,
        payload: Mapping[str, Any],
        timeout_s: float,
        *,
        dry_run: bool = False,
    ) -> Reply:
        hook = call[0]
        started = time.perf_counter()
        refusal = self._refusal(hook.definition)
        if refusal is not None:
            return (None, HookError(refusal), False, 0.0)
        try:
            handler = self.handler(hook.definition.handler_type)
        except Exception as exc:
            return (None, exc, False, 0.0)
        definition = hook.definition
        pending: PendingState | None = None
        # One timer that cancels this task: cheaper per call than asyncio.timeout()'s
        # context manager, and ``uncancel`` tells our expiry from a caller's cancellation.
        task = asyncio.current_task()
        assert task is not None
        expiry = _Expiry(task)
        timer = asyncio.get_running_loop().call_later(timeout_s, expiry.fire)
        try:
            if definition.config.get("state"):
                state_store = store_for(self.services)
                payload, pending = await prepare_state(state_store, definition, payload)
            answer = await handler.run(
                Invocation(definition, spec, payload, timeout_s, self.services, dry_run)
            )
            if pending is not None and not dry_run:
                answer = await commit_state(state_store, pending, answer)
            elif isinstance(answer, HookResult) and STATE_CHANGES_DETAIL in answer.details:
                answer.details.pop(STATE_CHANGES_DETAIL)
                answer.details["state_ignored"] = "the hook has no config.state"
        except asyncio.CancelledError:
            if expiry.fired and task.uncancel() == 0:
                return (None, None, True, (time.perf_counter() - started) * 1000)
            raise
        except Exception as exc:
            return (None, exc, False, (time.perf_counter() - started) * 1000)
        finally:
            timer.cancel()
        elapsed = (time.perf_counter() - started) * 1000
        if expiry.fired:
            # The handler swallowed the cancellation and answered late: still a timeout.
            task.uncancel()
            return (None, None, True, elapsed)
        return (answer, None, False, elapsed)

    def _refusal(self, definition: HookDefinition) -> str | None:
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

    def _sync_functions(
        self, hooks: Sequence[CompiledHook]
    ) -> dict[CompiledHook, Callable[[HookEvent], Any]] | None:
        """Plain functions for every hook, when all of them have one (else ``None``)."""
        # Keyed by edition too: the host-code rule depends on it, and a server may switch it.
        key = (id(hooks), self.settings.edition)
        cached = self._sync_cache.get(key)
        if cached is not None and cached[0] is hooks:
            return cached[1]
        functions: dict[CompiledHook, Callable[[HookEvent], Any]] | None = {}
        for compiled in hooks:
            if self._refusal(compiled.definition) is not None:
                functions = None  # the async path reports the refusal
                break
            try:
                handler = self.handler(compiled.definition.handler_type)
            except (KeyError, ImportError):
                functions = None
                break
            # Hooks with state load and save it on the loop (the store may be a database).
            fn = (
                None
                if compiled.definition.config.get("state")
                else handler.sync_function(compiled.definition)
            )
            if fn is None:
                functions = None
                break
            assert functions is not None
            functions[compiled] = fn
        if len(self._sync_cache) > 1024:
            self._sync_cache.clear()
        self._sync_cache[key] = (hooks, functions)
        return functions

    def _emit(self, records: list[ExecutionRecord]) -> None:
        if not records:  # no hook ran (none matched): nothing to hand off
            return
        self.stats.audit_records += len(records)
        hand_off(records, self.audit, self.listeners)

    async def _ask_person(
        self, spec: EventSpec, data: Mapping[str, Any], outcome: Outcome
    ) -> Outcome:
        # Imported here: only engines with an approver need it (the Claude Code bridge's
        # start-up path stays small).
        from hookgate.approvals import seek_approval

        assert self.approver is not None
        return await seek_approval(self.approver, spec, data, outcome, self._event_id)

    # -- background queue -----------------------------------------------------------------

    async def drain(self) -> None:
        """Wait until every queued non-blocking event has run."""
        await self._background.join()

    def drain_sync(self) -> None:
        """:meth:`drain` for synchronous programs (their background work runs on the
        engine's loop thread, after any submissions already scheduled there)."""
        if self._portal is not None:
            self._portal.run(self.drain())

    async def aclose(self) -> None:
        """Drain background work, stop workers and close handlers."""
        if self._closed:
            return
        self._closed = True
        await self._background.stop()
        for handler in self._handlers.values():
            try:
                await handler.aclose()
            except Exception as exc:
                log_event("hookgate.handler_close_failed", error=str(exc))
        self.threads.close()

    def close(self) -> None:
        """:meth:`aclose` for synchronous programs."""
        if self._portal is not None:
            if self._background.loop is self._portal.loop:
                self._portal.run(self._background.join())
            self._portal.run(self.aclose())
            self._portal.stop()
            self._portal = None
        elif not self._closed:
            asyncio.run(self.aclose())

    def _loop_thread(self) -> LoopThread:
        if self._portal is None:
            self._portal = LoopThread()
        return self._portal

    async def __aenter__(self) -> Engine:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()
