"""The store contract: one protocol, implemented by the SQLite and the PostgreSQL backends.

Every read and write takes a :class:`Caller`. A tenant caller sees its own hooks plus the
global ones and changes only its own; a master caller sees and manages everything. Methods
that serve the engine itself (audit writes, breaker state, the resolver's full load) take a
:meth:`Caller.system` caller, which is master scope.

Rows come back as small frozen dataclasses with a ``to_dict()`` for API answers; nothing a
client should not see (key hashes, encrypted error details) is in those dicts.
"""

from __future__ import annotations

import hashlib
import secrets
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date
from typing import TYPE_CHECKING, Any, Final, Literal, Protocol, runtime_checkable

from hookgate.definition import GLOBAL_TENANT, HookDefinition
from hookgate.errors import BudgetError, HookgateError
from hookgate.llm.budget import BudgetStatus

if TYPE_CHECKING:
    from hookgate.secrets.keyring import Keyring
    from hookgate.store.chain import ChainHead, ChainReport

__all__ = [
    "API_KEY_PREFIX",
    "DEFAULT_BUDGET_TOKENS",
    "GLOBAL_TENANT",
    "ApiKey",
    "ApiKeyRole",
    "BreakerSnapshot",
    "BudgetExceeded",
    "Caller",
    "DispatchPage",
    "DispatchQuery",
    "DispatchRow",
    "ExecutionPage",
    "ExecutionQuery",
    "ExecutionRow",
    "Forbidden",
    "HookFilter",
    "HookChange",
    "HookRecord",
    "NotFound",
    "ReadOnlyHook",
    "SeedReport",
    "Store",
    "SYSTEM_ACTOR",
    "StoreError",
    "TenantBudget",
    "VersionConflict",
    "hash_api_key",
    "new_api_key",
]

#: A tenant's monthly token budget when none was set (seed 000).
DEFAULT_BUDGET_TOKENS: Final = 1_000_000
API_KEY_PREFIX: Final = "hg-"
ApiKeyRole = Literal["viewer", "approver", "operator", "admin"]
#: In rank order: an approver reads and decides approvals, an operator also dispatches.
API_KEY_ROLES: Final = ("viewer", "approver", "operator", "admin")
#: The actor recorded for changes hookgate makes itself (builtin seeding).
SYSTEM_ACTOR: Final = "system"


# --- errors ---------------------------------------------------------------------------------


class StoreError(HookgateError):
    """A store operation failed; the message names the problem."""


class NotFound(StoreError):
    """The row does not exist, or the caller may not see it (the two are not distinguished)."""


class Forbidden(StoreError):
    """The caller may see the row but not change it (a global hook, another tenant's key)."""


class ReadOnlyHook(Forbidden):
    """A builtin hook: only ``enabled`` can be changed, and it cannot be deleted."""


class VersionConflict(StoreError):
    """An update named an ``expected_version`` that is no longer current."""

    def __init__(self, hook_id: str, expected: int, actual: int) -> None:
        self.hook_id = hook_id
        self.expected = expected
        self.actual = actual
        super().__init__(
            f"hook {hook_id} is at version {actual}, not {expected}: reload it and retry"
        )


class BudgetExceeded(StoreError, BudgetError):
    """A deduction would take the tenant's monthly budget below zero."""


# --- scope ----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Caller:
    """Who is asking: a tenant, or master scope (which sees and manages all tenants)."""

    tenant_id: str
    master: bool = False

    @classmethod
    def for_tenant(cls, tenant_id: str) -> Caller:
        if not tenant_id:
            raise ValueError("a tenant caller needs a tenant id")
        return cls(tenant_id=tenant_id, master=False)

    @classmethod
    def master_scope(cls) -> Caller:
        return cls(tenant_id=GLOBAL_TENANT, master=True)

    @classmethod
    def system(cls) -> Caller:
        """The engine itself (audit writer, breaker board, resolver): master scope."""
        return cls(tenant_id=GLOBAL_TENANT, master=True)

    def can_see_tenant(self, tenant_id: str | None) -> bool:
        return self.master or tenant_id in (self.tenant_id, GLOBAL_TENANT)

    def can_change_tenant(self, tenant_id: str | None) -> bool:
        return self.master or tenant_id == self.tenant_id


