"""Run :func:`hookgate.chain.run_chain` directly, with no engine, handler or driver.

Like pluggy's ``MC`` helper for ``_multicall``: each hook is a scripted reply (an answer, an
exception, or :data:`TIMEOUT`), and :func:`run_direct` plays a driver that keeps the driver
contract (a blocking batch stops after the first reply that matters). Tests of the chain
rules can then read the batches the chain asked for and the outcome it folded.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from hookgate.chain import Batch, ChainSettings, HookReply, Reply, run_chain, stops_blocking_batch
from hookgate.definition_model import validate_definition
from hookgate.events import get_event
from hookgate.outcome import Outcome
from hookgate.registry import CompiledHook, compile_hook

#: A scripted reply that means "the hook ran out of time".
TIMEOUT = object()


@dataclass
class Scripted:
    """One hook: its ``answer`` (a value, an exception instance, or :data:`TIMEOUT`)."""

    answer: Any = None
    name: str = ""
    options: Mapping[str, Any] = field(default_factory=dict)


@dataclass
class DirectRun:
    outcome: Outcome
    #: Every batch the chain yielded, as ``[hook names]`` with the payload it carried.
    batches: list[tuple[list[str], Mapping[str, Any]]]


def compile_scripted(event: str, hooks: Sequence[Scripted]) -> list[CompiledHook]:
    compiled = []
    for order, hook in enumerate(hooks):
        raw = {
            "event": event,
            "handler_type": "callable",
            "name": hook.name or f"hook-{order}",
            "order": order,
            "config": {"callable": lambda event: None},
            **hook.options,
        }
        compiled.append(compile_hook(validate_definition(raw, default_scope="global")))
    return sorted(compiled, key=lambda hook: hook.sort_key)


def reply_for(answer: Any) -> Reply:
    if answer is TIMEOUT:
        return HookReply(None, None, True, 5.0)
    if isinstance(answer, BaseException):
        return HookReply(None, answer, False, 1.0)
    return HookReply(answer, None, False, 1.0)


def run_direct(
    event: str,
    hooks: Sequence[Scripted],
    payload: Mapping[str, Any] | None = None,
    settings: ChainSettings | None = None,
) -> DirectRun:
    """Drive the chain by hand (its generator protocol: next, send) and return its outcome and
    the batches it yielded."""
    compiled = compile_scripted(event, hooks)
    scripts = {
        hook.definition.name: script.answer
        for hook, script in zip(
            sorted(compiled, key=lambda h: h.definition.order), hooks, strict=True
        )
    }
    chain = run_chain(compiled, get_event(event), payload or {}, settings or ChainSettings())
    batches: list[tuple[list[str], Mapping[str, Any]]] = []
    try:
        batch: Batch = next(chain)
        while True:
            calls, batch_payload, deadline = batch
            names = [hook.definition.name for hook, *_ in calls]
            batches.append((names, batch_payload))
            replies: list[Reply] = []
            for name in names:
                reply = reply_for(scripts[name])
                replies.append(reply)
                if deadline is not None and stops_blocking_batch(reply):
                    break
            batch = chain.send(replies)
    except StopIteration as done:
        return DirectRun(done.value, batches)
