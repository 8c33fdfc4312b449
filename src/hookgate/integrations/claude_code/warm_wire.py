"""The warm process's wire format, both ends (imports nothing: the relay runs it per event).

A request is ``HGW1``, a kind byte (``E`` an event, ``Q`` status, ``T`` stop, ``H`` a hand-over
from the resident), a 4-byte
big-endian length and that many bytes of items, each a 4-byte length and its bytes. An
event's items: the warm process's key, ``-`` or ``+`` and the ``--config`` path, the working
directory, the environment (``NAME=value`` separated by NUL), the encoding and error handler
of stdout and of stderr, the umask (octal) and stdin; then, for another agent than Claude
Code, its name (``codex``, ``gemini``). It carries the relay's stdout and
stderr as file descriptors (``SCM_RIGHTS``): the worker writes its answer straight into
Claude Code's pipes, as the relay would.

The replies are single bytes: ``R`` refused (nothing ran: the relay answers the event
itself), ``S`` the worker holds the event; the relay then commits with ``G`` (before it, the
worker runs nothing, so a relay that gave up never leaves a half-run event behind), and the
worker ends with ``X`` and the exit code. Anything else, or the connection closing after
``G`` without ``X``, is a failure of hookgate on that event (the hooks may have run: never
run them again).
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Final

__all__ = [
    "COMMIT",
    "DONE",
    "EVENT",
    "HAND_OFF",
    "MAGIC",
    "REFUSED",
    "STARTED",
    "STATUS",
    "STOP",
    "pack",
    "unpack",
]

MAGIC: Final = b"HGW1"
EVENT: Final = b"E"
STATUS: Final = b"Q"
STOP: Final = b"T"
#: From the warm process's resident (:mod:`.resident`): a ``relay.bash`` connection (its
#: descriptor) and the request read from it, for a forked worker to answer.
HAND_OFF: Final = b"H"
REFUSED: Final = b"R"
STARTED: Final = b"S"
COMMIT: Final = b"G"
DONE: Final = b"X"
#: The largest request body: Claude Code's input is limited to 8 MiB by the engine anyway.
MAX_BODY: Final = 64 * 1024 * 1024


def pack(kind: bytes, items: Sequence[bytes]) -> bytes:
    body = b"".join(len(item).to_bytes(4, "big") + item for item in items)
    return MAGIC + kind + len(body).to_bytes(4, "big") + body


def unpack(body: bytes) -> list[bytes]:
    """The items of a request body; ``ValueError`` when it is not one."""
    items: list[bytes] = []
    index = 0
    while index < len(body):
        if index + 4 > len(body):
            raise ValueError("truncated item length")
        size = int.from_bytes(body[index:index + 4], "big")
        index += 4
        if index + size > len(body):
            raise ValueError("truncated item")
        items.append(body[index:index + size])
        index += size
    return items
