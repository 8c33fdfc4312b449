"""The ``callable`` handler: a Python function or coroutine function is the hook.

Config: ``{"callable": fn}`` from code, or ``{"callable": "package.module:function"}`` in a
hooks file, and ``isolate``: ``thread`` or ``none``. The function takes one
:class:`~hookgate.hook_event.HookEvent` and returns a :class:`~hookgate.outcome.HookResult`, a
dict with the outcome keys, or ``None`` to abstain.

A function registered in code is the embedding program's own: by default (``isolate: none``)
it runs in place on the caller's thread, like a pluggy hook, and an overrun is reported when it
returns. A function a hooks file names (a ``module:function`` string) defaults to
``isolate: thread``: it runs on a worker of :mod:`hookgate.execution.workers` with a hard
deadline. ``Settings.isolate_callables`` (the gateway) isolates every one. Coroutine functions
run on the loop and are cancelled at their deadline.
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Callable, Mapping, Sequence
from typing import Any, ClassVar

from hookgate.definition import HookDefinition
from hookgate.handlers.base import Capabilities, Handler, Invocation, PlainFunction
from hookgate.hook_event import HookEvent
from hookgate.outcome import HookError, HookResult
from hookgate.settings import LITE

__all__ = ["ISOLATION", "CallableHandler", "is_isolated", "module_allowed", "resolve_callable"]

HookFunction = Callable[[HookEvent], Any]
#: ``config.isolate``: ``thread`` (a worker with a hard deadline) or ``none`` (in place).
ISOLATION = ("thread", "none")


def is_isolated(config: Mapping[str, Any], *, always: bool = False) -> bool:
    """Whether a callable hook's plain function runs on a worker: as ``config.isolate``
    says, by default when the function is named by a string (loaded from a hooks file, not
    registered in code); ``always`` (``Settings.isolate_callables``) overrides."""
    if always:
        return True
    isolate = config.get("isolate")
    if isolate is None:
        return isinstance(config.get("callable"), str)
    return bool(isolate == "thread")


def module_allowed(target: Any, allowed: Sequence[str]) -> bool:
    """Is ``target`` a ``'module:function'`` string in one of the ``allowed`` module prefixes?

    A string check only: nothing is imported (an import runs the module's code).
    """
    if not isinstance(target, str):
        return False
    module = target.partition(":")[0]
    return bool(module) and any(
        module == prefix or module.startswith(prefix + ".") for prefix in allowed
    )


def resolve_callable(target: Any) -> HookFunction:
    """The function a ``callable`` config names; raise ValueError with the reason if none."""
    if callable(target):
        return target  # type: ignore[no-any-return]
    if not isinstance(target, str) or ":" not in target:
        raise ValueError("callable must be a function or a 'package.module:function' string")
    module_name, _, attr_path = target.partition(":")
    try:
        obj: Any = importlib.import_module(module_name)
    except Exception as exc:  # ImportError, or a SyntaxError or a crash inside the module
        raise ValueError(f"cannot import {module_name!r}: {type(exc).__name__}: {exc}") from None
    for attr in attr_path.split("."):
        try:
            obj = getattr(obj, attr)
        except AttributeError:
            raise ValueError(f"{module_name!r} has no attribute {attr_path!r}") from None
    if not callable(obj):
        raise ValueError(f"{target!r} is not callable")
    return obj  # type: ignore[no-any-return]


class CallableHandler(Handler):
    handler_type: ClassVar[str] = "callable"
    capabilities: ClassVar[Capabilities] = Capabilities(host_code=True, editions=(LITE,))
    config_model: ClassVar[str] = "hookgate.handlers.callable_config:CallableConfig"

    def __init__(self, services: Any) -> None:
        super().__init__(services)
        self._functions: dict[tuple[str, int], tuple[HookFunction, bool]] = {}

    def _function(self, hook: HookDefinition) -> tuple[HookFunction, bool]:
        """The hook's function (resolved once per version), and whether it is async."""
        key = (hook.id, hook.version)
        found = self._functions.get(key)
        if found is None:
            target = hook.config.get("callable")
            allowed = self.services.settings.callable_modules
            if (
                allowed is not None
                and hook.source != "builtin"  # hookgate's own functions
                and isinstance(target, str)
                and not module_allowed(
                    target, allowed
                )
            ):
                # Checked before the import: importing runs the module.
                raise HookError(f"callable {target!r} is not in an allowed module")
            try:
                fn = resolve_callable(target)
            except ValueError as exc:
                raise HookError(str(exc)) from None
            is_async = inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(
                getattr(fn, "__call__", None)  # noqa: B004 - async callable objects
            )
            found = (fn, is_async)
            self._functions[key] = found
        return found

    def sync_function(self, hook: HookDefinition) -> PlainFunction | None:
        try:
            fn, is_async = self._function(hook)
        except HookError:
            return None  # run() reports the error
        if is_async:
            return None
        return PlainFunction(fn, self._isolated(hook))

    def _isolated(self, hook: HookDefinition) -> bool:
        return is_isolated(hook.config, always=self.services.settings.isolate_callables)

    async def run(self, call: Invocation) -> HookResult | Mapping[str, Any] | None:
        fn, is_async = self._function(call.hook)
        event = HookEvent(call.event.name, call.payload)
        threads = call.threads if call.threads is not None else self.services.hook_threads
        if is_async or threads is None or not self._isolated(call.hook):
            answer = fn(event)
        else:
            # On a worker: the engine's timeout cancels this await at the deadline.
            answer = await threads.call(fn, event, call.payload.get("tenant_id"))
        if is_async or inspect.isawaitable(answer):
            answer = await answer
        return answer  # type: ignore[no-any-return]

    def forget(self, hook_id: str) -> None:
        for key in [k for k in self._functions if k[0] == hook_id]:
            del self._functions[key]
