"""The one run of a coding agent's command hook (Codex CLI, Gemini CLI): the agent's stdin
JSON in, one hookgate decision (a local hooks file or a gateway), the agent's JSON out.

What differs per agent is an :class:`AgentContract`: its event names, how an outcome is
written in its JSON, and the explicit deny it honours when hookgate itself fails. What is
the same lives here: reading stdin, mapping tool names (:mod:`.agent_tools`), deciding,
the loop guard of the "stop" events, and turning **every** failure into that explicit deny,
because both agents let the action run when a hook crashes, times out or prints garbage.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import stat
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import IO, TYPE_CHECKING, Any, Protocol

from hookgate.integrations.agent_reply import BridgeReply, block_reason
from hookgate.integrations.agent_tools import canonical_tool
from hookgate.integrations.claude_code.in_place import NeedsFork
from hookgate.outcome import Outcome

if TYPE_CHECKING:
    from hookgate.definition import HookDefinition
    from hookgate.settings import Settings

__all__ = ["AgentContract", "BridgeReply", "StopCounter", "answer", "block_reason",
           "contract_for", "main", "print_reply"]


class AgentContract(Protocol):
    #: The agent's name, for messages and the stop counter (``codex``, ``gemini``).
    name: str
    #: The agent's event name → hookgate's canonical event.
    events: Mapping[str, str]
    #: The agent's events that end a turn and can be blocked into another one.
    stop_events: frozenset[str]
    #: The agent's field names where hookgate's differ, per agent event.
    renames: Mapping[str, Mapping[str, str]]
    #: The agent's tool names → hookgate's (:mod:`.agent_tools`).
    tool_names: Mapping[str, str]

    def reply(self, event: str, outcome: Outcome, stop_blocks_so_far: int) -> BridgeReply: ...

    def failure(self, event: str | None, message: str) -> BridgeReply: ...


def contract_for(agent: str) -> AgentContract:
    """The contract of ``hookgate <agent>`` (``codex`` or ``gemini``)."""
    if agent == "codex":
        from hookgate.integrations.codex.contract import CodexContract

        return CodexContract()
    from hookgate.integrations.gemini.contract import GeminiContract

    return GeminiContract()


#: Decide one event: (canonical event, payload) → Outcome.
Decide = Callable[[str, dict[str, Any]], Outcome]


class StopCounter:
    """How many times in a row a session's "stop" was blocked, in a folder of the user's
    own cache (one small file per session), so a hook that always blocks cannot loop forever.

    Not in a shared temporary folder: another user who made ``/tmp/hookgate-<uid>`` first
    could put a count there that lifts the block. A count is taken only from a file and
    folder of the user's own that nobody else may write; any other counts as none (the
    policy's block holds), and none is written there."""

    def __init__(self, agent: str, environ: Mapping[str, str]) -> None:
        base = environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
        self.folder = os.path.join(base, "hookgate", f"{agent}-stops")
        self.agent = agent

    def _path(self, session: str) -> str:
        digest = hashlib.sha256(session.encode("utf-8", "replace")).hexdigest()[:32]
        return os.path.join(self.folder, digest)

    def get(self, session: str) -> int:
        try:
            fd = os.open(self._path(session), os.O_RDONLY | os.O_NOFOLLOW)
        except OSError:
            return 0
        with os.fdopen(fd) as file:
            try:
                _own(os.fstat(file.fileno()), self._path(session))
                self._check_folder()
            except OSError:
                return 0  # not the user's own: no count of anyone else's lifts a block
            text = file.read(16).strip()
        return int(text) if text.isdigit() else 0

    def set(self, session: str, count: int) -> None:
        path = self._path(session)
        if count == 0:
            with contextlib.suppress(OSError):
                os.unlink(path)
            return
        os.makedirs(self.folder, mode=0o700, exist_ok=True)
        self._check_folder()
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
        with os.fdopen(fd, "w") as file:
            _own(os.fstat(file.fileno()), path)
            file.write(str(count))

    def _check_folder(self) -> None:
        info = os.lstat(self.folder)
        if not stat.S_ISDIR(info.st_mode):
            raise PermissionError(f"{self.folder} is not a folder")
        _own(info, self.folder)


def _joined(*notes: str) -> str:
    return "\n".join(note for note in notes if note)


def _own(info: os.stat_result, path: str) -> None:
    """``path`` (as ``info`` describes it) is this user's and nobody else may write it."""
    if info.st_uid != os.getuid() or info.st_mode & 0o022:
        raise PermissionError(f"{path} is not the user's own, or others may write it")


