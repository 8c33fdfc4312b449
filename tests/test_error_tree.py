"""One root for every exception a user may catch: ``except hookgate.HookgateError``."""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import hookgate
from hookgate.llm.budget import BudgetExhausted
from hookgate.store import BudgetExceeded

# Private control-flow signals never leave their module.
PRIVATE_PREFIX = "_"
#: Not errors: control flow that must pass every ``except Exception`` (hence BaseException),
#: each caught by its own code only. A new one is listed here on purpose.
UNWINDERS = {
    "hookgate.integrations.claude_code.in_place.NeedsFork",  # the event goes to a fork
    "hookgate.replay.own_thread.Abandoned",  # a replay thread its caller gave up on
}


def _all_modules() -> list[str]:
    found = pkgutil.walk_packages(hookgate.__path__, "hookgate.")
    return [info.name for info in found if not info.name.endswith("__main__")]  # runs the CLI


def test_every_public_exception_in_hookgate_derives_from_hookgate_error() -> None:
    strays: list[str] = []
    seen = 0
    for name in _all_modules():
        module = importlib.import_module(name)
        for attr, obj in vars(module).items():
            if not (inspect.isclass(obj) and issubclass(obj, BaseException)):
                continue
            if obj.__module__ != name or attr.startswith(PRIVATE_PREFIX):
                continue
            seen += 1
            if f"{name}.{attr}" in UNWINDERS:
                continue
            if not issubclass(obj, hookgate.HookgateError):
                strays.append(f"{name}.{attr}")
    assert seen > 20  # the walk really found the package's errors
    assert not strays, f"exceptions outside the HookgateError tree: {strays}"


def test_both_budget_errors_share_one_name() -> None:
    assert issubclass(BudgetExhausted, hookgate.BudgetError)
    assert issubclass(BudgetExceeded, hookgate.BudgetError)


def test_builtin_bases_are_kept_for_existing_handlers() -> None:
    assert issubclass(hookgate.DefinitionError, ValueError)
    assert issubclass(hookgate.UnknownEventError, ValueError)


def test_the_unwinders_are_base_exceptions_only() -> None:
    """What the error-tree rule lets through is control flow, not an error a caller catches."""
    for dotted in UNWINDERS:
        module, _, attr = dotted.rpartition(".")
        unwinder = getattr(importlib.import_module(module), attr)
        assert issubclass(unwinder, BaseException) and not issubclass(unwinder, Exception)
