"""The mcp-proxy tests need the MCP SDK (the ``mcp`` extra); under CI=true it must be there."""

from __future__ import annotations

import pytest
from tests.conftest import require_service
from tests.mcp_proxy.proxy_support import HAVE_MCP


@pytest.fixture(autouse=True)
def _mcp_sdk() -> None:
    require_service("mcp", HAVE_MCP, "the MCP SDK is missing: pip install 'hookgate[mcp]'")
