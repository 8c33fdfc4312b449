"""The process handler's wire format: the fast encoder and decoder write and read what the
standard library's ``json`` does (``rpc._encode`` / ``rpc._decode``)."""

from __future__ import annotations

import collections
import datetime
import json
import uuid
from typing import Any

import pytest

from hookgate.handlers.process import rpc

_STANDARD = json.JSONEncoder(default=str, separators=(",", ":"))
Point = collections.namedtuple("Point", "x y")


def _standard_line(message: Any) -> bytes:
    return _STANDARD.encode(message).encode() + b"\n"


@pytest.mark.parametrize(
    "params",
    [
        {"tool": "exec", "arguments": {"cmd": "ls -la /tmp", "timeout": 30}},
        {"nested": [1, 2.5, -0.0, 1e20, True, None, {"a": [[]]}]},
        {"text": 'line\nbreak "quoted" back\\slash \t tab \x01 control'},
        {1: "int key", None: "none key", 2.5: "float key"},
        {"tuple": (1, 2), "named": Point(3, 4), "set": {7}},
        {"when": datetime.datetime(2026, 1, 2, 3, 4, 5), "id": uuid.UUID(int=5)},
        {"bytes": b"raw"},
    ],
)
def test_lines_are_the_bytes_the_standard_encoder_writes(params: dict[Any, Any]) -> None:
    """ASCII messages (the common case) come out of orjson byte for byte as json wrote them."""
    message = {"jsonrpc": "2.0", "id": 3, "method": "hook.before_tool", "params": params}
    assert rpc._encode(message) == _standard_line(message)


@pytest.mark.parametrize(
    "params",
    [
        {"text": "café ☕ \u2028 separator"},  # json escapes it: \u00e9 …
        {"big": 2**70},  # orjson refuses integers over 64 bits
        {"lone": "\ud800"},  # and lone surrogates
    ],
)
def test_what_orjson_writes_otherwise_goes_through_the_standard_encoder(
    params: dict[str, Any],
) -> None:
    """Non-ASCII text stays escaped, and what orjson refuses is still written."""
    message = {"jsonrpc": "2.0", "id": 3, "method": "hook.before_tool", "params": params}
    line = rpc._encode(message)
    assert line == _standard_line(message)
    assert line.isascii()


@pytest.mark.parametrize(
    "line",
    [
        b'{"jsonrpc":"2.0","id":7,"result":{"action":"continue"}}',
        b'{"id": 1, "result": {"n": 123456789012345678901234567890, "f": NaN}}  \r',
        b'{"id":1,"result":"caf\\u00e9 \xe2\x98\x95"}',
        b'{"id":1,"result":{"n":123456789012345678,"m":-9223372036854775808,"f":0.1}}',
        b'{"id":1,"result":{"f":0.12345678901234567890123,"s":"12345678901234567890"}}',
        b'{"id":1,"result":{"big":1e400,"tiny":5e-324,"neg":-0.0,"e":1E+2}}',
        b'{"id":1,"result":"\\ud800 lone"}',
        b'{"id":1,"result":"raw\ttab"}',
        b'{"a": x}',
        b'{"a": [1,',
        b"{",
        b'{"a":1} trailing',
        b'{"a":1}\xc2\xa0',
        b'{"a":1}\xff',
        b'{\x00"\x00',
        b"[1, 2]",
        b"\xef\xbb\xbf{}",
        b"42",
    ],
)
def test_lines_are_read_as_json_loads_reads_them(line: bytes) -> None:
    """Same value, or the same kind of error (a ValueError: the line is counted as bad)."""
    try:
        expected: Any = json.loads(line)
    except ValueError as exc:
        with pytest.raises(ValueError) as caught:
            rpc._decode(line)
        assert type(caught.value) is type(exc)
        assert str(caught.value) == str(exc)
        return
    assert repr(rpc._decode(line)) == repr(expected)
