"""``hooks.figures`` (``GET /api/v1/hooks/figures``): per-hook figures for the hooks list.

Computed from the audit's execution rows of the caller's tenant (master scope: every tenant,
or ``tenantId``) over a window: fires, blocks and block rate, would-blocks (a shadow hook's
rows that say what it would have blocked), the 95th percentile of the
duration, the last time the hook fired. The gateway reads at most :data:`MAX_ROWS` rows (the
newest) so the work is bounded whatever the volume; ``sampled`` says when it stopped there.
A viewer may read them, like the history they summarize.
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final

from hookgate.server import schemas
from hookgate.server.auth import Principal
from hookgate.server.errors import ApiError
from hookgate.server.methods import _tenant_filter
from hookgate.server.timestamps import iso
from hookgate.store import ExecutionTiming, StoreError

if TYPE_CHECKING:
    from hookgate.server.gateway import Gateway

__all__ = ["MAX_ROWS", "WINDOWS", "hook_figures", "hooks_figures"]

#: The most execution rows one call reads.
MAX_ROWS: Final = 50_000
WINDOWS: Final = {"1h": 3600.0, "24h": 86_400.0, "7d": 7 * 86_400.0, "30d": 30 * 86_400.0}


@dataclass(slots=True)
class _Tally:
    hook_name: str | None
    durations: list[float] = field(default_factory=list)
    blocks: int = 0
    would_blocks: int = 0
    last_fired: float = 0.0


def _p95(durations: list[float]) -> float:
    """Nearest-rank 95th percentile."""
    ordered = sorted(durations)
    return ordered[max(0, math.ceil(0.95 * len(ordered)) - 1)]


def hook_figures(rows: Iterable[ExecutionTiming]) -> list[dict[str, Any]]:
    """One entry per hook (by the id it executed with), most fires first."""
    tallies: dict[str, _Tally] = {}
    for row in rows:
        key = row.hook_ref or f"name:{row.hook_name}"
        tally = tallies.setdefault(key, _Tally(row.hook_name))
        tally.durations.append(row.duration_ms)
        tally.blocks += row.decision == "block"
        tally.would_blocks += row.decision == "would_block"
        tally.last_fired = max(tally.last_fired, row.created_at)
    ranked = sorted(tallies.items(), key=lambda kv: (-len(kv[1].durations), kv[1].hook_name or ""))
    return [
        {
            "hook_id": None if key.startswith("name:") else key,
            "hook_name": tally.hook_name,
            "fires": len(tally.durations),
            "blocks": tally.blocks,
            "block_rate": tally.blocks / len(tally.durations),
            "would_blocks": tally.would_blocks,
            "p95_ms": _p95(tally.durations),
            "last_fired": iso(tally.last_fired),
        }
        for key, tally in ranked
    ]


async def hooks_figures(
    gateway: Gateway, who: Principal, p: schemas.FiguresParams
) -> dict[str, Any]:
    tenant_id = _tenant_filter(who, p.tenant_id)
    until = time.time()
    since = until - WINDOWS[p.window]
    try:
        rows = await gateway.store.execution_timings(
            who.caller, tenant_id, since, until, MAX_ROWS + 1
        )
    except StoreError as exc:
        raise ApiError("INTERNAL", f"figures: {exc}") from None
    return {
        "window": p.window,
        "since": iso(since),
        "until": iso(until),
        "rows": min(len(rows), MAX_ROWS),
        "sampled": len(rows) > MAX_ROWS,
        "hooks": hook_figures(rows[:MAX_ROWS]),
    }
