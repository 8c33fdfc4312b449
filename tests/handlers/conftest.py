"""Fixtures every handler test shares: an engine that may reach servers on loopback, a
scripted model server whose key is in the environment, a budget store, and no SSRF
allowlist leaking in from the runner's environment."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import pytest
from tests.support.llm_server import ScriptedLLM

from hookgate import Engine, Settings
from hookgate.handlers.base import Services
from hookgate.llm.budget import MemoryBudgetStore

#: Settings whose SSRF allowlist admits the loopback test servers (and nothing else).
LOOPBACK = Settings(ssrf_allowlist=("127.0.0.1/32",))
#: The environment variable model hooks name in ``api_key_env``; ``llm`` sets it.
KEY_ENV = "HOOKGATE_TEST_LLM_KEY"
LLM_KEY = "test-key-123"


@pytest.fixture(autouse=True)
def no_ambient_allowlist(monkeypatch: pytest.MonkeyPatch) -> None:
    """Refusal tests must not depend on an allowlist in the runner's environment."""
    monkeypatch.delenv("HOOKGATE_SSRF_ALLOWLIST", raising=False)


@pytest.fixture
def llm(monkeypatch: pytest.MonkeyPatch) -> Iterator[ScriptedLLM]:
    """A scripted OpenAI/Anthropic server on loopback that accepts only ``LLM_KEY``."""
    monkeypatch.setenv(KEY_ENV, LLM_KEY)
    with ScriptedLLM(api_key=LLM_KEY) as server:
        yield server


@pytest.fixture
def budget() -> MemoryBudgetStore:
    return MemoryBudgetStore()


@pytest.fixture
async def engine(budget: MemoryBudgetStore) -> AsyncIterator[Engine]:
    """An engine on ``LOOPBACK`` settings whose model hooks meter against ``budget``."""
    engine = Engine(settings=LOOPBACK, services=Services(LOOPBACK, budget_store=budget))
    yield engine
    await engine.aclose()
