"""The ``process`` handler: PicoClaw-style hooks living in a long-lived child process.

The hook's event and matcher choose which calls reach the process (pre_tool_use →
``hook.before_tool`` and so on, see :mod:`.protocol`); its ``observe`` list chooses which
``runtime_event`` notifications it gets. Each hook gets one child process, keyed by hook id
and version (a new version starts a new child and stops the old one); hooks whose config
names the same ``instance`` share one child, which is how a PicoClaw process that intercepts
several stages keeps PicoClaw's one-process, one-handshake behaviour.

Failures follow the hook's policy like every hookgate hook: a crash, an error answer or a
timeout uses ``on_error`` / ``on_timeout`` (block by default on blocking events); a
malformed answer always blocks a blocking event.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine, Mapping
from typing import Any, ClassVar

from hookgate.definition import HookDefinition
from hookgate.handlers.base import Capabilities, Handler, Invocation, Services
from hookgate.handlers.process.protocol import (
    METHODS,
    RUNTIME_EVENT_METHOD,
    build_params,
    decode_answer,
    runtime_envelope,
)
from hookgate.handlers.process.rpc import CLOSED_STATES, HookProcess, RpcError
from hookgate.handlers.process.spec import ProcessSpec
from hookgate.log import log_event
from hookgate.outcome import HookError, HookResult
from hookgate.runtime_kinds import observes
from hookgate.settings import LITE

__all__ = ["ProcessHandler"]

_ChildKey = tuple[Any, ...]


class ProcessHandler(Handler):
    handler_type: ClassVar[str] = "process"
    capabilities: ClassVar[Capabilities] = Capabilities(host_code=True, editions=(LITE,))
    config_model: ClassVar[str] = "hookgate.handlers.process.config:ProcessConfig"

    def __init__(self, services: Services) -> None:
        super().__init__(services)
        self._specs: dict[tuple[str, int], ProcessSpec] = {}
        self._children: dict[_ChildKey, HookProcess] = {}
        self._users: dict[_ChildKey, set[str]] = {}
        self._hook_child: dict[str, _ChildKey] = {}
        #: (hook id, version) -> its process, the per-call fast path of :meth:`_child`.
        self._last: dict[tuple[str, int], HookProcess] = {}
        #: First notifications to processes still starting.
        self._later: set[asyncio.Task[None]] = set()
        #: Processes of replaced or removed hooks, closing; aclose waits for them.
        self._retired: set[HookProcess] = set()

    def run(self, call: Invocation) -> Coroutine[Any, Any, HookResult | Mapping[str, Any] | None]:
        # A plain method handing back the coroutine that does the work: one coroutine frame
        # less on each call's way down and back up (a process hook's round trip is quick).
        hook = call.hook
        key = (hook.id, hook.version)
        spec = self._specs.get(key)
        if spec is None:
            spec = self._spec(hook)
        event = call.event.name
        if event == "runtime_event":
            kind = call.payload.get("kind")
            if not isinstance(kind, str) or not observes(spec.observe, kind):
                return _nothing()  # not in this hook's observe list
        if call.dry_run:
            return self._dry_run(call, spec)
        child = self._last.get(key)  # the per-call fast path of _child
        if (
            child is None
            or child.state in CLOSED_STATES  # child.closed, without the property's call
            or child.loop is not asyncio.get_running_loop()
        ):
            child = self._child(hook, spec, event)
        return self._run(call, child)

    async def _dry_run(
        self, call: Invocation, spec: ProcessSpec
    ) -> HookResult | Mapping[str, Any] | None:
        """A test run gets its own process, stopped before the answer: nothing is left
        running, and the hook's live process (if any) is not disturbed."""
        label = spec.name or call.hook.name or call.hook.id
        child = HookProcess(
            spec,
            label=label,
            modes=spec.modes(call.event.name),
            sandbox=self.services.settings.sandbox(),
        )
        try:
            return await self._run(call, child)
        finally:
            # Shielded: a timeout cancelling the run must not cancel the stop.
            await asyncio.shield(child.aclose())

    async def _run(
        self, call: Invocation, child: HookProcess
    ) -> HookResult | Mapping[str, Any] | None:
        event = call.event.name
        if event == "runtime_event":
            envelope = runtime_envelope(call.payload)
            if child.state == "running" or call.dry_run:
                await child.notify(RUNTIME_EVENT_METHOD, envelope)
                return None
            # PicoClaw starts hook processes when it mounts them, so a start (spawn and
            # hello, bounded by hello_timeout_ms) is no part of an observer's 500 ms: the
            # first notification goes out once the process is up, and aclose waits for it.
            task = asyncio.get_running_loop().create_task(self._notify_later(child, envelope))
            self._later.add(task)
            task.add_done_callback(self._later.discard)
            return None
        method = METHODS.get(event)
        if method is None:
            raise HookError(
                f"process hooks answer {', '.join(METHODS)} and observe runtime_event; "
                f"{event} has no process-hook method"
            )
        try:
            params = build_params(event, call.payload)
            if "state" in call.payload:  # hook state in (config.state)
                params["state"] = call.payload["state"]
            answer = await child.call(method, params)
        except RpcError as exc:
            raise HookError(
                f"process hook {child.label!r} {method} failed: {exc.message}",
                details={"method": method, "rpc_error_code": exc.code, "pid": child.pid},
            ) from None
        result = decode_answer(event, answer, call.payload)
        details = result.details
        details["method"] = method
        details["pid"] = child.pid
        if isinstance(answer, dict) and "state" in answer:  # hook state changes out
            result.details["state_changes"] = answer["state"]
        return result

    async def _notify_later(self, child: HookProcess, envelope: Mapping[str, Any]) -> None:
        try:
            await child.notify(RUNTIME_EVENT_METHOD, envelope)
        except Exception as exc:  # nobody waits for a notification: log it
            log_event(
                "hookgate.process.notify_failed", hook=child.label, kind=envelope.get("kind"),
                error=str(exc),
            )

    # -- status ---------------------------------------------------------------------------

    def status(self, hook_id: str) -> dict[str, Any] | None:
        """The hook's process: state (running, restarting, …), pid, restarts, last error."""
        key = self._hook_child.get(hook_id)
        child = self._children.get(key) if key is not None else None
        return None if child is None else child.status()

    def statuses(self) -> dict[str, dict[str, Any]]:
        """:meth:`status` of every hook that has a process, by hook id."""
        out = {}
        for hook_id in self._hook_child:
            status = self.status(hook_id)
            if status is not None:
                out[hook_id] = status
        return out

    # -- children -------------------------------------------------------------------------

    def _spec(self, hook: HookDefinition) -> ProcessSpec:
        """The hook version's parsed config (parsed once per version)."""
        key = (hook.id, hook.version)
        spec = self._specs.get(key)
        if spec is None:
            # Imported here: the config model's pydantic loads when a process hook first runs.
            from hookgate.handlers.process.config import parse_spec

            try:
                spec = parse_spec(hook.config)
            except ValueError as exc:
                raise HookError("; ".join(str(arg) for arg in exc.args)) from None
            self._specs[key] = spec
        return spec

    def _child(self, hook: HookDefinition, spec: ProcessSpec, event: str) -> HookProcess:
        known = self._last.get((hook.id, hook.version))
        if known is not None and not known.closed and known.loop is asyncio.get_running_loop():
            return known
        key: _ChildKey
        if spec.instance:
            key = ("instance", spec.instance, spec.process_identity)
        else:
            key = ("hook", hook.id, hook.version)
        previous = self._hook_child.get(hook.id)
        if previous is not None and previous != key:
            self._release(hook.id, previous)  # the hook changed: its old process goes
            for stale in [k for k in self._last if k[0] == hook.id]:
                del self._last[stale]
        child = self._children.get(key)
        if child is not None and (child.closed or child.loop is not asyncio.get_running_loop()):
            self._retire(child)
            for stale in [k for k, c in self._last.items() if c is child]:
                del self._last[stale]
            child = None
        if child is None:
            child = HookProcess(
                spec,
                label=spec.name or hook.name or hook.id,
                modes=spec.modes(event),
                sandbox=self.services.settings.sandbox(),
            )
            self._children[key] = child
        self._users.setdefault(key, set()).add(hook.id)
        self._hook_child[hook.id] = key
        self._last[(hook.id, hook.version)] = child
        return child

    def _release(self, hook_id: str, key: _ChildKey) -> None:
        users = self._users.get(key)
        if users is not None:
            users.discard(hook_id)
            if users:
                return
            del self._users[key]
        child = self._children.pop(key, None)
        if child is not None:
            for stale in [k for k, c in self._last.items() if c is child]:
                del self._last[stale]
            self._retire(child)

    def _retire(self, child: HookProcess) -> None:
        # Those already closed are forgotten, so a long-lived gateway keeps no history.
        self._retired = {c for c in self._retired if c.state != "closed"}
        self._retired.add(child)
        child.close_soon()

    def forget(self, hook_id: str) -> None:
        for key in [k for k in self._specs if k[0] == hook_id]:
            del self._specs[key]
        for key in [k for k in self._last if k[0] == hook_id]:
            del self._last[key]
        child_key = self._hook_child.pop(hook_id, None)
        if child_key is not None:
            self._release(hook_id, child_key)

    async def aclose(self) -> None:
        if self._later:
            await asyncio.gather(*self._later, return_exceptions=True)
        children = list(self._children.values())
        self._children.clear()
        self._users.clear()
        self._hook_child.clear()
        self._last.clear()
        children += [c for c in self._retired if c not in children]
        self._retired.clear()
        mine = [c for c in children if c.loop is asyncio.get_running_loop()]
        for child in children:
            if child not in mine:
                child.close_soon()
        await asyncio.gather(*(child.aclose() for child in mine), return_exceptions=True)


async def _nothing() -> None:
    return None
