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
event loop, as ``fire_sync`` runs them; others on the loop. :meth:`Replayer.replay_many` runs a
batch of records on the replay's own loop thread (one thread hop for the batch, and the
caller's loop keeps serving meanwhile): there a chain with ``isolate: thread`` functions runs
as ``fire_sync`` runs it too, each call on a worker with its hard deadline, the thread waiting
for it (nothing else waits on that thread), instead of a loop turn per call.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, NamedTuple

from hookgate.chain import Call, ChainSettings, HookReply, Reply, drive_sync, run_chain
from hookgate.definition import HookDefinition
from hookgate.engine import Engine
from hookgate.events import UnknownEventError, get_event
from hookgate.execution.drivers import drive_async
from hookgate.handlers import Capabilities, Handler, Invocation, Services
from hookgate.handlers.base import PlainFunction
from hookgate.handlers.callable import is_isolated
from hookgate.hook_event import HookEvent
from hookgate.host_code import HostCodePolicy
from hookgate.outcome import HookError, Outcome
from hookgate.registry import HookRegistry
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
        #: Whether the replay runs on its own loop thread (:meth:`replay_many`) now.
        self._on_own_thread = False
        #: Whether batches go to that thread: only for ``isolate: thread`` functions, which
        #: it spares a loop turn per call (other chains gain nothing from the hop; a live
        #: outcall hook keeps to the caller's loop).
        self._hop = not live and any(
            is_isolated(definition.config, always=settings.isolate_callables)
            for definition in self.registry.definitions()
            if definition.handler_type == "callable"
        )
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
        runner = self.engine.runner
        loop_thread = runner.started_loop_thread
        if loop_thread is None:
            await self.engine.aclose()
            return
        # Its handlers were used on the replay's thread: closed there.
        closing = asyncio.run_coroutine_threadsafe(self.engine.aclose(), loop_thread.loop)
        await asyncio.wrap_future(closing)
        runner.stop_loop_thread()

    async def replay_many(
        self, records: Sequence[RecordedDispatch]
    ) -> list[Verdict | UnknownEventError]:
        """:meth:`replay` for each record in turn (on the replay's own loop thread, one hop
        for the batch, when the candidate has isolated functions); an unknown event is given
        back as its error, in its place."""
        if not self._hop:
            return await self._replay_each(records)
        loop_thread = self.engine.runner.loop_thread()
        batch = asyncio.run_coroutine_threadsafe(self._replay_each(records), loop_thread.loop)
        return await asyncio.wrap_future(batch)

    async def _replay_each(
        self, records: Sequence[RecordedDispatch]
    ) -> list[Verdict | UnknownEventError]:
        verdicts: list[Verdict | UnknownEventError] = []
        self._on_own_thread = self._hop
        try:
            for recorded in records:
                try:
                    verdicts.append(await self.replay(recorded))
                except UnknownEventError as exc:
                    verdicts.append(exc)
        finally:
            self._on_own_thread = False
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
        if rows:
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
        # Isolated functions: on a worker with a hard deadline, waited for here when this is
        # the replay's own thread (replay_many); else each call takes a turn of the loop.
        if plan is not None and (not plan.isolated or self._on_own_thread):
            run_batch = plan.run_batch

            def batch(
                calls: tuple[Call, ...], payload: Mapping[str, Any], deadline: float | None
            ) -> Sequence[Reply]:
                return _restore_timeouts(run_batch(calls, payload, deadline))

            return drive_sync(chain, batch)
        execute: Callable[[Call, Mapping[str, Any], float], Any] = self._execute(spec)
        return await drive_async(chain, execute, time.monotonic)

    def _execute(self, spec: Any) -> Callable[[Call, Mapping[str, Any], float], Any]:
        runner = self._runner

        async def execute(call: Call, payload: Mapping[str, Any], timeout_s: float) -> Reply:
            # Not a dry run: a rule's counters move with the replayed history.
            reply = await runner.execute(spec, call, payload, timeout_s)
            return _restore_timeouts((reply,))[0]

        return execute
