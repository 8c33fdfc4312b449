"""Engine and server settings, with their environment-variable equivalents."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Final, Literal

from hookgate.sandbox import Sandbox, resolve_sandbox

__all__ = [
    "EDITIONS",
    "LITE",
    "STANDARD",
    "UNMATCHED_SAMPLE_ENV",
    "Edition",
    "Settings",
    "unmatched_sample",
]

Edition = Literal["lite", "standard"]
LITE: Final = "lite"
#: The edition that runs no program of a hook author's on the host (see
#: :mod:`hookgate.host_code`).
STANDARD: Final = "standard"
EDITIONS: Final = (LITE, STANDARD)
UNMATCHED_SAMPLE_ENV: Final = "HOOKGATE_AUDIT_UNMATCHED_SAMPLE"


def unmatched_sample(text: str) -> float:
    """A sampling rate for records of dispatches no hook matched: a number from 0 to 1."""
    try:
        rate = float(text)
    except ValueError:
        raise ValueError(f"{UNMATCHED_SAMPLE_ENV}: a number from 0 to 1, not {text!r}") from None
    if not 0.0 <= rate <= 1.0:
        raise ValueError(f"{UNMATCHED_SAMPLE_ENV}: a number from 0 to 1, not {rate:g}")
    return rate


@dataclass(slots=True)
class Settings:
    """Knobs shared by the engine, the handlers and the gateway.

    ``edition``: ``lite`` allows every handler; ``standard`` refuses every hook that runs code
    on the host (see :mod:`hookgate.host_code`) when it is defined and again when it runs.
    ``ssrf_allowlist``: CIDRs and host names outbound hook URLs may reach although private.
    """

    edition: Edition = "lite"
    chain_budget_s: float = 10.0
    max_depth: int = 3
    background_queue_size: int = 1000
    background_workers: int = 4
    breaker_threshold: int = 5
    breaker_window_s: float = 60.0
    breaker_cooldown_s: float = 30.0
    ssrf_allowlist: tuple[str, ...] = ()
    #: Module prefixes ``callable`` hooks named by a string may import (``None``: any; the
    #: gateway sets its ``--allow-callable`` list, checked before any import).
    callable_modules: tuple[str, ...] | None = None
    #: Run every plain-function ``callable`` hook on a worker thread with a hard deadline,
    #: whatever its ``isolate`` says (see :mod:`hookgate.handlers.callable`). The gateway
    #: sets it: its event loop must keep serving every tenant while one tenant's hook runs.
    isolate_callables: bool = False
    #: Worker threads that may be stuck in isolated functions past their timeout, in all and
    #: for the events of one tenant (see :mod:`hookgate.execution.workers`).
    hook_threads_max_stuck: int = 64
    hook_threads_max_stuck_per_tenant: int = 8
    #: ``off``, ``auto`` or ``bwrap``: run hook programs under bubblewrap (see
    #: :mod:`hookgate.sandbox`); ``sandbox_hidden``: paths they must not see.
    hook_sandbox: str = "off"
    sandbox_hidden: tuple[str, ...] = ()
    #: Share of the dispatches no hook matched whose record the audit sink keeps (0 to 1;
    #: ``HOOKGATE_AUDIT_UNMATCHED_SAMPLE``). Dispatches where a hook ran are always kept.
    audit_unmatched_sample: float = 1.0
    extra: dict[str, str] = field(default_factory=dict)

    def sandbox(self) -> Sandbox:
        """The sandbox hook programs run in (cached per mode and hidden paths)."""
        return resolve_sandbox(self.hook_sandbox, self.sandbox_hidden)

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None, **overrides: object) -> Settings:
        env = os.environ if environ is None else environ
        settings = cls()
        edition = env.get("HOOKGATE_EDITION")
        if edition in EDITIONS:
            settings.edition = edition  # type: ignore[assignment]
        allow = env.get("HOOKGATE_SSRF_ALLOWLIST", "")
        settings.ssrf_allowlist = tuple(p.strip() for p in allow.split(",") if p.strip())
        sample = env.get(UNMATCHED_SAMPLE_ENV, "").strip()
        if sample:
            settings.audit_unmatched_sample = unmatched_sample(sample)
        for key, value in overrides.items():
            setattr(settings, key, value)
        return settings
