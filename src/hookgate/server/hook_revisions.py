"""``hooks.revisions`` (``GET /api/v1/hooks/{hookId}/revisions``): a hook's definition
history, newest first: each change (created, updated, enabled, disabled, deleted) with the
definition after it, who made it (an API key's name and id prefix, never the key) and when.

Viewers may read the history of their tenant's hooks, deleted ones included; a global hook's
history needs master scope (it names the master keys that changed it). Sealed secrets read as
``null``, as in ``hooks.get``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from hookgate.server import schemas
from hookgate.server.auth import Principal
from hookgate.server.methods import hide_secrets
from hookgate.server.timestamps import iso

if TYPE_CHECKING:
    from hookgate.server.gateway import Gateway

__all__ = ["hooks_revisions"]


async def hooks_revisions(
    gateway: Gateway, who: Principal, p: schemas.RevisionsParams
) -> dict[str, Any]:
    revisions = await gateway.store.hook_revisions(who.caller, p.hook_id, p.limit)
    return {
        "revisions": [
            {
                "version": r.version,
                "action": r.action,
                "changed_at": iso(r.changed_at),
                "changed_by": r.changed_by,
                "definition": hide_secrets(dict(r.definition)),
            }
            for r in revisions
        ]
    }
