"""Helpers for the web panel's browser tests: Debian's Chromium and a gateway for the panel.

:func:`find_chromium` locates the system Chromium (``scripts/ensure-chromium`` installs it);
Playwright drives it and never downloads a browser of its own. :func:`panel_gateway` is the
gateway tests' :class:`GatewayProcess` configured for the panel: the loopback webhook allowed,
a fixed secret key so sealed values can be opened, and ``sync`` audit so a dispatch answers
only once its history row is committed.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import shutil
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
from tests.conftest import require_service
from tests.server.gateway_process import REPO, GatewayProcess

SCREENSHOTS = REPO / "artifacts" / "screenshots"
LAPTOP = {"width": 1280, "height": 860}
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
#: Screens copied into docs/screenshots/ (with HOOKGATE_DOC_SCREENSHOTS=1) for the docs.
DOC_SHOTS = {
    "hooks-list", "hook-form-errors", "test-panel-diff", "history", "phone-hooks-list", "audit",
    "events-simulation", "approvals", "keys", "import-report", "tenant-picker", "ssrf-warning",
}
#: A test-only AES-256 key (base64 of 32 bytes).
TEST_SECRET_KEY = "aG9va2dhdGUtcGFuZWwtdGVzdHMtb25seS0zMi1ieXQ="


def find_chromium() -> str | None:
    for candidate in (os.environ.get("HOOKGATE_CHROMIUM"), "/usr/bin/chromium"):
        if candidate and Path(candidate).exists():
            return candidate
    return shutil.which("chromium") or shutil.which("chromium-browser")


def require_chromium() -> str:
    """Debian's Chromium and the Playwright driver, or fail (CI) / skip (elsewhere)."""
    path = find_chromium()
    require_service(
        "Chromium",
        path is not None,
        "install Debian's chromium (scripts/ensure-chromium does it as root)",
    )
    require_service(
        "Chromium",
        importlib.util.find_spec("playwright") is not None,
        "the playwright driver is missing: pip install -e '.[dev]'",
    )
    assert path is not None
    return path


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    executable = require_chromium()
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        instance = pw.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS)
        yield instance
        instance.close()


@pytest.fixture()
def page(browser: Any) -> Iterator[Any]:
    """A laptop-sized tab; any JavaScript error in the panel fails the test."""
    context = browser.new_context(viewport=LAPTOP)
    tab = context.new_page()
    errors: list[str] = []
    tab.on("pageerror", lambda exc: errors.append(str(exc)))
    yield tab
    context.close()
    assert not errors, f"JavaScript errors in the panel: {errors}"


def shot(page: Any, name: str) -> None:
    """Save a screenshot to ``artifacts/screenshots/`` (and to the docs when asked)."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    target = SCREENSHOTS / f"{name}.png"
    page.screenshot(path=str(target), full_page=True)
    if os.environ.get("HOOKGATE_DOC_SCREENSHOTS") == "1" and name in DOC_SHOTS:
        DOC_SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        shutil.copy(target, DOC_SCREENSHOTS / target.name)


def sign_in(page: Any, url: str, key: str) -> None:
    """Sign in with ``key`` and wait for the Hooks list."""
    from playwright.sync_api import expect

    page.goto(url + "/")
    page.get_by_label("API key").fill(key)
    page.get_by_role("button", name="Sign in").click()
    expect(page.get_by_role("heading", level=1, name="Hooks")).to_be_visible()


def panel_gateway(data_dir: Path, *, edition: str = "lite") -> GatewayProcess:
    return GatewayProcess(
        data_dir,
        args=("--edition", edition, "--audit-mode", "sync"),
        env={"HOOKGATE_SSRF_ALLOWLIST": "127.0.0.1", "HOOKGATE_SECRET_KEY": TEST_SECRET_KEY},
    )


@contextlib.contextmanager
def running_panel_gateway(
    data_dir: Path,
    roles: Mapping[str, str],
    *,
    master: str | None = None,
    callables: bool = False,
) -> Iterator[tuple[GatewayProcess, dict[str, str]]]:
    """A started panel gateway with one key of tenant ``acme`` per name in ``roles``
    (``name -> role``; the one named ``master`` has master scope), stopped on exit.
    ``callables`` allows the ``tests.server.hookfns`` functions as callable hooks."""
    require_chromium()
    served = panel_gateway(data_dir)
    if callables:
        served.args = (*served.args, "--allow-callable", "tests.server.hookfns")
    keys = {
        name: served.create_key("acme", role, master=name == master)
        for name, role in roles.items()
    }
    served.start()
    try:
        yield served, keys
    finally:
        served.stop()


def add_callable_hook(
    served: GatewayProcess, key: str, name: str, fn: str, matcher: str, **extra: Any
) -> str:
    """Create a tenant ``pre_tool_use`` hook calling ``tests.server.hookfns:<fn>``; its id."""
    return str(rest_json(served, "POST", "/hooks", key, json={
        "event": "pre_tool_use", "handler_type": "callable", "scope": "tenant",
        "tenant_id": "acme", "name": name, "matcher": matcher,
        "config": {"callable": f"tests.server.hookfns:{fn}"}, **extra,
    })["hookId"])


def dispatch_tool(
    served: GatewayProcess, key: str, tool: str, session: str, **input_fields: Any
) -> Any:
    """Dispatch ``pre_tool_use`` of ``tool`` in ``session`` (empty input unless given)."""
    event_input = {"tool_name": tool, "session_id": session, "tool_input": {}, **input_fields}
    return rest_json(served, "POST", "/dispatch", key,
                     json={"event": "pre_tool_use", "input": event_input})


def rest_json(gateway: GatewayProcess, method: str, path: str, key: str, **kwargs: Any) -> Any:
    """Call the REST mirror under ``/api/v1``; any error status fails the test with its body."""
    response = gateway.rest(method, "/api/v1" + path, key, **kwargs)
    if response.status_code >= 400:
        raise AssertionError(f"{method} {path} -> {response.status_code}: {response.text}")
    return response.json()
