"""Imported only by an attack: importing it leaves a file behind (``HOOKGATE_TEST_CANARY``).

The host-code tests name ``tests.server.import_canary:anything`` in a callable hook on a
gateway that does not allow this module; the file must never appear.
"""

from __future__ import annotations

import os
from pathlib import Path

_target = os.environ.get("HOOKGATE_TEST_CANARY")
if _target:
    Path(_target).write_text("imported\n")


def check(event: object) -> None:
    """Abstains: the module is only ever allowed by the test that stores a hook naming it."""
    return None
