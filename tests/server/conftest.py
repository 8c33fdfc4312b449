"""Gateway fixtures: real ``hookgate serve`` processes, shared per module where possible."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from tests.server.gateway_process import GatewayProcess

from hookgate.client import GatewayClient

# The shared gateways let tenant admins use the test suite's callable hooks; the host-code
# boundary itself is tested on gateways without --tenant-host-code (test_host_code.py).
ALLOW_TEST_HOOKS = ("--allow-callable", "tests.server.hookfns", "--tenant-host-code")


@dataclass
class Keys:
    """Keys of the shared gateway: tenant A at every role, an admin of tenant B."""

    master: str
    a_viewer: str
    a_operator: str
    a_admin: str
    b_admin: str


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayProcess]:
    data_dir = tmp_path_factory.mktemp("gw") / "data"
    served = GatewayProcess(data_dir, args=ALLOW_TEST_HOOKS).start()
    try:
        yield served
    finally:
        served.stop()


@pytest.fixture(scope="module")
def keys(gateway: GatewayProcess) -> Keys:
    assert gateway.master_key is not None
    return Keys(
        master=gateway.master_key,
        a_viewer=gateway.create_key("tenant-a", "viewer"),
        a_operator=gateway.create_key("tenant-a", "operator"),
        a_admin=gateway.create_key("tenant-a", "admin"),
        b_admin=gateway.create_key("tenant-b", "admin"),
    )


def start_gateway(tmp_path: Path, *args: str, **env: str) -> GatewayProcess:
    return GatewayProcess(tmp_path / "data", args=(*ALLOW_TEST_HOOKS, *args), env=env).start()


@contextmanager
def gateway_with_hooks(
    base: Path, tenant: str, *hooks: dict[str, Any]
) -> Iterator[tuple[GatewayProcess, str]]:
    """A gateway in which the master created ``hooks``, and an operator key of ``tenant``."""
    served = start_gateway(base)
    try:
        assert served.master_key is not None
        with GatewayClient(served.url, served.master_key) as admin:
            for hook in hooks:
                admin.create_hook(hook)
        yield served, served.create_key(tenant, "operator")
    finally:
        served.stop()


def history_rows(served: GatewayProcess, key: str, session: str) -> list[dict[str, Any]]:
    """The session's execution rows, once the (asynchronous) audit has committed any."""
    with GatewayClient(served.url, key) as client:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            rows = client.history(sessionId=session)["executions"]
            if rows:
                return list(rows)
            time.sleep(0.05)
    return []
