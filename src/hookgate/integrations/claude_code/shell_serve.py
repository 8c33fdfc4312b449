"""The warm process's end of a ``relay.bash`` connection, shared by its two kinds of worker:
the resident (:mod:`.resident`, events answered in place) and the forked worker
(:mod:`.warm`, one event per fork). See :mod:`.shell_relay` for the protocol.
"""

from __future__ import annotations

import hmac
import io
import os
import socket
import sys
from typing import Final

from hookgate.integrations.claude_code import shell_relay
from hookgate.integrations.claude_code import warm_wire as wire
from hookgate.integrations.claude_code.in_place import read_whole
from hookgate.integrations.claude_code.startup import BridgeArgs
from hookgate.integrations.claude_code.warm_place import peer_of

__all__ = ["REFUSED", "answer_bytes", "process_of", "read_request", "run_event"]

#: Nothing ran: the relay hands the event to the Python relay.
REFUSED: Final = b"R\0"
#: How long a relay may take to send its request.
REQUEST_TIMEOUT_S: Final = 5.0


def read_request(
    conn: socket.socket,
    endpoint: shell_relay.Endpoint,
    local: tuple[str, int] | None = None,
    peer: tuple[str, int] | None = None,
) -> tuple[shell_relay.ShellRequest, bytes] | None:
    """The relay's request and its bytes, once the peer is this user's and the tokens are
    exchanged; ``None`` (say nothing more, close) otherwise. Raises on a broken connection.
    ``local``, ``peer``: a TCP connection's two ends when the caller knows them. On the Unix
    socket the kernel names the relay's process, and the request must name the same."""
    if conn.family == socket.AF_UNIX:
        found = peer_of(conn)
        if found.uid != os.getuid():
            return None
        relay_pid: int | None = found.pid
    else:
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        ends = (local or conn.getsockname(), peer or conn.getpeername())
        if shell_relay.loopback_peer_uid(*ends) != os.getuid():
            return None  # another user: not a word, not even the server token
        relay_pid = None
    conn.settimeout(REQUEST_TIMEOUT_S)
    conn.sendall(endpoint.server_token.encode() + b"\n")
    data = bytearray()
    request = None
    while request is None:
        chunk = conn.recv(1 << 16)
        if not chunk or len(data) > wire.MAX_BODY:
            return None
        data += chunk
        if b"\0" in chunk:
            request = shell_relay.parse_request(bytes(data))
    if not token_matches(request, endpoint):
        return None
    if relay_pid is not None and request.pid != relay_pid:
        return None  # it names a process other than its own
    return request, bytes(data)


def token_matches(request: shell_relay.ShellRequest, endpoint: shell_relay.Endpoint) -> bool:
    return hmac.compare_digest(request.client_token, endpoint.client_token.encode())


def process_of(proc: str) -> tuple[dict[str, str], int] | None:
    """The environment and umask of the relay's process (``/proc/<pid>``), if it is ours.
    Read with plain system calls, no buffered file: on every event, each call counts."""
    if os.stat(proc).st_uid != os.getuid():
        return None
    raw_env = read_whole(f"{proc}/environ")
    umask = None
    for line in read_whole(f"{proc}/status").split(b"\n"):
        if line.startswith(b"Umask:"):
            umask = int(line.split()[1], 8)
            break
    if umask is None:
        return None
    environ = {}
    # decoded once, as os.fsdecode would decode each name and value
    text = raw_env.decode(sys.getfilesystemencoding(), sys.getfilesystemencodeerrors())
    for entry in text.split("\0"):
        name, sep, value = entry.partition("=")
        if sep:
            environ[name] = value
    return environ, umask


def run_event(
    agent: str,
    args: BridgeArgs,
    raw: bytes,
    out: io.StringIO,
    err: io.StringIO,
    environ: dict[str, str] | None = None,
) -> int:
    """The event as ``hookgate AGENT OPTIONS`` answers it (``environ``: the relay's; default
    this process's)."""
    if agent == "claude-code":
        from hookgate.integrations.claude_code.main import run

        return run(args, raw, stdout=out, stderr=err, environ=environ)
    from hookgate.integrations.agent_bridge import contract_for
    from hookgate.integrations.agent_bridge import main as bridge_main

    return bridge_main(
        contract_for(agent),
        args.config,
        args.gateway,
        stdin=io.BytesIO(raw),
        stdout=out,
        stderr=err,
        environ=environ,
    )


def answer_bytes(code: int, out: io.StringIO, err: io.StringIO) -> bytes:
    """The ``X`` answer: the exit code, stdout and stderr (bash cannot hold a NUL byte)."""

    def text(stream: io.StringIO) -> bytes:
        return stream.getvalue().encode("utf-8", "surrogateescape").replace(b"\0", b"")

    return b"X\0%d\0%s\0%s\0" % (code & 0xFF, text(out), text(err))
