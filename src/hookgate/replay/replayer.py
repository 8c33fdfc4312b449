"""The candidate's chain run on recorded inputs: :class:`Replayer`.

The candidate hooks sit in an engine of their own (no audit, no breaker, a memory state
store on the recorded clock: a replay writes nothing anywhere). Each recorded input is
prepared, matched and split into enforce and shadow hooks by the engine's own steps, its
chain runs through the same chain function as a live dispatch
(:func:`hookgate.chain.run_chain`) with approvals on (an ``ask`` is reported, nobody is
asked), shadow hooks run after it and are reported as what they would have done, and the
session history rule hooks look back on is kept as live. Records replay oldest first, so
a rule's counters and history are those of the replayed traffic.

A hook that calls out (:data:`~hookgate.outcall_types.OUTCALL_TYPES`) answers with its
recorded reply, found by its name, unless the replayer is ``live``: its handler is replaced
by :class:`RecordedHandler`, which never reaches the network, starts no program and calls
no model. A candidate outcall hook without a recording makes the dispatch ``unknown``
(never an allow).

Chains whose hooks are all plain functions (callables, recorded answers) run without the
event loop, as ``fire_sync`` runs them; others on the loop. For a candidate with
``isolate: thread`` functions, :meth:`Replayer.replay_many` runs a batch of records on a
loop thread of the replay's own (one thread hop per batch, the caller's loop serving others
meanwhile), those functions in place there, each call watched against its deadline by the
caller as a worker's is (:mod:`.own_thread`). Once a call overran, the caller finishes that
record and the replay goes on with each isolated call on a worker, as live, waited for on a
new thread of its own.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, NamedTuple

from hookgate.chain import Call, ChainSettings, HookReply, Reply, drive_sync, run_chain
from hookgate.definition import HookDefinition
from hookgate.engine import Engine
from hookgate.events import UnknownEventError, get_event
from hookgate.execution.drivers import LoopThread, drive_async
from hookgate.execution.plain_functions import PlainCalls
from hookgate.handlers import Capabilities, Handler, Invocation, Services
from hookgate.handlers.base import PlainFunction
from hookgate.handlers.callable import is_isolated
from hookgate.hook_event import HookEvent
from hookgate.host_code import HostCodePolicy
from hookgate.outcome import HookError, Outcome
from hookgate.registry import HookRegistry
from hookgate.replay.own_thread import GaveUp, Watched, call_off, watch
from hookgate.replay.records import RecordedDispatch
from hookgate.reply_recording import OUTCALL_TYPES, UnusableRecording, reply_from_json
from hookgate.settings import Settings
from hookgate.state.stores import MemoryStateStore

__all__ = ["RecordedHandler", "Replayer", "Verdict"]


class Verdict(NamedTuple):
    """What the candidate decides for one recorded input: ``allow``, ``block``, ``ask``
    (a person would be asked) or ``unknown`` (a hook could not be replayed), and why (as the
    hooks said it: the report redacts what it shows); and
    what each shadow hook would have done (``(name, would_block)``, …)."""

    decision: str
    reason: str | None
    shadow: tuple[tuple[str, str], ...] = ()


_NO_SHADOW: tuple[tuple[str, str], ...] = ()


class _RecordedTimeout(HookError):
    """Carries a recorded timeout through a plain function's reply (turned back into one)."""

    def __init__(self, ms: float) -> None:
        super().__init__("timed out (recorded)")
        self.ms = ms


