"""``hookgate claude-code`` with a local hooks file: one event, answered without an event loop.

The process lives for one event, so what it imports is most of what it costs. Importing
asyncio alone costs several times a bare Python start; so when every hook of the event is a
``command`` or a plain-function ``callable`` (the common hooks file), the chain runs here
with a blocking driver: :mod:`hookgate.chain` holds every rule
(:func:`~hookgate.chain.run_chain`, driven by :func:`~hookgate.chain.drive_sync` as
for the engine's ``fire_sync``), and this module
only executes its batches (commands with
:func:`~hookgate.handlers.subprocess.runner.run_shell_blocking`, functions on a thread so that their
timeout holds). The definitions come from :mod:`.definition_cache`.

Any other hook (http, prompt, an ``async def`` callable, hook state) runs the event on the
full :class:`~hookgate.engine.Engine` instead, with the same definitions: the decision
whether to does not depend on what a hook answered, and no hook has run when it is taken.

The steps before the chain mirror :meth:`hookgate.engine.Engine.fire` with ``wait=True``
(payload normalization, input limits, resolution); ``tests/integrations/claude_code/
test_local_run.py`` compares the two on the same events.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final

from hookgate.chain import (
    Call,
    ChainSettings,
    HookReply,
    Reply,
    drive_sync,
    run_chain,
    stops_blocking_batch,
)
from hookgate.events import KNOWN_FIELDS, EventSpec, UnknownEventError, normalize_payload
from hookgate.hook_event import HookEvent
from hookgate.host_code import HostCodePolicy
from hookgate.integrations.claude_code import in_place
from hookgate.integrations.claude_code.contract import (
    ClaudeAnswer,
    answer_claude_code,
    claude_answer,
    engine_evaluator,
    failure_answer,
    hookgate_input,
    parse_claude_code_input,
)
from hookgate.integrations.claude_code.definition_cache import InvalidHooksFile, load_definitions
from hookgate.integrations.claude_code.startup import default_config_path
from hookgate.outcome import HookError, Outcome
from hookgate.payload_limits import walked_payload_problem
from hookgate.registry import CompiledHook, HookRegistry

if TYPE_CHECKING:
    from hookgate.definition import HookDefinition
    from hookgate.settings import Settings

__all__ = ["answer_event", "rule_state_path", "run_blocking"]

#: Handler types this module runs itself.
BLOCKING_HANDLERS: Final = frozenset({"command", "callable"})

HookFunction = Callable[[HookEvent], Any]


def answer_event(
    stdin_text: str,
    config_path: str | None,
    *,
    settings: Settings,
    environ: Mapping[str, str] | None = None,
    home: str | None = None,
) -> ClaudeAnswer:
    """One ``hookgate claude-code`` run with a local hooks file: parse stdin, load the
    hooks (cached), answer. Failures fail closed as in :func:`.contract.run_bridge`."""
    env = os.environ if environ is None else environ
    data, event_name, refused = parse_claude_code_input(stdin_text)
    if data is None:
        return refused or ClaudeAnswer()
    path = config_path or default_config_path(data, env, home)
    if path is None:
        return ClaudeAnswer()  # no hooks file anywhere: nothing to enforce
    try:
        definitions = load_definitions(path, edition=settings.edition, environ=env)
    except InvalidHooksFile as exc:
        return failure_answer(event_name, f"hooks file {path} is invalid: {exc.problems[0]}")
    try:
        spec, payload = hookgate_input(data)
    except UnknownEventError:
        return ClaudeAnswer()  # an event hookgate has no name for: nothing to run
    try:
        outcome = run_blocking(spec, payload, definitions, settings)
    except Exception as exc:  # as answer_claude_code does for the engine
        return failure_answer(event_name, f"evaluating {event_name} failed: {exc}")
    if outcome is None:
        return _on_engine(data, definitions, settings, env)
    return claude_answer(str(event_name), outcome, data.get("tool_response"))


def run_blocking(
    spec: EventSpec,
    payload: Mapping[str, Any],
    definitions: Sequence[HookDefinition],
    settings: Settings,
) -> Outcome | None:
    """``Engine.fire(spec.name, payload, wait=True)`` without an event loop; ``None`` (with
    no hook run) when a hook of the event needs the engine (:class:`~.in_place.NeedsFork`
    instead in the warm process's resident, which runs no engine)."""
    outcome = _run_blocking(spec, payload, definitions, settings)
    if outcome is None and in_place.current() is not None:
        raise in_place.NeedsFork
    return outcome


def _run_blocking(
    spec: EventSpec,
    payload: Mapping[str, Any],
    definitions: Sequence[HookDefinition],
    settings: Settings,
) -> Outcome | None:
    if any(d.handler_type == "rule" for d in definitions):
        return None  # rule hooks need the engine's session history, on every tool event
    source = HookRegistry(d for d in definitions if d.event == spec.name)
    data: Mapping[str, Any] = payload
    if not source.has_event(spec.name):
        depth = data.get("depth")
        if depth is None or (type(depth) is int and depth <= settings.max_depth):
            return Outcome()
    if not KNOWN_FIELDS.issuperset(data):
        data = normalize_payload(data)
    if spec.prepare is not None:
        data = spec.prepare(data)
    run_as = spec.run_as(spec.name, True)
    problem = walked_payload_problem(data)
    if problem is not None:  # Engine.refuse_input, without the audit row (there is no log)
        if run_as.blocking:
            return Outcome(decision="block", reason=f"invalid input: {problem}")
        return Outcome()
    # As the engine: only the hooks whose matcher accepts the event reach the chain.
    hooks = source.select(spec, data)
    if not hooks:
        depth = data.get("depth")
        if depth is None or (type(depth) is int and depth <= settings.max_depth):
            return Outcome()
    runner = _Runner(run_as, hooks, settings)
    if not runner.ready:
        return None
    chain_settings = ChainSettings(
        chain_budget_s=settings.chain_budget_s, max_depth=settings.max_depth
    )
    return drive_sync(run_chain(hooks, run_as, data, chain_settings), runner)


class _Runner:
    """Executes the chain's batches by the driver contract (see :mod:`hookgate.chain`)."""

    def __init__(
        self, spec: EventSpec, hooks: Sequence[CompiledHook], settings: Settings
    ) -> None:
        self.spec = spec
        self.settings = settings
        self.functions: dict[CompiledHook, HookFunction] = {}
        self.refusals: dict[CompiledHook, str] = {}
        self.ready = True
        policy = HostCodePolicy()
        handler: Any = None
        for hook in hooks:
            definition = hook.definition
            refusal = policy.refusal(definition, settings.edition)
            if refusal is not None:
                self.refusals[hook] = refusal  # reported as the engine does: a hook error
                continue
            if definition.handler_type not in BLOCKING_HANDLERS or definition.config.get(
                "state"
            ):
                self.ready = False
                return
            if definition.handler_type == "callable":
                if handler is None:
                    from hookgate.handlers import Services
                    from hookgate.handlers.callable import CallableHandler

                    handler = CallableHandler(Services(settings=settings))
                plain = handler.sync_function(definition)
                if plain is None:  # an async function (or one that does not resolve)
                    self.ready = False
                    return
                self.functions[hook] = plain.call

    def __call__(
        self, calls: Sequence[Call], payload: Mapping[str, Any], deadline: float | None
    ) -> list[Reply]:
        view = HookEvent(self.spec.name, payload)
        replies: list[Reply] = []
        for call in calls:
            hook, timeout_s = call[0], call[1]
            if deadline is not None:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    break
                timeout_s = min(timeout_s, remaining)
            reply = self._run(hook, payload, view, timeout_s)
            replies.append(reply)
            if deadline is not None and stops_blocking_batch(reply):
                break  # a blocking batch stops after the first call that matters
        return replies

    def _run(
        self, hook: CompiledHook, payload: Mapping[str, Any], view: HookEvent, timeout_s: float
    ) -> Reply:
        refusal = self.refusals.get(hook)
        if refusal is not None:
            return HookReply(None, HookError(refusal), False, 0.0)
        fn = self.functions.get(hook)
        if fn is not None:
            return _call_on_thread(fn, view, timeout_s)
        return self._run_command(hook.definition, payload, timeout_s)

    def _run_command(
        self, definition: HookDefinition, payload: Mapping[str, Any], timeout_s: float
    ) -> Reply:
        from hookgate.handlers.command import (
            STDERR_CAP,
            STDOUT_CAP,
            command_answer,
            command_input,
        )
        from hookgate.handlers.subprocess.runner import ShellTimeout, run_shell_blocking

        started = time.perf_counter()
        # In the resident the relay's process is the event's, given to the command
        # explicitly; elsewhere it is this process's own.
        event = in_place.current()
        try:
            stdin, env, cwd = command_input(
                definition, self.spec, payload,
                environ=None if event is None else event.environ,
            )
            code, stdout, stderr, stdout_len = run_shell_blocking(
                definition.config["command"], stdin,
                cwd if event is None else event.directory(cwd), env,
                stdout_cap=STDOUT_CAP, stderr_cap=STDERR_CAP, timeout_s=timeout_s,
                sandbox=self.settings.sandbox(), umask=-1 if event is None else event.umask,
                spares=in_place.spare_shells(),
            )
            answer = command_answer(definition, self.spec, code, stdout, stderr, stdout_len)
        except ShellTimeout:
            return HookReply(None, None, True, (time.perf_counter() - started) * 1000)
        except Exception as exc:
            return HookReply(None, exc, False, (time.perf_counter() - started) * 1000)
        return HookReply(answer, None, False, (time.perf_counter() - started) * 1000)


def _call_on_thread(fn: HookFunction, view: HookEvent, timeout_s: float) -> Reply:
    """Call a plain function on a thread of its own and wait at most ``timeout_s``. One past
    its time is abandoned (a daemon thread: the process exits once it has answered)."""
    box: list[tuple[Any, BaseException | None]] = []

    def target() -> None:
        try:
            box.append((fn(view), None))
        except BaseException as exc:  # reported as the hook's failure
            box.append((None, exc))

    started = time.perf_counter()
    thread = threading.Thread(target=target, name="hookgate-hook", daemon=True)
    thread.start()
    thread.join(timeout_s)
    elapsed = (time.perf_counter() - started) * 1000
    if not box:
        return HookReply(None, None, True, elapsed)
    answer, failure = box[0]
    return HookReply(answer, failure, False, elapsed)


def rule_state_path(environ: Mapping[str, str]) -> str | None:
    """Where rule hooks keep their counters and history between ``hookgate claude-code``
    calls (each is a process of its own, so memory would forget every call):
    ``$HOOKGATE_STATE_FILE``, else ``hookgate/hook-state.json`` in ``$XDG_STATE_HOME``
    (``~/.local/state``); ``None`` without a home to put it in."""
    named = environ.get("HOOKGATE_STATE_FILE")
    if named:
        return named
    base = environ.get("XDG_STATE_HOME") or (
        os.path.join(environ["HOME"], ".local", "state") if environ.get("HOME") else None
    )
    return os.path.join(base, "hookgate", "hook-state.json") if base else None


def _on_engine(
    data: Mapping[str, Any],
    definitions: Sequence[HookDefinition],
    settings: Settings,
    environ: Mapping[str, str],
) -> ClaudeAnswer:
    """The event on the full engine (asyncio), with the definitions already loaded."""
    import asyncio

    from hookgate.engine import Engine

    async def answer() -> ClaudeAnswer:
        engine = Engine(settings=settings)
        state_path = rule_state_path(environ)
        if state_path and any(d.handler_type == "rule" for d in definitions):
            from hookgate.state.stores import FileStateStore

            engine.services.hook_state = FileStateStore(state_path)
        try:
            for definition in definitions:  # as Engine.load registers a file's hooks
                engine.registry.put(definition)
            return await answer_claude_code(data, engine_evaluator(engine))
        finally:
            await engine.aclose()

    return asyncio.run(answer())
