"""The shutdown after the drain: every step bounded, a hung one named and passed over."""

from __future__ import annotations

import asyncio
import logging

import pytest

from hookgate.server import gateway as gateway_module


async def test_a_hung_close_step_is_named_and_the_shutdown_goes_on(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(gateway_module, "CLOSE_STEP_TIMEOUT_S", 0.2)
    done: list[str] = []

    async def hangs() -> None:
        await asyncio.Event().wait()  # e.g. a pool waiting for a connection never released

    async def closes() -> None:
        done.append("audit log")

    with caplog.at_level(logging.INFO, logger="hookgate"):
        await gateway_module._bounded_step("store", hangs)
        await gateway_module._bounded_step("audit log", closes)
    assert done == ["audit log"]
    timeouts = [r for r in caplog.records
                if getattr(r, "event_key", "") == "hookgate.gateway.close_step_timeout"]
    assert [r.fields["step"] for r in timeouts] == ["store"]  # type: ignore[attr-defined]


async def test_a_failing_close_step_still_raises() -> None:
    """Only a hang is passed over; an error is the caller's to see."""

    async def fails() -> None:
        raise RuntimeError("cannot flush")

    with pytest.raises(RuntimeError, match="cannot flush"):
        await gateway_module._bounded_step("audit log", fails)
