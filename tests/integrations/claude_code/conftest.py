"""Every ``hookgate claude-code`` run of these tests keeps its definition cache in a temporary
folder, not in the user's ``~/.cache`` (and, by the root conftest, its warm process's socket in
a folder of the test session).

``bridge_path`` runs a test twice: through the warm process (``HOOKGATE_CLAUDE_CODE_WARM=
require``: an event the warm process does not take fails instead of running in-process) and
in the event's own process (``off``), which must give the same answers."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.support.warm_bridge import stop_all


@pytest.fixture(autouse=True)
def _private_cache(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
                   ) -> Path:
    folder = tmp_path_factory.mktemp("xdg-cache")
    monkeypatch.setenv("XDG_CACHE_HOME", str(folder))
    return folder


@pytest.fixture(params=["warm", "in-process"])
def bridge_path(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("HOOKGATE_CLAUDE_CODE_WARM",
                       "require" if request.param == "warm" else "off")
    return str(request.param)


@pytest.fixture
def warm_folder(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A socket folder of this test alone (its warm processes are its own, and stopped at
    its end), with the warm process required."""
    path = Path(tempfile.mkdtemp(prefix="hgw-", dir="/tmp"))
    monkeypatch.setenv("HOOKGATE_CLAUDE_CODE_WARM_DIR", str(path))
    monkeypatch.setenv("HOOKGATE_CLAUDE_CODE_WARM", "require")
    yield path
    stop_all(path)
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture(scope="session")
def _built_relay() -> str:
    """The compiled relay, built as install builds it (once per source)."""
    from tests.support.shell_relay import built_relay

    return built_relay()


@pytest.fixture(params=["relay.bash", "relay.c"])
def relay(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str | None:
    """Each relay test twice: the commands run relay.bash alone, then the compiled relay."""
    import tests.support.shell_relay as support

    binary = None if request.param == "relay.bash" else request.getfixturevalue("_built_relay")
    monkeypatch.setattr(support, "RELAY_BINARY", binary)
    return binary
