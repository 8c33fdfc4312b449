"""The shell relay (``relay.bash``): the hook command that starts no Python.

The warm process (:mod:`.warm`) listens on a loopback TCP port besides its Unix socket, for
``relay.bash``, which bash alone can reach (``/dev/tcp``). This module is both ends' facts:

* **The endpoint file** ``<warm folder>/sh-<install id>`` holds the port and two random
  tokens, written 0600 by the warm process (a new port and new tokens each start) and removed
  when it ends. The install id (:func:`.warm_place.install_id`) is written into the installed
  command, so the relay needs no hashing.
* **Who may talk to whom.** TCP has no ``SO_PEERCRED``: the warm process asks the kernel
  who owns the relay's end of the connection (netlink ``sock_diag``) and says
  nothing to another user; then it speaks first, with the **server token**, so a relay never
  sends the event (or the client token) to a process that took the port after the warm
  process ended; the relay then sends the **client token**, without which nothing runs (a
  process of the same user that cannot read the folder, a sandboxed tool, gets nothing).
* **The compiled relay's socket.** Beside the port, the warm process listens on a Unix socket,
  ``<endpoint file>.unix``, which the compiled relay (``relay.c``) takes when it is there
  and its own: the kernel names the peer (``SO_PEERCRED``: its user and process, no netlink
  question), and loopback TCP's own cost per event (the handshake, the segments, the
  teardown) is gone. The tokens are exchanged on it as on the port.
* **The request**: NUL-terminated fields (the client token, the relay's pid, the agent, the
  number of options, the options, the input); the worker takes the relay's environment,
  working folder and umask from ``/proc/<pid>``, as the Unix-socket relay sends them.
  **The answer**: ``R`` (refused: nothing ran, the relay hands the event to the Python
  relay) or ``X``, the exit code, stdout and stderr, each NUL-terminated.
"""

from __future__ import annotations

import os
import secrets
import shlex
import socket
import sys
import threading
from dataclasses import dataclass
from typing import Final

from hookgate.integrations.claude_code.warm_place import folder_of, install_id

__all__ = [
    "AGENTS",
    "BASH",
    "SCRIPT",
    "Endpoint",
    "available",
    "endpoint_path",
    "hook_command",
    "loopback_peer_uid",
    "new_endpoint",
    "parse_request",
    "relay_argv",
    "relay_command",
    "unix_path",
]

BASH: Final = "/bin/bash"
SCRIPT: Final = os.path.join(os.path.dirname(os.path.abspath(__file__)), "relay.bash")
#: The agents the relay serves (its AGENT argument, as the hookgate sub-command).
AGENTS: Final = ("claude-code", "codex", "gemini")
#: Seconds left to the Python relay's failure answer between the relay's limit and the
#: agent's own hook timeout.
_MARGIN_S: Final = 5
_TOKEN_BYTES: Final = 16
#: The form of relay.bash's arguments (it refuses a command installed for another one).
_FORM: Final = "1"
#: The fields before the options: client token, pid, agent, number of options.
_HEAD_FIELDS: Final = 4
_MAX_OPTIONS: Final = 16


def available() -> bool:
    """The shell relay can serve here: Linux's ``/proc`` (the peer's owner and process) and
    bash."""
    return (sys.platform.startswith("linux") and os.path.isdir("/proc/self")
            and os.access(BASH, os.X_OK) and os.path.isfile(SCRIPT))


def endpoint_path(folder: str, ident: str | None = None) -> str:
    return os.path.join(folder, "sh-" + (ident or install_id()))


def unix_path(endpoint: str) -> str:
    """The compiled relay's Unix socket, beside the endpoint file (``relay.c`` names it so)."""
    return endpoint + ".unix"


def relay_command(executable: str, agent: str, options: list[str], timeout_s: int,
                  folder: str | None = None, binary: str | None = None) -> str:
    """The hook command: ``/bin/bash -p relay.bash 1 ID LIMIT FOLDER HOOKGATE AGENT OPTIONS``,
    quoted for a shell; it ends in ``HOOKGATE AGENT OPTIONS``, the Python relay's own command
    line. ``folder``: the warm process's (default: this environment's), written into the
    command so that an event's environment never points the relay elsewhere. ``binary``: the
    compiled relay (:mod:`.compiled_relay`) in bash's place, with the same arguments."""
    return shlex.join(relay_argv(executable, agent, options, timeout_s, folder, binary))


def relay_argv(executable: str, agent: str, options: list[str], timeout_s: int,
               folder: str | None = None, binary: str | None = None) -> list[str]:
    """:func:`relay_command` as a program and its arguments (Claude Code's exec form: no
    shell starts)."""
    limit = max(1, timeout_s - _MARGIN_S)
    where = folder or folder_of(os.environ)
    arguments = [_FORM, install_id(), str(limit), where, executable, agent, *options]
    # -p: bash takes no BASH_ENV file and no functions from the environment (an exported
    # function named like a builtin would replace it)
    return [BASH, "-p", SCRIPT, *arguments] if binary is None else [binary, *arguments]


def hook_command(executable: str, agent: str, options: list[str], timeout_s: int) -> str:
    """What ``install`` writes: the shell relay where it can serve (compiled where a C compiler
    can build it), else the Python relay (``HOOKGATE AGENT OPTIONS``)."""
    from hookgate.integrations.claude_code import compiled_relay

    if available():
        return relay_command(executable, agent, options, timeout_s,
                             binary=compiled_relay.build())
    return " ".join(shlex.quote(part) for part in (executable, agent, *options))


