"""The panel builds the form of a handler type it has no hand-made form for from the type's
config model, as the gateway describes it (``handlerConfigs`` in ``info``), in a real
browser against a real ``hookgate serve``."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import pytest
from tests.server.gateway_process import GatewayProcess
from tests.server.panel_support import (
    browser,
    page,
    panel_gateway,
    require_chromium,
    rest_json,
    shot,
    sign_in,
)

__all__ = ["browser", "page"]  # fixtures used here

pytestmark = [pytest.mark.browser, pytest.mark.timeout(90)]


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[GatewayProcess, str]]:
    require_chromium()  # no gateway either when the browser is missing
    gateway = panel_gateway(tmp_path_factory.mktemp("forms"), edition="lite")
    admin = gateway.create_key("acme", "admin")
    gateway.start()
    try:
        yield gateway, admin
    finally:
        gateway.stop()


def test_a_rule_hook_is_made_in_a_form_built_from_its_model(
    page: Any, served: tuple[GatewayProcess, str]
) -> None:
    """The rule type's fields come from RuleConfig; what they hold is saved as its config,
    and the gateway's config problem is shown on the form."""
    from playwright.sync_api import expect

    gateway, admin = served
    info = rest_json(gateway, "GET", "/info", admin)
    assert set(info["handlerConfigs"]["rule"]["properties"]) == {
        "limit", "after", "require", "sequence"}
    sign_in(page, gateway.url, admin)
    page.get_by_role("link", name="New hook").click()
    page.get_by_role("radio", name=re.compile(r"^rule")).check()
    limit = page.get_by_label("Limit", exact=True)
    expect(limit).to_be_visible()
    expect(page.get_by_label("Sequence", exact=True)).to_be_visible()
    page.get_by_label("Name").fill("Two reads a minute")
    page.get_by_label("Matcher").fill("^Read$")
    # Nothing given: the model's own rule comes back at the config.
    page.get_by_role("button", name="Create hook").click()
    expect(page.get_by_text("a rule needs at least one of limit")).to_be_visible()
    limit.fill(json.dumps({"count": 2, "window_s": 60}))
    shot(page, "hook-new-rule")
    page.get_by_role("button", name="Create hook").click()
    expect(page.get_by_role("heading", level=1, name="Two reads a minute")).to_be_visible()
    hooks = rest_json(gateway, "GET", "/hooks?handler_type=rule", admin)["hooks"]
    assert [hook["config"] for hook in hooks] == [{"limit": {"count": 2, "window_s": 60}}]
