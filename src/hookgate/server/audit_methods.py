"""``audit.verify`` (WebSocket and ``GET /api/v1/audit/verify``): check the audit hash chain.

Admins only. A tenant admin checks its own tenant's chain; master scope checks every tenant's,
or one named with ``tenantId``. The answer is what ``hookgate audit verify --format json``
prints: ``intact``, the records checked, and per tenant its head, the hook rows its records
cover and the first break (place, record, ``altered``/``removed``/``reordered`` and why: a
record, or one of its hook rows, named).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field

from hookgate.server.auth import Principal
from hookgate.server.methods import _tenant_filter

if TYPE_CHECKING:
    from hookgate.server.gateway import Gateway

__all__ = ["AuditVerifyParams", "AuditVerifyPayload", "audit_verify"]


class AuditVerifyParams(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)
    #: Master scope only: check one tenant's chain.
    tenant_id: str | None = Field(default=None, alias="tenantId", max_length=200)


class ChainVerdict(BaseModel):
    model_config = ConfigDict(extra="allow")
    tenant_id: str
    intact: bool
    records: int
    unchained: int
    #: Hook rows checked: those of records written since schema 17 (each record covers its own).
    hook_rows: int = 0
    #: Hook rows naming a record that does not list them (written after it): not checked.
    unlisted_hook_rows: int = 0
    #: ``{tenant_id, seq, hash, base_seq, base_hash}``.
    head: dict[str, Any] | None
    #: ``{chain_seq, record_id, kind, why}``: the first place that does not hold.
    problem: dict[str, Any] | None


class AuditVerifyPayload(BaseModel):
    intact: bool
    records: int
    elapsed_s: float
    tenants: list[ChainVerdict]


async def audit_verify(gateway: Gateway, who: Principal, p: AuditVerifyParams) -> dict[str, Any]:
    report = await gateway.store.verify_chain(who.caller, _tenant_filter(who, p.tenant_id))
    return report.to_dict()