@dataclass(frozen=True, slots=True)
class Endpoint:
    port: int
    server_token: str
    client_token: str

    def line(self) -> str:
        return f"{self.port} {self.server_token} {self.client_token}\n"


def new_endpoint(port: int) -> Endpoint:
    return Endpoint(port, secrets.token_hex(_TOKEN_BYTES), secrets.token_hex(_TOKEN_BYTES))


def write_endpoint(path: str, endpoint: Endpoint) -> int:
    """Write the endpoint file (0600, never through a symlink: written beside and renamed
    over); its inode, so the warm process removes only its own."""
    temporary = f"{path}.{os.getpid()}.tmp"
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                 0o600)
    try:
        os.write(fd, endpoint.line().encode())
    finally:
        os.close(fd)
    os.rename(temporary, path)
    return os.lstat(path).st_ino


#: Netlink's socket-diagnostics protocol and request (linux/sock_diag.h, inet_diag.h).
_NETLINK_SOCK_DIAG: Final = 4
_SOCK_DIAG_BY_FAMILY: Final = 20
_NLM_F_REQUEST: Final = 1
_NO_COOKIE: Final = 0xFFFFFFFF
_ALL_STATES: Final = 0xFFFFFFFF
#: Where ``inet_diag_msg.idiag_uid`` is in the answer: after the netlink header (16), the
#: family, state, timer and retransmit bytes (4), the socket id (48), expires and queues (12).
_UID_OFFSET: Final = 16 + 4 + 48 + 12


def loopback_peer_uid(local: tuple[str, int], peer: tuple[str, int]) -> int | None:
    """The user owning the other end of an IPv4 loopback connection (``local`` is ours): the
    kernel's record of that socket, asked for by its exact addresses over netlink
    (``sock_diag``, what ``ss`` uses; ``/proc/net/tcp`` costs milliseconds on a busy
    machine). ``None`` when the kernel does not know it."""
    import struct

    def address(host: str) -> bytes:
        return socket.inet_aton(host).ljust(16, b"\0")

    # inet_diag_sockid of the peer's socket: its port and ours (big-endian), its address
    # and ours, any interface, no cookie.
    sockid = struct.pack("!HH16s16s", peer[1], local[1], address(peer[0]), address(local[0]))
    sockid += struct.pack("=III", 0, _NO_COOKIE, _NO_COOKIE)
    request = struct.pack("=BBBxI", socket.AF_INET, socket.IPPROTO_TCP, 0, _ALL_STATES) + sockid
    message = struct.pack("=IHHII", 16 + len(request), _SOCK_DIAG_BY_FAMILY, _NLM_F_REQUEST,
                          1, 0) + request
    netlink = _netlink_socket()
    try:
        netlink.sendto(message, (0, 0))
        answer = netlink.recv(4096)
    except OSError:
        _THREAD.netlink = None  # a fresh socket next time: no late answer is ever read
        netlink.close()
        raise
    if len(answer) < _UID_OFFSET + 4:
        return None
    _, kind = struct.unpack_from("=IH", answer)
    if kind != _SOCK_DIAG_BY_FAMILY:
        return None  # NLMSG_ERROR: no such socket
    uid: int = struct.unpack_from("=I", answer, _UID_OFFSET)[0]
    return uid


#: Each thread's netlink socket, kept: opening one per event cost five system calls more.
_THREAD = threading.local()


def _netlink_socket() -> socket.socket:
    """This thread's socket-diagnostics socket: blocking, with a 1 s receive timeout set in
    the kernel (a Python timeout would add a ``poll`` before every call)."""
    import struct

    netlink: socket.socket | None = getattr(_THREAD, "netlink", None)
    if netlink is None:
        netlink = socket.socket(socket.AF_NETLINK, socket.SOCK_DGRAM, _NETLINK_SOCK_DIAG)
        netlink.setsockopt(socket.SOL_SOCKET, socket.SO_RCVTIMEO, struct.pack("ll", 1, 0))
        _THREAD.netlink = netlink
    return netlink


@dataclass(frozen=True, slots=True)
class ShellRequest:
    client_token: bytes
    pid: int
    agent: str
    options: list[str]
    stdin: bytes


def parse_request(data: bytes) -> ShellRequest | None:
    """The request in ``data`` once complete (``None`` while more must come); ``ValueError``
    when it is not one."""
    fields = data.split(b"\0")
    if len(fields) <= _HEAD_FIELDS:
        return None
    count = int(fields[3])
    if not 0 <= count <= _MAX_OPTIONS:
        raise ValueError("too many options")
    # complete: every field NUL-terminated (the last split item is the empty rest)
    if len(fields) < _HEAD_FIELDS + count + 2:
        return None
    if len(fields) > _HEAD_FIELDS + count + 2 or fields[-1]:
        raise ValueError("data after the request")
    options = [os.fsdecode(option) for option in fields[_HEAD_FIELDS:_HEAD_FIELDS + count]]
    return ShellRequest(fields[0], int(fields[1]), fields[2].decode("ascii"), options,
                        fields[_HEAD_FIELDS + count])
