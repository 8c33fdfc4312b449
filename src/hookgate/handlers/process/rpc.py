"""One long-lived hook process spoken to in JSON-RPC 2.0, one message per line.

:class:`HookProcess` starts the child on first use (``hook.hello`` handshake with a
deadline), multiplexes concurrent calls by id, and watches it:

* writes are serialised through one writer: a message is handed whole to the pipe
  transport when nothing is queued, otherwise queued for the writer task, which owns
  waiting on a full pipe (``drain``); messages are never interleaved or reordered;
* stdout is split into lines as it arrives: a line over 1 MiB is dropped (and counted), a
  line that is not JSON-RPC is counted and skipped, so nothing can wedge the reader;
* stderr is drained continuously (its last lines are kept for the status and errors);
* when the child dies, every pending call fails at once with the exit status, and the child
  is restarted after a back-off (0.2 s doubling to 30 s, reset once it stayed up 10 s);
* :meth:`aclose` closes stdin (PicoClaw's shutdown signal), waits 2 s, then kills the group;
  a start or restart under way is cancelled and waited for, so no child outlives it.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import itertools
import json
import re
import time
from collections.abc import Coroutine, Sequence
from typing import Any, Final

import orjson

from hookgate.audit import redact
from hookgate.errors import HookgateError
from hookgate.handlers.process.spec import ProcessSpec
from hookgate.handlers.subprocess.runner import CHUNK, base_environment, kill_group, shorten, spawn
from hookgate.log import log_event
from hookgate.outcome import HookError
from hookgate.sandbox import NO_SANDBOX, Sandbox

__all__ = ["CLOSED_STATES", "MAX_LINE", "HookProcess", "RpcError"]

MAX_LINE: Final = 1024 * 1024
MAX_STDERR_LINE: Final = 8 * 1024
#: The states of a process that takes no more calls.
CLOSED_STATES: Final = ("closing", "closed")
BACKOFF_INITIAL_S: Final = 0.2
BACKOFF_MAX_S: Final = 30.0
STABLE_AFTER_S: Final = 10.0
SHUTDOWN_GRACE_S: Final = 2.0
#: Bytes waiting in the stdin pipe transport above which the writer task drains it.
WRITE_BUFFER_HIGH: Final = 64 * 1024
_TAIL_LINES: Final = 20


class RpcError(HookgateError):
    """The hook answered a call with a JSON-RPC error object."""

    def __init__(self, code: Any, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


class HookProcess:
    """A hook child process and the JSON-RPC channel to it. Bound to one event loop."""

    def __init__(
        self,
        spec: ProcessSpec,
        *,
        label: str,
        modes: Sequence[str],
        sandbox: Sandbox = NO_SANDBOX,
    ) -> None:
        self.spec = spec
        self.sandbox = sandbox
        self.label = label
        self.modes = tuple(modes)
        self.loop = asyncio.get_running_loop()
        self.state = "stopped"  # stopped | starting | running | restarting | closing | closed
        self.pid: int | None = None
        self.restarts = 0
        self.last_error: str | None = None
        self.hello: Any = None
        self.dropped_lines = 0
        self.bad_lines = 0
        self.late_replies = 0
        self.stderr_tail: collections.deque[str] = collections.deque(maxlen=_TAIL_LINES)
        self._proc: asyncio.subprocess.Process | None = None
        self._pending: dict[int, asyncio.Future[Any]] = {}
        self._ids = itertools.count(1)
        self._outbox: asyncio.Queue[tuple[bytes, asyncio.Future[None] | None]] = asyncio.Queue()
        self._stdin: asyncio.StreamWriter | None = None
        self._writer_busy = False
        self._line = bytearray()
        self._skipping = False  # inside a stdout line that went over MAX_LINE
        self._stdout_done: asyncio.Future[None] | None = None
        self._shutdown: asyncio.Task[None] | None = None
        self._tasks: list[asyncio.Task[None]] = []
        self._starting: asyncio.Task[None] | None = None
        self._restart: asyncio.Task[None] | None = None
        self._backoff = BACKOFF_INITIAL_S
        self._started_at = 0.0
        self._next_start_at = 0.0

    # -- public API -----------------------------------------------------------------------

    @property
    def closed(self) -> bool:
        return self.state in CLOSED_STATES

    def call(self, method: str, params: Any) -> Coroutine[Any, Any, Any]:
        """Send a request and wait for its answer; RpcError for an error answer.

        A plain method handing back the request's own coroutine while the process runs (one
        coroutine frame less per call); otherwise one that starts it first."""
        if self.state == "running":
            return self._request(method, params)
        return self._call_when_ready(method, params)

    async def _call_when_ready(self, method: str, params: Any) -> Any:
        await self._ready()
        return await self._request(method, params)

    async def notify(self, method: str, params: Any) -> None:
        """Send a notification (no id, no answer) and wait until it is written."""
        await self._ready()
        written: asyncio.Future[None] = self.loop.create_future()
        self._send(_encode({"jsonrpc": "2.0", "method": method, "params": params}), written)
        await written

    def status(self) -> dict[str, Any]:
        now = time.monotonic()
        return {
            "state": self.state,
            "pid": self.pid,
            "restarts": self.restarts,
            "last_error": self.last_error,
            "uptime_s": round(now - self._started_at, 3) if self.state == "running" else None,
            "next_restart_in_s": (
                round(max(0.0, self._next_start_at - now), 3)
                if self.state == "restarting"
                else None
            ),
            "pending": len(self._pending),
            "modes": list(self.modes),
            "command": list(self.spec.command),
            "stderr_tail": list(self.stderr_tail),
            "dropped_lines": self.dropped_lines,
            "bad_lines": self.bad_lines,
            "late_replies": self.late_replies,
        }

    async def aclose(self) -> None:
        """Close stdin, give the child ``SHUTDOWN_GRACE_S`` to exit, then kill its group.

        Callers at the same time (the handler's own close and a retired version's
        ``close_soon``) share one shutdown and all return when it is done."""
        if self.state == "closed":
            return
        if self._shutdown is None:
            self._shutdown = asyncio.ensure_future(self._close())
        await asyncio.shield(self._shutdown)

    async def _close(self) -> None:
        self.state = "closing"
        # Cancelled and waited for: a start cancelled inside spawn kills its child and waits
        # for the exit, which must happen before the engine (and its loop) is gone.
        starts = [task for task in (self._restart, self._starting) if task is not None]
        for task in starts:
            task.cancel()
        await asyncio.gather(*starts, return_exceptions=True)
        proc = self._proc
        if proc is not None:
            if proc.returncode is None and proc.stdin is not None:
                proc.stdin.close()
                try:
                    async with asyncio.timeout(SHUTDOWN_GRACE_S):
                        await proc.wait()
                except TimeoutError:
                    pass
            kill_group(proc.pid)
            await proc.wait()
        self._fail_pending(f"process hook {self.label!r} was closed")
        await self._stop_tasks()
        self.state = "closed"

    def close_soon(self) -> None:
        """Close from any thread or loop: politely on its own loop, else by killing it."""
        if self.closed:
            return
        if not self.loop.is_closed() and self.loop.is_running():
            self.loop.call_soon_threadsafe(lambda: self.loop.create_task(self.aclose()))
            return
        self.state = "closed"
        kill_group(self.pid)

    # -- start and restart ----------------------------------------------------------------

    async def _ready(self) -> None:
        if self.state == "running":
            return
        if self.closed:
            raise HookError(f"process hook {self.label!r} is closed")
        if self.state == "restarting":
            wait = max(0.0, self._next_start_at - time.monotonic())
            raise HookError(
                f"process hook {self.label!r} is restarting ({self.last_error}); "
                f"next start in {wait:.1f} s",
                details=self.status(),
            )
        if self._starting is None:
            self.state = "starting"  # at once: a restart is never seen as "stopped"
            self._starting = self.loop.create_task(self._start())
        # Shielded: a caller's timeout must not abort a start other calls are waiting for.
        try:
            await asyncio.shield(self._starting)
        except asyncio.CancelledError:
            caller = asyncio.current_task()
            closed = self.state in ("closing", "closed")  # (changed while we waited)
            if closed and caller is not None and not caller.cancelling():
                # The close cancelled the start, not the caller: the call fails (a blocking
                # event blocks) instead of cancelling the agent's task.
                raise HookError(f"process hook {self.label!r} was closed") from None
            raise

    async def _start(self) -> None:
        self.state = "starting"
        spec = self.spec
        try:
            try:
                proc, exited = await spawn(
                    *self.sandbox.wrap(spec.command, spec.dir),
                    on_stdout=self._on_stdout,
                    cwd=spec.dir,
                    env=base_environment(spec.allowed_env_vars, dict(spec.env)),
                    process_group=0,
                )
            except OSError as exc:
                raise HookError(f"cannot start {spec.command[0]!r}: {exc}") from None
            self._proc = proc
            self.pid = proc.pid
            self._ids = itertools.count(1)
            self._outbox = asyncio.Queue()
            self._writer_busy = False
            self._line.clear()
            self._skipping = False
            self._stdout_done = self.loop.create_future()
            assert proc.stdin is not None and proc.stderr is not None
            self._stdin = proc.stdin
            self._tasks = [
                self.loop.create_task(self._write_loop(proc.stdin)),
                self.loop.create_task(self._read_stderr(proc.stderr)),
                self.loop.create_task(self._watch(proc, exited)),
            ]
            params = {"name": spec.name or self.label, "version": 1, "modes": list(self.modes)}
            try:
                async with asyncio.timeout(spec.hello_timeout_s):
                    hello = await self._request("hook.hello", params)
            except TimeoutError:
                raise HookError(
                    f"no answer to hook.hello within {spec.hello_timeout_s:g} s"
                ) from None
            except RpcError as exc:
                raise HookError(f"hook.hello failed: {exc.message}") from None
            if not isinstance(hello, dict) or hello.get("ok") is False:
                raise HookError(f"hook.hello was refused: {shorten(repr(hello), 300)}")
            self.hello = hello
            self.state = "running"
            self._started_at = time.monotonic()
            log_event("hookgate.process.started", level=20, hook=self.label, pid=proc.pid)
        except HookError as exc:
            message = f"process hook {self.label!r} failed to start: {exc}"
            self._died(message)
            raise HookError(message, details=self.status()) from None
        finally:
            self._starting = None

    def _died(self, message: str) -> None:
        """The child is gone or unusable: fail what waits on it, plan a restart."""
        if self.closed:
            return
        kill_group(self.pid)
        self.last_error = message
        self._fail_pending(message)
        if self._started_at and time.monotonic() - self._started_at >= STABLE_AFTER_S:
            self._backoff = BACKOFF_INITIAL_S
        self._started_at = 0.0
        self.state = "restarting"
        if self._restart is None:
            delay = self._backoff
            self._backoff = min(self._backoff * 2, BACKOFF_MAX_S)
            self._next_start_at = time.monotonic() + delay
            self._restart = self.loop.create_task(self._restart_after(delay))
        log_event("hookgate.process.died", hook=self.label, error=message)

    async def _restart_after(self, delay: float) -> None:
        await asyncio.sleep(delay)
        await self._stop_tasks()
        # No await from here to the new start: a close that began while the old tasks
        # stopped is seen, and one that begins later cancels the start (which reaps).
        self._restart = None
        if self.closed:
            return
        self.restarts += 1
        self.state = "stopped"
        with contextlib.suppress(HookError):  # a failed start plans the next attempt
            await self._ready()

    async def _stop_tasks(self) -> None:
        current = asyncio.current_task()
        tasks = [task for task in self._tasks if task is not current]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        self._tasks = []

    # -- the channel ----------------------------------------------------------------------

    async def _request(self, method: str, params: Any) -> Any:
        message_id = next(self._ids)
        future: asyncio.Future[Any] = self.loop.create_future()
        self._pending[message_id] = future
        message = {"jsonrpc": "2.0", "id": message_id, "method": method, "params": params}
        self._send(_encode(message), None)
        try:
            return await future
        finally:
            self._pending.pop(message_id, None)

    def _fail_pending(self, message: str) -> None:
        """Fail every call waiting for an answer and every message not yet written."""
        pending, self._pending = self._pending, {}
        for future in pending.values():
            if not future.done():
                future.set_exception(HookError(message))
        self._stdin = None  # later messages queue until a new process takes them
        while not self._outbox.empty():
            _, written = self._outbox.get_nowait()
            if written is not None and not written.done():
                written.set_exception(HookError(message))

    def _send(self, data: bytes, written: asyncio.Future[None] | None) -> None:
        """Hand a message to the one writer, keeping the order messages were sent in."""
        stdin = self._stdin
        if stdin is None or self._writer_busy or not self._outbox.empty():
            self._outbox.put_nowait((data, written))
            return
        # Nothing waits before this message: the transport takes it whole, in order.
        try:
            stdin.write(data)
        except (BrokenPipeError, ConnectionResetError, RuntimeError) as exc:
            if written is not None and not written.done():
                written.set_exception(HookError(f"cannot write to the hook: {exc}"))
            return
        if written is not None and not written.done():
            written.set_result(None)
        transport = stdin.transport
        if transport.get_write_buffer_size() > WRITE_BUFFER_HIGH:
            self._outbox.put_nowait((b"", None))  # let the writer wait for the pipe

    async def _write_loop(self, stdin: asyncio.StreamWriter) -> None:
        outbox = self._outbox
        while True:
            data, written = await outbox.get()
            self._writer_busy = True
            batch = [data]
            done = [written]
            while not outbox.empty():  # write what queued up meanwhile in one go
                data, written = outbox.get_nowait()
                batch.append(data)
                done.append(written)
            try:
                stdin.write(b"".join(batch) if len(batch) > 1 else batch[0])
                await stdin.drain()
            except (BrokenPipeError, ConnectionResetError, RuntimeError) as exc:
                for future in done:
                    if future is not None and not future.done():
                        future.set_exception(HookError(f"cannot write to the hook: {exc}"))
                return  # _watch reports the exit
            finally:
                self._writer_busy = False
            for future in done:
                if future is not None and not future.done():
                    future.set_result(None)

    def _on_stdout(self, chunk: bytes) -> None:
        """Split stdout into lines as it arrives; ``b""`` is EOF."""
        if not chunk:
            if self._stdout_done is not None and not self._stdout_done.done():
                self._stdout_done.set_result(None)
            if self.state in ("running", "starting") and self.pid is not None:
                # stdout closed while the process lives on: it can no longer answer.
                kill_group(self.pid)
            return
        buffer = self._line
        end = len(chunk) - 1
        if not buffer and not self._skipping and chunk.find(b"\n") == end and end <= MAX_LINE:
            # One whole line, as answers mostly come: no splitting.
            self._on_line(chunk[:end])
            return
        start = 0
        while True:
            end = chunk.find(b"\n", start)
            if end < 0:
                if not self._skipping:
                    buffer += chunk[start:]
                    if len(buffer) > MAX_LINE:
                        self._oversized()
                        buffer.clear()
                        self._skipping = True
                return
            if self._skipping:
                self._skipping = False
            elif buffer:
                buffer += chunk[start:end]
                line = bytes(buffer)
                buffer.clear()
                if len(line) > MAX_LINE:
                    self._oversized()
                else:
                    self._on_line(line)
            elif end - start > MAX_LINE:
                self._oversized()
            else:
                self._on_line(chunk[start:end])
            start = end + 1

    def _oversized(self) -> None:
        self.dropped_lines += 1
        log_event("hookgate.process.line_dropped", hook=self.label, limit=MAX_LINE)

    def _on_line(self, line: bytes) -> None:
        if not line or line.isspace():  # (bytes.isspace: the whitespace strip() drops)
            return
        try:
            message = _decode(line)
        except ValueError:
            self.bad_lines += 1
            log_event(
                "hookgate.process.bad_line",
                hook=self.label,
                line=shorten(line.decode("utf-8", "replace"), 200),
            )
            return
        if not isinstance(message, dict) or "method" in message:
            # Not an answer: a hook cannot call the host (as in PicoClaw), so it is skipped.
            self.bad_lines += 1
            return
        message_id = message.get("id")
        if type(message_id) is not int:  # (JSON's integers are exactly int; true is a bool)
            self.bad_lines += 1
            return
        future = self._pending.pop(message_id, None)
        if future is None or future.done():
            self.late_replies += 1
            return
        error = message.get("error")
        if error is not None:
            if isinstance(error, dict):
                text = error.get("message")
                future.set_exception(
                    RpcError(error.get("code"), text if isinstance(text, str) else repr(error))
                )
            else:
                future.set_exception(RpcError(None, repr(error)))
        else:
            future.set_result(message.get("result"))

    async def _read_stderr(self, stderr: asyncio.StreamReader) -> None:
        partial = b""
        while True:
            chunk = await stderr.read(CHUNK)
            if not chunk:
                break
            lines = (partial + chunk).split(b"\n")
            partial = lines.pop()
            if len(partial) > MAX_STDERR_LINE:
                lines.append(partial)
                partial = b""
            for raw in lines:
                text = raw.decode("utf-8", "replace").rstrip()
                if text:
                    # Logged and kept for errors: secrets are scrubbed from the whole line first.
                    text = shorten(redact(text), 500)
                    self.stderr_tail.append(text)
                    log_event("hookgate.process.stderr", level=20, hook=self.label, line=text)

    async def _watch(self, proc: asyncio.subprocess.Process, exited: asyncio.Future[int]) -> None:
        code = await exited
        if self.state not in ("running", "starting"):
            return  # closing, or a failed start already reported why
        kill_group(proc.pid)  # leftovers that still hold our pipes
        # Let the readers deliver what the child wrote before it died.
        pending: list[asyncio.Future[Any]] = [t for t in self._tasks[1:2] if not t.done()]
        if self._stdout_done is not None and not self._stdout_done.done():
            pending.append(self._stdout_done)
        if pending:
            await asyncio.wait(pending, timeout=1.0)
        last = self.stderr_tail[-1] if self.stderr_tail else ""
        status = f"signal {-code}" if code < 0 else f"status {code}"
        self._died(
            f"process hook {self.label!r} exited with {status}" + (f": {last}" if last else "")
        )


# -- the wire format ------------------------------------------------------------------------
# Once per call each way, on the path the agent waits on: the standard library's encoder
# costs ~47k instructions for a before_tool request and json.loads ~23k for its answer
# (bench/bench_process.py, callgrind), most of a round trip's own work.

_ENCODER: Final = json.JSONEncoder(default=str, separators=(",", ":"))
_ORJSON_OPTIONS: Final = (
    orjson.OPT_APPEND_NEWLINE
    | orjson.OPT_NON_STR_KEYS
    | orjson.OPT_PASSTHROUGH_DATACLASS
    | orjson.OPT_PASSTHROUGH_DATETIME
)


def _default(value: Any) -> Any:
    """What is not JSON, as the standard encoder with ``default=str`` writes it."""
    if isinstance(value, tuple):  # a named tuple: its items, as json writes any tuple
        return list(value)
    return str(value)


def _encode(message: dict[str, Any]) -> bytes:
    """One message as a line: orjson (~9k instructions), and the standard encoder for what
    orjson would write otherwise (non-ASCII text, which json escapes) or refuses (integers
    over 64 bits, lone surrogates), so those lines are the bytes they always were."""
    try:
        line = orjson.dumps(message, default=_default, option=_ORJSON_OPTIONS)
    except orjson.JSONEncodeError:
        line = b""
    if line.isascii() and line:
        return line
    return _ENCODER.encode(message).encode() + b"\n"


#: A run of 19 digits: an integer orjson would read as a float (past 64 bits), or a number
#: too long to leave to anything but json.
_LONG_NUMBER: Final = re.compile(rb"\d{19}").search


def _decode(line: bytes) -> Any:
    """``json.loads(line)``; ValueError if it is not JSON. A line that opens an object (every
    answer) goes to orjson (~4k instructions instead of json.loads' ~23k), which reads it as
    json does: what orjson would read otherwise (19 digits and more) or refuses (NaN, lone
    surrogates, a BOM) goes to json.loads, for the same value or the same error."""
    if line[:1] == b"{" and line[1:2] != b"\0" and _LONG_NUMBER(line) is None:
        # ("{\0" is UTF-16 to json.loads)
        try:
            return orjson.loads(line)
        except orjson.JSONDecodeError:
            pass
    return json.loads(line)