def answer(contract: AgentContract, raw: bytes, decide: Decide,
           counter: StopCounter | None = None) -> BridgeReply:
    """One hook event: never raises; every failure is ``contract.failure``."""
    event: str | None = None
    try:
        data = json.loads(raw.decode("utf-8"))
        if not isinstance(data, dict):
            return contract.failure(None, f"stdin is not a {contract.name} hook input object")
        named = data.get("hook_event_name")
        event = named if isinstance(named, str) else None
        canonical = contract.events.get(event or "")
        if canonical is None:
            # An event hookgate has no name for (agents add events often): nothing to run,
            # but never a silent pass on something that looks like a tool call.
            if event is None or "tool_name" in data:
                return contract.failure(event, f"unknown {contract.name} event {event!r}")
            return BridgeReply()
        renames = contract.renames.get(event or "", {})
        payload = {renames.get(key, key): value for key, value in data.items()}
        canonical_tool(payload, contract.tool_names)
        outcome = decide(canonical, payload)
        blocks = 0
        session = str(data.get("session_id") or "")
        if event in contract.stop_events and counter is not None:
            blocks = counter.get(session) if data.get("stop_hook_active") else 0
            reply = contract.reply(event, outcome, blocks)
            try:
                counter.set(session, blocks + 1 if reply.stdout else 0)
            except OSError as exc:  # the answer stands; only the loop bound is not kept
                reply = BridgeReply(reply.stdout, _joined(reply.stderr, (
                    f"hookgate: the stop count was not kept: {exc}")))
            return reply
        return contract.reply(event or "", outcome, blocks)
    except NeedsFork:
        raise  # nothing ran: the warm process's resident hands the event to a fork
    except BaseException as exc:  # fail closed on anything, even an interrupt
        reason = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
        return contract.failure(event, f"internal error: {reason}")


def local_decider(config: str, environ: Mapping[str, str]) -> Decide:
    """Decide with a hooks file, as ``hookgate claude-code`` does: the definitions from the
    cache of this exact file, and the chain without an event loop when every hook of the
    event is a command or a plain function; else the engine (every event waits for its whole
    chain: the agent waits for this process anyway)."""

    def decide(event: str, payload: dict[str, Any]) -> Outcome:
        from hookgate.events import get_event
        from hookgate.integrations.claude_code.definition_cache import (
            InvalidHooksFile,
            load_definitions,
        )
        from hookgate.integrations.claude_code.local_run import run_blocking
        from hookgate.settings import Settings

        settings = Settings.from_env(environ)
        try:
            definitions = load_definitions(config, edition=settings.edition, environ=environ)
        except InvalidHooksFile as exc:
            raise RuntimeError(f"hooks file {config} is invalid: {exc.problems[0]}") from None
        outcome = run_blocking(get_event(event), payload, definitions, settings)
        return outcome if outcome is not None else _on_engine(event, payload, definitions,
                                                              settings)

    return decide


def _on_engine(event: str, payload: dict[str, Any], definitions: Sequence[HookDefinition],
               settings: Settings) -> Outcome:
    import asyncio

    from hookgate.engine import Engine

    async def run() -> Outcome:
        engine = Engine(settings=settings)
        try:
            for definition in definitions:  # as Engine.load registers a file's hooks
                engine.registry.put(definition)
            return await engine.fire(event, payload, wait=True)
        finally:
            await engine.aclose()

    return asyncio.run(run())


def gateway_decider(url: str, api_key: str | None) -> Decide:
    """Decide through a gateway's ``hooks.dispatch`` (a person may be asked, within the
    agent's hook timeout)."""

    def decide(event: str, payload: dict[str, Any]) -> Outcome:
        import asyncio

        from hookgate.client import AsyncGatewayClient, outcome_from_payload

        if not api_key:
            raise RuntimeError("--gateway needs an API key in HOOKGATE_API_KEY")

        async def run() -> Outcome:
            async with AsyncGatewayClient(url, api_key, timeout=25.0) as client:
                reply = await client.dispatch(event, payload, wait=True, approval_wait_s=20.0)
                return outcome_from_payload(reply)

        return asyncio.run(run())

    return decide


def main(contract: AgentContract, config: str | None, gateway: str | None, *,
         stdin: IO[bytes] | None = None, stdout: IO[str] | None = None,
         stderr: IO[str] | None = None, environ: Mapping[str, str] | None = None) -> int:
    """``hookgate <agent> [--config F | --gateway URL]``; always exit 0 with the answer."""
    env = os.environ if environ is None else environ
    out = stdout or sys.stdout
    err = stderr or sys.stderr
    try:
        raw = (stdin or sys.stdin.buffer).read()
    except BaseException as exc:
        reply = contract.failure(None, f"cannot read stdin: {exc}")
    else:
        gateway = gateway or env.get("HOOKGATE_GATEWAY_URL")
        config = config or env.get(f"HOOKGATE_{contract.name.upper()}_CONFIG")
        decide: Decide
        if gateway:
            decide = gateway_decider(gateway, env.get("HOOKGATE_API_KEY"))
        elif config:
            decide = local_decider(config, env)
        else:
            decide = _no_policy(contract.name)
        reply = answer(contract, raw, decide, StopCounter(contract.name, env))
    return print_reply(reply, out, err)


def _no_policy(agent: str) -> Decide:
    def decide(event: str, payload: dict[str, Any]) -> Outcome:
        raise RuntimeError(f"hookgate {agent} needs --config FILE or --gateway URL")

    return decide


def print_reply(reply: BridgeReply, out: IO[str], err: IO[str]) -> int:
    """Write the reply as the agent reads it; the exit code (always 0: the answer is the
    JSON, and both agents let the action run on any other exit)."""
    if reply.stdout is not None:
        out.write(json.dumps(reply.stdout, default=str) + "\n")
        out.flush()
    if reply.stderr:
        err.write(" ".join(reply.stderr.split()) + "\n")
        err.flush()
    return 0