# --- hooks ----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class BreakerSnapshot:
    """A hook's circuit-breaker state as last persisted (for the panel and other replicas)."""

    state: Literal["closed", "open", "half_open"] = "closed"
    recent_faults: int = 0
    last_fault: str | None = None
    #: Wall-clock seconds when the state last changed.
    changed_at: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "state": self.state,
            "recent_faults": self.recent_faults,
            "last_fault": self.last_fault,
            "changed_at": self.changed_at,
        }


@dataclass(frozen=True, slots=True)
class HookRecord:
    """A stored hook: its definition (tenant id is never None here) plus row bookkeeping."""

    definition: HookDefinition
    created_at: float
    updated_at: float
    breaker: BreakerSnapshot = field(default_factory=BreakerSnapshot)
    #: Who created the hook and who last changed it: an API key's name and id prefix,
    #: :data:`SYSTEM_ACTOR` for builtins, None when not recorded (rows older than schema 2).
    created_by: str | None = None
    updated_by: str | None = None

    @property
    def id(self) -> str:
        return self.definition.id

    @property
    def version(self) -> int:
        return self.definition.version

    def to_dict(self) -> dict[str, Any]:
        data = self.definition.to_dict()
        data["created_at"] = self.created_at
        data["updated_at"] = self.updated_at
        data["created_by"] = self.created_by
        data["updated_by"] = self.updated_by
        data["breaker"] = self.breaker.to_dict()
        return data


@dataclass(frozen=True, slots=True)
class HookFilter:
    """Narrow ``list_hooks``; ``None`` means any. ``tenant_id`` only narrows (never widens)."""

    event: str | None = None
    handler_type: str | None = None
    scope: str | None = None
    enabled: bool | None = None
    source: str | None = None
    name: str | None = None
    tenant_id: str | None = None
    #: Hooks that apply to this agent (global, tenant, or agent scope listing it).
    agent_id: str | None = None


@dataclass(frozen=True, slots=True)
class HookChange:
    """A committed hook change, as change listeners hear it."""

    #: The store's ``hooks_version`` after the change.
    version: int
    #: The hook that changed (created, updated, toggled or deleted); ``None``: several or
    #: unknown, so a listener reloads everything.
    hook_id: str | None


@dataclass(frozen=True, slots=True)
class SeedReport:
    created: tuple[str, ...] = ()
    updated: tuple[str, ...] = ()
    unchanged: tuple[str, ...] = ()


# --- executions -----------------------------------------------------------------------------


@dataclass(slots=True)
class ExecutionRow:
    """One ``hook_executions`` row as stored: ``error`` already redacted and truncated,
    ``error_detail`` the sealed full error (or None). Not frozen: the audit writer builds
    one per execution on the hot path, and a plain slots dataclass builds faster; treat it
    as read-only all the same."""

    id: str
    hook_id: str | None
    hook_version: int
    hook_name: str
    handler_type: str
    event: str
    event_id: str
    decision: str
    duration_ms: float
    tenant_id: str
    agent_id: str | None
    session_id: str | None
    input_hash: str
    dedup_key: str
    error: str | None
    error_detail: bytes | None
    metadata: Mapping[str, Any]
    created_at: float
    #: The event's tool; a redacted excerpt of its input; the hook's reason, redacted and
    #: truncated like ``error``.
    tool_name: str | None = None
    input_summary: str | None = None
    reason: str | None = None
    #: The hook's id as executed; kept when the hook is deleted (``hook_id`` is then None).
    hook_ref: str | None = None
    #: The dispatch this execution belongs to (``dispatch_records.id``).
    dispatch_id: str | None = None
    #: Monotonic per-store sequence assigned on insert; the pagination cursor uses it.
    seq: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "hook_id": self.hook_id,
            "hook_version": self.hook_version,
            "hook_name": self.hook_name,
            "handler_type": self.handler_type,
            "event": self.event,
            "event_id": self.event_id,
            "decision": self.decision,
            "duration_ms": self.duration_ms,
            "tenant_id": self.tenant_id,
            "agent_id": self.agent_id,
            "session_id": self.session_id,
            "input_hash": self.input_hash,
            "error": self.error,
            "has_error_detail": self.error_detail is not None,
            "metadata": dict(self.metadata),
            "tool_name": self.tool_name,
            "input_summary": self.input_summary,
            "reason": self.reason,
            "hook_ref": self.hook_ref or self.hook_id,
            "dispatch_id": self.dispatch_id,
            "created_at": self.created_at,
        }