@dataclass(slots=True)
class _Recordings:
    """The recorded replies of the dispatch being replayed, and the hooks that had none."""

    current: Mapping[str, Sequence[Mapping[str, Any]]] = field(default_factory=dict)
    missing: list[str] = field(default_factory=list)

    def reply(self, hook: HookDefinition) -> HookReply | None:
        """The hook's recorded reply; None (and the hook noted as missing) when there is
        none replay can use."""
        entries = self.current.get(hook.name)
        if not entries:
            self.missing.append(f"{hook.name!r} ({hook.handler_type}) has no recorded answer")
            return None
        entry = entries[0]
        if entry.get("handler_type") != hook.handler_type:
            self.missing.append(
                f"{hook.name!r} is a {hook.handler_type} hook; its recording is of a "
                f"{entry.get('handler_type')} hook"
            )
            return None
        recorded = entry.get("reply")
        try:
            if not isinstance(recorded, Mapping):
                raise UnusableRecording("the recording is not an object")
            return reply_from_json(recorded)
        except UnusableRecording as exc:
            self.missing.append(f"{hook.name!r}: {exc}")
            return None


class RecordedHandler(Handler):
    """Stands in for an outcall handler during a replay: answers with the recorded reply."""

    handler_type: ClassVar[str] = "recorded"
    capabilities: ClassVar[Capabilities] = Capabilities()

    def __init__(self, services: Services, recordings: _Recordings) -> None:
        super().__init__(services)
        self._recordings = recordings

    def _answer(self, hook: HookDefinition) -> Any:
        reply = self._recordings.reply(hook)
        if reply is None:
            return None  # abstains here; the dispatch is reported unknown
        answer, error, timed_out, duration = reply
        if timed_out:
            raise _RecordedTimeout(duration)
        if error is not None:
            raise error
        return answer

    def sync_function(self, hook: HookDefinition) -> PlainFunction | None:
        def answer(view: HookEvent) -> Any:
            return self._answer(hook)

        return PlainFunction(answer, False)

    async def run(self, call: Invocation) -> Any:
        return self._answer(call.hook)


def _restore_timeouts(replies: Sequence[Reply]) -> Sequence[Reply]:
    """The replies with each recorded timeout a timeout again (the list as it is when there
    is none: the common case)."""
    for index, reply in enumerate(replies):
        if reply.__class__ is HookReply and reply[1].__class__ is _RecordedTimeout:
            fixed = list(replies)
            fixed[index] = HookReply(None, None, True, reply[1].ms)
            return _restore_timeouts(fixed)
    return replies


