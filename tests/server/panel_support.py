"""Helpers for the web panel's browser tests: Debian's Chromium and a gateway for the panel.

:func:`find_chromium` locates the system Chromium (``scripts/ensure-chromium`` installs it);
Playwright drives it and never downloads a browser of its own. :func:`panel_gateway` is the
gateway tests' :class:`GatewayProcess` configured for the panel: the loopback webhook allowed,
a fixed secret key so sealed values can be opened, and ``sync`` audit so a dispatch answers
only once its history row is committed.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

from tests.server.gateway_process import REPO, GatewayProcess

SCREENSHOTS = REPO / "artifacts" / "screenshots"
DOC_SCREENSHOTS = REPO / "docs" / "screenshots"
#: Chromium flags for a headless run on a loopback-only machine.
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
#: A test-only AES-256 key (base64 of 32 bytes).
TEST_SECRET_KEY = "aG9va2dhdGUtcGFuZWwtdGVzdHMtb25seS0zMi1ieXQ="


def find_chromium() -> str | None:
    for candidate in (os.environ.get("HOOKGATE_CHROMIUM"), "/usr/bin/chromium"):
        if candidate and Path(candidate).exists():
            return candidate
    return shutil.which("chromium") or shutil.which("chromium-browser")


def panel_gateway(data_dir: Path, *, edition: str = "lite") -> GatewayProcess:
    return GatewayProcess(
        data_dir,
        args=("--edition", edition, "--audit-mode", "sync"),
        env={"HOOKGATE_SSRF_ALLOWLIST": "127.0.0.1", "HOOKGATE_SECRET_KEY": TEST_SECRET_KEY},
    )


def rest_json(gateway: GatewayProcess, method: str, path: str, key: str, **kwargs: Any) -> Any:
    """Call the REST mirror under ``/api/v1``; any error status fails the test with its body."""
    response = gateway.rest(method, "/api/v1" + path, key, **kwargs)
    if response.status_code >= 400:
        raise AssertionError(f"{method} {path} -> {response.status_code}: {response.text}")
    return response.json()