@dataclass(frozen=True, slots=True)
class ExecutionQuery:
    """History filters. Results are newest first; pass the page's ``next_cursor`` to go on."""

    hook_id: str | None = None
    session_id: str | None = None
    decision: str | None = None
    event: str | None = None
    agent_id: str | None = None
    tool_name: str | None = None
    #: The hook's name as executed (a deleted hook's rows too).
    hook_name: str | None = None
    #: Time range on ``created_at`` (epoch seconds): ``since`` inclusive, ``until`` exclusive.
    since: float | None = None
    until: float | None = None
    #: Master scope only: narrow to one tenant.
    tenant_id: str | None = None
    limit: int = 50
    cursor: str | None = None


@dataclass(frozen=True, slots=True)
class HookRevision:
    """One change of a hook's definition: the definition after it (no identity fields,
    sealed secrets still sealed), what the change was and who made it when."""

    version: int
    #: ``created``, ``updated``, ``enabled``, ``disabled`` or ``deleted``.
    action: str
    changed_at: float
    changed_by: str | None
    definition: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class ExecutionTiming:
    """What per-hook figures need of one execution row, and nothing else."""

    hook_ref: str | None
    hook_name: str | None
    decision: str
    duration_ms: float
    created_at: float


@dataclass(frozen=True, slots=True)
class ExecutionPage:
    items: tuple[ExecutionRow, ...]
    next_cursor: str | None

    def to_dict(self) -> dict[str, Any]:
        return {"items": [row.to_dict() for row in self.items], "next_cursor": self.next_cursor}


# --- dispatch records -----------------------------------------------------------------------


@dataclass(slots=True)
class DispatchRow:
    """One ``dispatch_records`` row as stored: readable columns redacted and cut; ``detail``
    the sealed full reason and event payload (or None). Treat as read-only."""

    id: str
    tenant_id: str
    event: str
    event_id: str
    decision: str
    duration_ms: float
    created_at: float
    tool_name: str | None = None
    agent_id: str | None = None
    session_id: str | None = None
    reason: str | None = None
    #: The hooks that ran, in chain order: ``{execution_id, hook_id, hook_name, hook_version,
    #: handler_type, decision, duration_ms, reason, error}``.
    hooks: Sequence[Mapping[str, Any]] = ()
    approval_id: str | None = None
    #: ``{id, status, decided_by, decided_at, expires_at, hook, comment, input_edited}``.
    approval: Mapping[str, Any] | None = None
    #: Why the engine refused the event before any hook ran (input over the limits).
    refused: str | None = None
    input_size: int | None = None
    input_hash: str = ""
    input_summary: str | None = None
    trace_id: str | None = None
    detail: bytes | None = None
    seq: int = 0

    @property
    def matched(self) -> int:
        return len(self.hooks)

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "tenant_id": self.tenant_id,
            "event": self.event,
            "event_id": self.event_id,
            "tool_name": self.tool_name,
            "agent_id": self.agent_id,
            "session_id": self.session_id,
            "decision": self.decision,
            "reason": self.reason,
            "duration_ms": self.duration_ms,
            "matched": self.matched,
            "hooks": [dict(hook) for hook in self.hooks],
            "approval": dict(self.approval) if self.approval else None,
            "refused": self.refused,
            "input_size": self.input_size,
            "input_hash": self.input_hash,
            "input_summary": self.input_summary,
            "trace_id": self.trace_id,
            "has_detail": self.detail is not None,
            "created_at": self.created_at,
        }


@dataclass(frozen=True, slots=True)
class DispatchQuery:
    """Dispatch filters; newest first, paged by cursor. ``decision`` is ``allow``,
    ``block`` or ``ask`` (the dispatches that asked a person, whatever they decided)."""

    session_id: str | None = None
    agent_id: str | None = None
    tool_name: str | None = None
    decision: str | None = None
    event: str | None = None
    since: float | None = None
    until: float | None = None
    #: Master scope only: narrow to one tenant.
    tenant_id: str | None = None
    limit: int = 50
    cursor: str | None = None


