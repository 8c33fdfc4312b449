"""The root of every exception hookgate raises that a user may catch.

``except hookgate.HookgateError`` catches them all; each module's own error keeps its builtin
base too (``DefinitionError`` is still a ``ValueError``), so existing handlers keep working.
"""

from __future__ import annotations

__all__ = ["BudgetError", "EngineClosed", "HookgateError"]


class HookgateError(Exception):
    """Base class of hookgate's exceptions."""


class BudgetError(HookgateError):
    """A tenant's monthly token budget cannot cover a model call (the library's in-memory
    budget and the gateway's stored one raise subclasses of this one name)."""


class EngineClosed(HookgateError, RuntimeError):
    """An engine was asked to fire after :meth:`~hookgate.Engine.aclose` or ``close``: its
    workers and handlers are gone, and running hooks again would start processes and threads
    nothing would ever stop."""
