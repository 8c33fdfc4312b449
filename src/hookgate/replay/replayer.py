"""The candidate's chain run on recorded inputs: :class:`Replayer`.

The candidate hooks sit in an engine of their own (no audit, no breaker, a memory state
store: a replay writes nothing anywhere). Each recorded input is prepared and matched as the
gateway did, and its chain runs through the same chain function as a live dispatch
(:func:`hookgate.chain.run_chain`), with approvals on (an ``ask`` is reported, nobody is
asked). A hook that calls out (:data:`~hookgate.replay.recording.OUTCALL_TYPES`) answers
with its recorded reply, found by its name, unless the replayer is ``live``: its handler is
replaced by :class:`RecordedHandler`, which never reaches the network, starts no program and
calls no model. A candidate outcall hook without a recording makes the dispatch ``unknown``
(never an allow).

Chains whose hooks are all plain functions (callables, recorded answers) run without the
event loop, as ``fire_sync`` runs them; others on the loop.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from hookgate.audit import redact, truncate
from hookgate.chain import Call, ChainSettings, HookReply, Reply, drive_sync, run_chain
from hookgate.definition import HookDefinition
from hookgate.engine import Engine
from hookgate.events import KNOWN_FIELDS, get_event, normalize_payload
from hookgate.execution.drivers import drive_async
from hookgate.handlers import Capabilities, Handler, Invocation, Services
from hookgate.handlers.base import PlainFunction
from hookgate.hook_event import HookEvent
from hookgate.outcome import HookError, Outcome
from hookgate.registry import HookRegistry
from hookgate.replay.recording import OUTCALL_TYPES, UnusableRecording, reply_from_json
from hookgate.replay.records import RecordedDispatch
from hookgate.settings import Settings
from hookgate.state.stores import MemoryStateStore

__all__ = ["RecordedHandler", "Replayer", "Verdict"]


@dataclass(frozen=True, slots=True)
class Verdict:
    """What the candidate decides for one recorded input: ``allow``, ``block``, ``ask``
    (a person would be asked) or ``unknown`` (a hook could not be replayed), and why."""

    decision: str
    reason: str | None


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


def _restore_timeouts(replies: Sequence[Reply]) -> list[Reply]:
    fixed: list[Reply] = []
    for reply in replies:
        if reply.__class__ is HookReply and isinstance(reply[1], _RecordedTimeout):
            reply = HookReply(None, None, True, reply[1].ms)
        fixed.append(reply)
    return fixed


def _text(value: str | None) -> str | None:
    return truncate(redact(value)) if value else None


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
        # A replay keeps its session state to itself: rules count what it replays.
        services.hook_state = MemoryStateStore()
        self.live = live
        self.registry = HookRegistry(definitions)
        self.engine = Engine(settings=settings, services=services, source=self.registry)
        self._recordings = _Recordings()
        runner = self.engine.runner
        if not live:
            stand_in = RecordedHandler(services, self._recordings)
            for handler_type in OUTCALL_TYPES:
                runner.handlers[handler_type] = stand_in
        self._runner = runner
        self._chain_settings = ChainSettings(
            chain_budget_s=settings.chain_budget_s,
            max_depth=settings.max_depth,
            clock=time.monotonic,
            breakers=None,
            dry_run=True,
            approvals=True,
        )

    async def aclose(self) -> None:
        await self.engine.aclose()

    async def replay(self, recorded: RecordedDispatch) -> Verdict:
        """The candidate's decision for one recorded input."""
        spec = get_event(recorded.event)
        data: Mapping[str, Any] = recorded.payload
        if not KNOWN_FIELDS.issuperset(data):
            data = normalize_payload(data)
        if spec.prepare is not None:
            data = spec.prepare(data)
        blocking = recorded.blocking
        if blocking is None:  # an older record: it blocked, so it was waited for
            blocking = spec.blocking or recorded.before == "block"
        spec = spec.run_as(spec.name, blocking)
        hooks = self.registry.select(spec, data)
        recordings = self._recordings
        recordings.current = recorded.answers
        recordings.missing = []
        if not hooks:
            return Verdict("allow", None)
        outcome = await self._run(spec, data, hooks)
        if recordings.missing:
            why = "; ".join(recordings.missing)
            hint = "" if self.live else " (replay with --live to call it)"
            return Verdict("unknown", _text(f"not replayed: {why}{hint}"))
        pending = outcome.pending_approval
        if pending is not None:
            return Verdict("ask", _text(pending.reason or f"hook {pending.definition.name!r} asks"))
        if not spec.blocking:
            return Verdict("allow", None)  # a non-blocking chain never decides
        return Verdict(outcome.decision, _text(outcome.reason))

    async def _run(self, spec: Any, data: Mapping[str, Any], hooks: Sequence[Any]) -> Outcome:
        runner, settings = self._runner, self._chain_settings
        plan = runner.plan(hooks, spec.name) if spec.blocking else None
        chain = run_chain(hooks, spec, data, settings)
        if plan is not None and not plan.isolated:
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
