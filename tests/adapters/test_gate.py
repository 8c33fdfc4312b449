"""Gate.wants: the adapters' no-hook fast path."""

from __future__ import annotations

import re
from pathlib import Path

from tests.adapters.support import closed_port

from hookgate import Engine
from hookgate.adapters import Gate
from hookgate.client import AsyncGatewayClient, GatewayClient
from hookgate.events import get_event

ADAPTERS = Path(__file__).resolve().parents[2] / "src" / "hookgate" / "adapters"


def test_an_engine_wants_only_events_it_has_hooks_for() -> None:
    engine = Engine()
    gate = Gate(engine)
    assert not gate.wants("pre_tool_use")
    engine.hook("pre_tool_use")(lambda event: None)
    assert gate.wants("pre_tool_use")
    assert not gate.wants("post_tool_use")


def test_a_gateway_gets_every_event() -> None:
    url = f"http://127.0.0.1:{closed_port()}"
    assert Gate(AsyncGatewayClient(url, "hg_key")).wants("pre_tool_use")
    assert Gate(GatewayClient(url, "hg_key")).wants("pre_tool_use")


def test_adapters_ask_with_the_names_the_engine_files_hooks_under() -> None:
    # wants() looks the name up as given: an alias would never find the hooks (and the
    # adapter would skip an event that has some).
    names = set()
    for module in ADAPTERS.glob("*.py"):
        names |= set(re.findall(r"""wants\(\s*"([a-z_]+)"\s*\)""", module.read_text()))
    assert len(names) >= 10
    for name in names:
        assert get_event(name).name == name