@dataclass(frozen=True, slots=True)
class DispatchPage:
    items: tuple[DispatchRow, ...]
    next_cursor: str | None


# --- budgets --------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class TenantBudget:
    tenant_id: str
    #: First day of the budget month, ISO ``YYYY-MM-DD`` (UTC).
    month_start: str
    budget_total: int
    remaining: int
    updated_at: float

    def to_dict(self) -> dict[str, Any]:
        return {
            "tenant_id": self.tenant_id,
            "month_start": self.month_start,
            "budget_total": self.budget_total,
            "remaining": self.remaining,
            "updated_at": self.updated_at,
        }


# --- API keys -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ApiKey:
    """A gateway API key. Only its SHA-256 hash is stored; ``prefix`` helps people tell keys
    apart in a list."""

    id: str
    tenant_id: str
    role: ApiKeyRole
    master: bool
    name: str
    prefix: str
    created_at: float
    revoked_at: float | None = None

    @property
    def active(self) -> bool:
        return self.revoked_at is None

    def caller(self) -> Caller:
        return Caller(tenant_id=self.tenant_id, master=self.master)

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "tenant_id": self.tenant_id,
            "role": self.role,
            "master": self.master,
            "name": self.name,
            "prefix": self.prefix,
            "created_at": self.created_at,
            "revoked_at": self.revoked_at,
        }


def new_api_key() -> str:
    """A fresh random API key (shown to the user once; only its hash is stored)."""
    return API_KEY_PREFIX + secrets.token_urlsafe(32)


def hash_api_key(token: str) -> str:
    """The stored form of a key: SHA-256 hex (keys are random, so no salt is needed)."""
    return hashlib.sha256(token.encode()).hexdigest()


# --- the protocol ---------------------------------------------------------------------------


