"""Shared fixtures. Service-backed tests must run under CI=true: a missing service fails them."""

from __future__ import annotations

import os

import pytest

IN_CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")


def require_service(name: str, available: bool, why: str) -> None:
    """Skip locally when a service is missing; fail under CI=true, where it must exist."""
    if available:
        return
    if IN_CI:
        pytest.fail(f"{name} is required under CI=true: {why}")
    pytest.skip(f"{name} not available: {why}")
