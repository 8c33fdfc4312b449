"""Which hooks call out of the process: their replies are recorded for replay."""

from __future__ import annotations

from typing import Final

__all__ = ["OUTCALL_TYPES"]

#: Handler types whose hooks reach the network, start programs or call models; a live
#: dispatch keeps their replies (sealed) and replay answers for them from those.
OUTCALL_TYPES: Final = frozenset({"http", "prompt", "agent", "command", "process", "quality_gate"})
