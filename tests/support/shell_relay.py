"""The shell relay (``relay.bash``) in tests: run it as the agents do (``/bin/sh -c`` with the
installed command, the event's JSON on stdin), and a listener that stands where the warm
process should be and misbehaves on purpose (an impostor, a warm process that breaks)."""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hookgate.integrations.claude_code import shell_relay

HOOKGATE = str(Path(sys.executable).parent / "hookgate")
#: The compiled relay the commands of :func:`relay_command` run, or ``None`` for relay.bash
#: alone (the ``relay`` fixture sets it, so the relay tests run once with each).
RELAY_BINARY: str | None = None

#: Claude Code's PreToolUse input for ``ls``: the event the relay tests hand over.
BASH_LS_EVENT: dict[str, Any] = {
    "session_id": "s",
    "cwd": "/tmp",
    "hook_event_name": "PreToolUse",
    "tool_name": "Bash",
    "tool_input": {"command": "ls"},
    "tool_use_id": "t1",
}


def callable_hooks_file(folder: Path, target: str) -> Path:
    """``folder/hookgate.json`` with one ``pre_tool_use`` callable hook named ``py`` calling
    ``target`` (``module:function``; the module is the caller's to write)."""
    path = folder / "hookgate.json"
    hook = {"name": "py", "event": "pre_tool_use", "handler_type": "callable",
            "config": {"callable": target}}
    path.write_text(json.dumps({"hooks": [hook]}))
    return path

#: What a fake listener does with a connection.
Behaviour = Callable[["FakeWarm", socket.socket], None]


def relay_command(agent: str, hooks: Path | None = None, *, limit_s: int = 30,
                  gateway: str | None = None, folder: Path | None = None) -> str:
    """The command ``hookgate <agent> install`` writes (``limit_s``: the agent's timeout;
    ``folder``: the warm folder, default this environment's), with :data:`RELAY_BINARY`."""
    options = (["--gateway", gateway] if gateway
               else ["--config", str(hooks)] if hooks else [])
    return shell_relay.relay_command(HOOKGATE, agent, options, limit_s,
                                     None if folder is None else str(folder), RELAY_BINARY)


def built_relay() -> str:
    """The compiled relay, built as ``install`` builds it (beside relay.bash, once per source).
    A machine without a C compiler fails here, under CI too: never a skip."""
    from hookgate.integrations.claude_code import compiled_relay

    binary = compiled_relay.build()
    assert binary is not None, "the compiled relay cannot be built (is a C compiler installed?)"
    return binary


def run_relay(command: str, data: Mapping[str, Any] | str, *, cwd: Path | None = None,
              timeout_s: float = 60, **env: str) -> subprocess.CompletedProcess[str]:
    """The hook command as an agent runs it: a shell with the command, JSON on stdin."""
    text = data if isinstance(data, str) else json.dumps(data)
    return subprocess.run(["/bin/sh", "-c", command], input=text, capture_output=True,
                          text=True, timeout=timeout_s, check=False, cwd=cwd,
                          env={**os.environ, **env})


def endpoint_file(folder: Path) -> Path:
    return Path(shell_relay.endpoint_path(str(folder)))


@dataclass
class FakeWarm:
    """A loopback listener with an endpoint file of its own in ``folder``: the relay finds it
    where the warm process's would be. ``behaviour`` runs on each connection; ``received``
    holds every byte any connection sent, ``connections`` counts them. ``unix``: it listens
    on the compiled relay's Unix socket instead (the endpoint's port is one nobody listens
    on)."""

    folder: Path
    behaviour: Behaviour
    unix: bool = False
    endpoint: shell_relay.Endpoint = field(init=False)
    received: bytearray = field(default_factory=bytearray)
    connections: int = 0

    def __post_init__(self) -> None:
        if self.unix:
            self._listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            self._listener.bind(str(self.unix_path))
            port = free_port()
        else:
            self._listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            self._listener.bind(("127.0.0.1", 0))
            port = self._listener.getsockname()[1]
        self._listener.listen(8)
        self.endpoint = shell_relay.new_endpoint(port)
        self._thread = threading.Thread(target=self._serve, daemon=True)

    @property
    def unix_path(self) -> Path:
        return Path(shell_relay.unix_path(str(endpoint_file(self.folder))))

    def write_endpoint(self, path: Path | None = None) -> Path:
        target = path or endpoint_file(self.folder)
        target.write_text(self.endpoint.line())
        target.chmod(0o600)
        return target

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self._listener.accept()
            except OSError:
                return
            self.connections += 1
            with conn:
                conn.settimeout(30)
                with contextlib.suppress(OSError):
                    self.behaviour(self, conn)

    def read_request(self, conn: socket.socket) -> bytes:
        """Everything up to the request's last NUL (the end of the input)."""
        data = bytearray()
        while True:
            chunk = conn.recv(65536)
            if not chunk:
                break
            data += chunk
            self.received += chunk
            with contextlib.suppress(ValueError):
                if shell_relay.parse_request(bytes(data)) is not None:
                    break
        return bytes(data)

    def drain(self, conn: socket.socket) -> None:
        """Read until the relay closes (what an impostor would learn)."""
        while chunk := conn.recv(65536):
            self.received += chunk

    @contextlib.contextmanager
    def running(self) -> Iterator[FakeWarm]:
        self._thread.start()
        try:
            yield self
        finally:
            with contextlib.suppress(OSError):
                self._listener.shutdown(socket.SHUT_RDWR)  # wakes the accept()
            self._listener.close()
            self._thread.join(10)


def start_warm(folder: Path, hooks: Path, event: Mapping[str, Any]) -> int:
    """The warm process, started by the Python relay as a session's first event does (the
    shell relay finds no endpoint); its pid once its shell endpoint is written."""
    from tests.support.waiting import wait_until
    from tests.support.warm_bridge import warm_pids

    run_relay(relay_command("claude-code", hooks), event, HOOKGATE_CLAUDE_CODE_WARM="on")
    wait_until(lambda: endpoint_file(folder).exists() and warm_pids(folder),
               "the warm process writes its endpoint", 60)
    (_, pid), = warm_pids(folder).items()
    return pid


def free_port() -> int:
    """A loopback port nobody listens on (bound, then closed)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


def greet_then(answer: bytes | None) -> Behaviour:
    """A listener that knows the server token (a warm process that breaks after taking the
    event): it reads the request and answers ``answer``, or with ``None`` never answers."""
    def behaviour(fake: FakeWarm, conn: socket.socket) -> None:
        conn.sendall(fake.endpoint.server_token.encode() + b"\n")
        fake.read_request(conn)
        if answer is None:
            fake.drain(conn)  # until the relay gives up
        else:
            conn.sendall(answer)

    return behaviour


def impostor(fake: FakeWarm, conn: socket.socket) -> None:
    """A listener that does not know the server token: it greets wrongly and listens."""
    conn.sendall(b"0123456789abcdef0123456789abcdef\n")
    fake.drain(conn)