class Replayer:
    """Runs recorded inputs through candidate hook definitions; one per replay."""

    def __init__(
        self,
        definitions: Iterable[HookDefinition],
        *,
        live: bool = False,
        settings: Settings | None = None,
        services: Services | None = None,
    ) -> None:
        settings = settings or Settings()
        services = services or Services(settings=settings)
        #: The time of the record being replayed: rule windows and the session history
        #: run on the recorded clock, not on the replay's.
        self._now = time.time()
        # A replay keeps its session state to itself: rules count what it replays.
        services.hook_state = MemoryStateStore(clock=self._clock)
        self.live = live
        self.registry = HookRegistry(definitions)
        self.engine = Engine(settings=settings, services=services, source=self.registry)
        self._recordings = _Recordings()
        runner = self.engine.runner
        if not live:
            stand_in = RecordedHandler(services, self._recordings)
            for handler_type in OUTCALL_TYPES:
                runner.handlers[handler_type] = stand_in
                self.engine.shadow_runner.handlers[handler_type] = stand_in
        self._runner = runner
        #: Whether batches go to a thread of the replay's own: only for ``isolate: thread``
        #: functions, which it spares a hop per call (other chains gain nothing from it; a
        #: live outcall hook keeps to the caller's loop).
        self._hop = not live and any(
            is_isolated(definition.config, always=settings.isolate_callables)
            for definition in self.registry.definitions()
            if definition.handler_type == "callable"
        )
        #: Whether the candidate has shadow hooks (their rows are read off each outcome).
        self._shadow = any(d.mode == "shadow" for d in self.registry.definitions())
        #: The replay's own loop thread, and what runs on it: isolated functions in place,
        #: watched (``_watched``), until one overran; then on workers (``_watched`` None).
        self._thread: LoopThread | None = None
        self._thread_id: int | None = None
        self._watched: Watched | None = None
        self._in_place = True
        #: Replies given back to the chain of a record the caller finishes (:class:`GaveUp`).
        self._script: deque[list[Reply]] | None = None
        self._chain_settings = ChainSettings(
            chain_budget_s=settings.chain_budget_s,
            max_depth=settings.max_depth,
            clock=time.monotonic,
            breakers=None,
            dry_run=True,
            approvals=True,
        )

    def _clock(self) -> float:
        return self._now

    @property
    def host_code_policy(self) -> HostCodePolicy:
        return self.engine.host_code_policy

    @host_code_policy.setter
    def host_code_policy(self, policy: HostCodePolicy) -> None:
        """The gateway's rule for host code (a stored hook refused live is refused here)."""
        self.engine.host_code_policy = policy

    async def aclose(self) -> None:
        thread = self._thread
        if thread is None:
            await self.engine.aclose()
            return
        # Its handlers were used on the replay's thread: closed there.
        await asyncio.wrap_future(
            asyncio.run_coroutine_threadsafe(self.engine.aclose(), thread.loop)
        )
        self._thread = None
        thread.stop()

    async def replay_many(
        self, records: Sequence[RecordedDispatch]
    ) -> list[Verdict | UnknownEventError]:
        """:meth:`replay` for each record in turn (on the replay's own thread, one hop for
        the batch, when the candidate has isolated functions); an unknown event is given
        back as its error, in its place."""
        if not self._hop:
            return await self._replay_each(records, None)
        if self._thread is None:
            self._thread = LoopThread()
        watched = Watched() if self._in_place else None
        batch = asyncio.wrap_future(
            asyncio.run_coroutine_threadsafe(self._replay_each(records, watched), self._thread.loop)
        )
        if watched is None:
            return await batch
        try:
            gave_up = await watch(batch, watched)
        except asyncio.CancelledError:
            call_off(batch, watched)  # the replay was called off: so is the thread's batch
            raise
        if gave_up is None:
            return batch.result()
        return await self._finish(records, watched.verdicts, gave_up)

    async def _finish(
        self, records: Sequence[RecordedDispatch], verdicts: list[Any], gave_up: GaveUp
    ) -> list[Verdict | UnknownEventError]:
        """A call on the replay thread overran: that thread is left to its call (it unwinds
        when the call returns); the record is finished here with the replies its chain had
        and the timeout, and the rest go to a new thread, isolated calls on workers."""
        abandoned, self._thread = self._thread, LoopThread()
        assert abandoned is not None
        abandoned.loop.call_soon_threadsafe(abandoned.loop.stop)
        self._in_place = False
        self._script = deque(gave_up.script)
        try:
            verdicts.append(await self.replay(records[gave_up.index]))
        finally:
            self._script = None
        rest = records[gave_up.index + 1 :]
        if rest:
            verdicts += await self.replay_many(rest)
        return verdicts

    async def _replay_each(
        self, records: Sequence[RecordedDispatch], watched: Watched | None
    ) -> list[Verdict | UnknownEventError]:
        self._thread_id = threading.get_ident() if self._hop else None
        self._watched = watched
        verdicts: list[Verdict | UnknownEventError] = [] if watched is None else watched.verdicts
        for recorded in records:
            if watched is not None:
                watched.next_record()
            try:
                verdicts.append(await self.replay(recorded))
            except UnknownEventError as exc:
                verdicts.append(exc)
        return verdicts

    async def replay(self, recorded: RecordedDispatch) -> Verdict:
        """The candidate's decision for one recorded input: prepared, selected and run as
        the engine runs a live event (enforce chain, then shadow hooks, then the session
        history rule hooks look back on), at the time it was recorded."""
        self._now = recorded.created_at
        blocking = recorded.blocking
        if blocking is None:  # an older record: it blocked, so it was waited for
            blocking = get_event(recorded.event).blocking or recorded.before == "block"
        recordings = self._recordings
        recordings.current = recorded.answers
        recordings.missing = []
        step = await self.engine.run_recorded(
            recorded.event, recorded.payload, wait=blocking, drive=self._run
        )
        outcome = step.outcome
        would = _NO_SHADOW
        rows = outcome._rows
        if rows and self._shadow:
            would = tuple(
                (row.hook.definition.name, row.decision)
                for row in rows
                if row.decision and row.hook.definition.mode == "shadow"
            )
        if recordings.missing:
            why = "; ".join(recordings.missing)
            hint = "" if self.live else " (replay with --live to call it)"
            return Verdict("unknown", f"not replayed: {why}{hint}", would)
        pending = outcome.pending_approval
        if pending is not None:
            named = pending.reason or f"hook {pending.definition.name!r} asks"
            return Verdict("ask", named, would)
        if not step.decides:
            return Verdict("allow", None, would)  # a non-blocking chain never decides
        return Verdict(outcome.decision, outcome.reason, would)

    async def _run(self, spec: Any, data: Mapping[str, Any], hooks: Sequence[Any]) -> Outcome:
        runner, settings = self._runner, self._chain_settings
        plan = runner.plan(hooks, spec.name) if spec.blocking else None
        chain = run_chain(hooks, spec, data, settings)
        if plan is not None:
            if self._script is not None:
                return await self._drive_scripted(plan, chain, self._script)
            if not plan.isolated:
                run_batch = plan.run_batch
            elif threading.get_ident() != self._thread_id:
                run_batch = None  # the caller's loop: a turn of it per call
            elif self._watched is not None:
                run_batch = self._in_place_batches(plan, self._watched)
            else:
                # The replay's own thread, nothing else waits on it: each isolated call on a
                # worker with its hard deadline, waited for here.
                run_batch = plan.run_batch
            if run_batch is not None:
                batches = run_batch

                def batch(
                    calls: tuple[Call, ...], payload: Mapping[str, Any], deadline: float | None
                ) -> Sequence[Reply]:
                    return _restore_timeouts(batches(calls, payload, deadline))

                return drive_sync(chain, batch)
        execute: Callable[[Call, Mapping[str, Any], float], Any] = self._execute(spec)
        return await drive_async(chain, execute, time.monotonic)

    @staticmethod
    def _in_place_batches(plan: Any, watched: Watched) -> Callable[..., list[Reply]]:
        """A plan's batches run in place on the replay thread, each as a job its caller
        watches (:mod:`.own_thread`)."""
        functions, event = plan.functions, plan.event

        def in_place(
            calls: Sequence[Call], payload: Mapping[str, Any], deadline: float | None
        ) -> list[Reply]:
            job = PlainCalls(calls, functions, HookEvent(event, payload), deadline, time.monotonic)
            watched.job = job
            job.run_calls()
            return watched.ran(job)

        return in_place

    async def _drive_scripted(self, plan: Any, chain: Any, script: deque[list[Reply]]) -> Outcome:
        """Finish a chain the replay thread began: its replies first, then each further
        batch on a worker, as live."""
        pool = self._runner.pool
        try:
            batch = next(chain)
            while True:
                calls, payload, deadline = batch
                if script:
                    replies: Sequence[Reply] = script.popleft()
                else:
                    view = HookEvent(plan.event, payload)
                    replies = await pool.run_batch_async(
                        calls,
                        plan.functions,
                        view,
                        deadline,
                        time.monotonic,
                        payload.get("tenant_id"),
                    )
                batch = chain.send(_restore_timeouts(replies))
        except StopIteration as done:
            return done.value  # type: ignore[no-any-return]

    def _execute(self, spec: Any) -> Callable[[Call, Mapping[str, Any], float], Any]:
        runner = self._runner

        async def execute(call: Call, payload: Mapping[str, Any], timeout_s: float) -> Reply:
            # Not a dry run: a rule's counters move with the replayed history.
            reply = await runner.execute(spec, call, payload, timeout_s)
            return _restore_timeouts((reply,))[0]

        return execute
