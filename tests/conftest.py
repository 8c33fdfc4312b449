"""Shared fixtures. Service-backed tests must run under CI=true: a missing service fails them."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.support.warm_bridge import private_warm_folder

IN_CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")


def require_service(name: str, available: bool, why: str) -> None:
    """Skip locally when a service is missing; fail under CI=true, where it must exist."""
    if available:
        return
    if IN_CI:
        pytest.fail(f"{name} is required under CI=true: {why}")
    pytest.skip(f"{name} not available: {why}")


@pytest.fixture(scope="session", autouse=True)
def _private_warm_folder() -> Iterator[Path]:
    """Every ``hookgate claude-code`` run of the tests uses a warm process of the test session
    (its socket in a folder of the session; stopped at the end), never the user's."""
    with private_warm_folder() as folder:
        yield folder