@runtime_checkable
class Store(Protocol):
    """The persistence contract. Both backends pass the same test suite."""

    #: ``"sqlite"`` or ``"postgres"``.
    backend: str

    # lifecycle
    async def open(self) -> None:
        """Connect (create the data directory or pool). Does not migrate."""
        ...

    async def migrate(self) -> int:
        """Apply pending migrations (idempotent, safe from two processes); the schema version."""
        ...

    async def close(self) -> None: ...

    @property
    def location(self) -> str:
        """Where the data lives, for messages (a file path, or host/database: no password)."""
        ...

    async def schema_version(self) -> int:
        """The highest migration applied (0 for an empty database)."""
        ...

    async def __aenter__(self) -> Store: ...

    async def __aexit__(self, *exc_info: object) -> None: ...

    # hooks
    async def create_hook(
        self, caller: Caller, definition: HookDefinition, *, actor: str | None = None
    ) -> HookRecord:
        """Store a validated definition. A tenant caller's hook belongs to its tenant; only
        master scope creates global hooks (stored under :data:`GLOBAL_TENANT`). Version 1,
        ``order`` from the creation sequence. ``actor`` (who asked: a key's name or id,
        never the key) is recorded as both ``created_by`` and ``updated_by``."""
        ...

    async def get_hook(self, caller: Caller, hook_id: str) -> HookRecord:
        """Raise :class:`NotFound` when missing or not visible to ``caller``."""
        ...

    async def list_hooks(
        self, caller: Caller, filters: HookFilter | None = None
    ) -> list[HookRecord]:
        """Visible hooks, ordered by event then chain order."""
        ...

    async def update_hook(
        self,
        caller: Caller,
        hook_id: str,
        patch: Mapping[str, Any],
        *,
        expected_version: int | None = None,
        edition: str = "lite",
        actor: str | None = None,
        keep_writer: bool = False,
    ) -> HookRecord:
        """Merge ``patch`` into the hook, re-validate, bump the version (atomically, so two
        concurrent updates give two versions). Identity fields (id, tenant_id, source,
        version) cannot be patched. Builtin hooks accept only ``enabled`` and ``mode``.
        ``actor`` becomes ``updated_by`` (None records that the changer is unknown).
        ``keep_writer``: the patch changes no code (a promotion), so whether a master-scope
        key wrote the hook stays as it was."""
        ...

    async def delete_hook(
        self, caller: Caller, hook_id: str, *, actor: str | None = None
    ) -> None:
        """Remove a hook (``actor`` goes in its definition history); its executions stay
        with ``hook_id`` set to NULL."""
        ...

    async def set_enabled(
        self, caller: Caller, hook_id: str, enabled: bool, *, actor: str | None = None
    ) -> HookRecord:
        """Toggle a hook (version bump) and reset its breaker state to closed; ``actor``
        becomes ``updated_by``."""
        ...

    async def save_breaker_state(
        self, caller: Caller, hook_id: str, breaker: BreakerSnapshot
    ) -> None:
        """Persist a breaker change (no version bump: the definition did not change)."""
        ...

    async def seed_builtins(self, definitions: Sequence[HookDefinition]) -> SeedReport:
        """Insert missing builtin hooks (global, source=builtin), matched by name. A builtin
        whose ``version`` (its release) is newer than the one seeded before replaces the
        definition but keeps the row's ``enabled`` toggle; the row version is bumped. Both
        record :data:`SYSTEM_ACTOR` as the actor."""
        ...

    async def hooks_version(self) -> int:
        """A counter that grows on every hook change, in any process (cache invalidation)."""
        ...

    def add_change_listener(self, callback: Callable[[HookChange], None]) -> None:
        """Call ``callback(change)`` after each committed hook change made through this
        object, and (after :meth:`watch_changes`) changes other processes made."""
        ...

    def remove_change_listener(self, callback: Callable[[HookChange], None]) -> None: ...

    def add_key_listener(self, callback: Callable[[str], None]) -> None:
        """Call ``callback(key_id)`` after an API key is revoked through this object, and
        (after :meth:`watch_changes`) by another process."""
        ...

    def remove_key_listener(self, callback: Callable[[str], None]) -> None: ...

    def add_resync_listener(self, callback: Callable[[], None]) -> None:
        """Call ``callback()`` when the channel to other processes came back after a loss:
        what they announced meanwhile was not heard, so anything may have changed."""
        ...

    def remove_resync_listener(self, callback: Callable[[], None]) -> None: ...

    async def watch_changes(self) -> None:
        """Start hearing other processes' changes: hooks, key revocations, approvals
        (PostgreSQL LISTEN, reconnected after a loss; no-op on SQLite, where resolvers poll
        :meth:`hooks_version`)."""
        ...

    # executions
    async def write_executions(self, rows: Sequence[ExecutionRow]) -> int:
        """Insert rows in one transaction; rows whose ``dedup_key`` exists are skipped.
        Returns how many were inserted."""
        ...

    async def query_executions(self, caller: Caller, query: ExecutionQuery) -> ExecutionPage:
        """History, newest first, scoped to the caller's tenant (master: all or
        ``query.tenant_id``). The cursor stays correct while rows are added."""
        ...

    async def hook_revisions(
        self, caller: Caller, hook_id: str, limit: int
    ) -> tuple[HookRevision, ...]:
        """The hook's definition history, newest first (at most ``limit``), for the caller's
        tenant only (master scope: any hook's, global ones included)."""
        ...

    async def execution_timings(
        self, caller: Caller, tenant_id: str | None, since: float, until: float, limit: int
    ) -> tuple[ExecutionTiming, ...]:
        """The newest ``limit`` rows created in ``[since, until)`` of the caller's tenant
        (master: all or ``tenant_id``), with only the columns per-hook figures need."""
        ...

    async def get_execution(self, caller: Caller, execution_id: str) -> ExecutionRow:
        """One row (with its sealed ``error_detail``); :class:`NotFound` if not visible."""
        ...

    async def prune_executions(self, caller: Caller, older_than: float) -> int:
        """Delete rows created before ``older_than`` (epoch seconds); master scope prunes all
        tenants, a tenant its own. Returns the number deleted. Rows are found along the
        insertion order: one written out of time order, behind a younger row, is kept until
        a later prune reaches it."""
        ...

    # dispatch records
    async def write_dispatches(self, rows: Sequence[DispatchRow]) -> int:
        """Insert dispatch records in one transaction (a known id is skipped); how many
        were inserted."""
        ...

    async def query_dispatches(self, caller: Caller, query: DispatchQuery) -> DispatchPage:
        """Dispatch records, newest first, scoped like :meth:`query_executions`."""
        ...

    async def get_dispatch(self, caller: Caller, dispatch_id: str) -> DispatchRow:
        """One record (with its sealed ``detail``); :class:`NotFound` if not visible."""
        ...

    async def dispatches_in_order(
        self, caller: Caller, query: DispatchQuery, after_seq: int = 0
    ) -> tuple[DispatchRow, ...]:
        """Up to ``query.limit`` records after ``after_seq``, oldest first (replay)."""
        ...

    async def count_dispatches(self, caller: Caller, query: DispatchQuery) -> int:
        """How many records the filters select."""
        ...

    async def prune_dispatches(
        self, caller: Caller, older_than: float, *, unmatched_only: bool = False
    ) -> int:
        """Delete records created before ``older_than`` (only those where no hook ran, with
        ``unmatched_only``); the number deleted. A tenant's hash chain loses whole prefixes
        (its base moves on); unmatched-only pruning keeps a deleted record's links."""
        ...

    async def chain_heads(self, caller: Caller, tenant_id: str | None = None) -> list[ChainHead]:
        """The audit hash chain's checkpoint per visible tenant (last place and hash, base)."""
        ...

    async def chain_hash_at(self, caller: Caller, tenant_id: str, chain_seq: int) -> str | None:
        """The hash a tenant's chain holds at a place (None: not there)."""
        ...

    async def verify_chain(self, caller: Caller, tenant_id: str | None = None) -> ChainReport:
        """Check each visible tenant's audit hash chain; the first break per tenant."""
        ...

    # budgets
    async def get_budget(self, caller: Caller, tenant_id: str) -> TenantBudget:
        """The tenant's budget for the current month (created with the default, or rolled
        over to a full ``budget_total`` when a new month began)."""
        ...

    async def deduct_budget(
        self, caller: Caller, tenant_id: str, tokens: int, *, allow_negative: bool = True
    ) -> TenantBudget:
        """Atomically subtract ``tokens`` (after rolling over if needed); ``remaining`` stops
        at zero, since the tokens were already spent. With ``allow_negative=False`` raise
        :class:`BudgetExceeded` instead when fewer than ``tokens`` are left."""
        ...

    async def set_budget_total(self, caller: Caller, tenant_id: str, total: int) -> TenantBudget:
        """Set the monthly total; ``remaining`` moves by the same difference."""
        ...

    async def budget_apply(
        self,
        tenant_id: str,
        op: Literal["check", "deduct", "set_total", "reserve", "settle"],
        amount: int = 0,
        *,
        today: date | None = None,
        default_total: int = DEFAULT_BUDGET_TOKENS,
        reserved: int = 0,
        reserved_month: date | None = None,
    ) -> BudgetStatus:
        """The atomic primitive behind :class:`hookgate.llm.budget.BudgetStore`
        (no caller: the engine's own accounting). Rolls over first; deductions and
        reservations stop at zero; ``settle`` replaces ``reserved`` tokens by ``amount``."""
        ...

    # API keys
    async def create_api_key(
        self,
        caller: Caller,
        *,
        tenant_id: str,
        role: ApiKeyRole,
        master: bool = False,
        name: str = "",
        token: str | None = None,
    ) -> tuple[ApiKey, str]:
        """Create a key (random unless ``token`` is given) and return it with the plaintext
        token, which is never stored. Only master scope creates master keys or keys for
        another tenant."""
        ...

    async def create_first_master_key(
        self, *, name: str, show: Callable[[str], None] | None = None
    ) -> tuple[ApiKey, str] | None:
        """A master admin key of the ``default`` tenant when the store has no key at all,
        else None. Exactly one of several processes starting at once creates it. ``show``
        gets the token before the key is committed, so no committed key goes unseen."""
        ...

    async def list_api_keys(self, caller: Caller) -> list[ApiKey]: ...

    async def verify_secret_key(self, keyring: Keyring | None) -> None:
        """Raise (a ``StoreError``) when ``keyring`` is not the key this store's sealed
        values were made with; the first process with a key records a check value."""
        ...

    async def revoke_api_key(self, caller: Caller, key_id: str) -> ApiKey: ...

    async def lookup_api_key(self, key_hash: str) -> ApiKey | None:
        """The active (not revoked) key with this hash, or None. See :func:`hash_api_key`."""
        ...
