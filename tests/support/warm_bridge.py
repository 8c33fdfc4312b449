"""The warm ``hookgate claude-code`` process in tests: a socket folder of the test session
(short: a Unix socket path holds 107 bytes), and every warm process in it stopped at the end."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import tempfile
from collections.abc import Iterator
from pathlib import Path

from hookgate.integrations.claude_code import warm_wire as wire

__all__ = ["ask", "private_warm_folder", "stop_all", "warm_pids"]


def ask(sock_path: Path, kind: bytes) -> bytes:
    """A status (``Q``) or stop (``T``) request to the warm process at ``sock_path``."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(30)
        sock.connect(str(sock_path))
        sock.sendall(wire.pack(kind, []))
        chunks = []
        while chunk := sock.recv(4096):
            chunks.append(chunk)
    return b"".join(chunks)


def warm_pids(folder: Path) -> dict[Path, int]:
    """Socket → pid of each warm process answering in ``folder``."""
    found: dict[Path, int] = {}
    for sock_path in sorted(folder.glob("*.sock")):
        with contextlib.suppress(OSError):
            status = ask(sock_path, wire.STATUS).decode()
            fields = dict(line.split(": ", 1) for line in status.splitlines() if ": " in line)
            found[sock_path] = int(fields["pid"])
    return found


def stop_all(folder: Path) -> None:
    for pid in warm_pids(folder).values():
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGTERM)


@contextlib.contextmanager
def private_warm_folder() -> Iterator[Path]:
    folder = Path(tempfile.mkdtemp(prefix="hgw-", dir="/tmp"))
    old = os.environ.get("HOOKGATE_CLAUDE_CODE_WARM_DIR")
    os.environ["HOOKGATE_CLAUDE_CODE_WARM_DIR"] = str(folder)
    try:
        yield folder
    finally:
        if old is None:
            os.environ.pop("HOOKGATE_CLAUDE_CODE_WARM_DIR", None)
        else:
            os.environ["HOOKGATE_CLAUDE_CODE_WARM_DIR"] = old
        stop_all(folder)
        shutil.rmtree(folder, ignore_errors=True)
